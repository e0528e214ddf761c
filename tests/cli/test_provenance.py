"""Results tied to their problems (docs/formats.md "Provenance"), end to end with the atf binary
and h5py: every problem file carries a content fingerprint and provenance attributes, every
result its problem's fingerprint and the solver settings; predict, kernel and solve --warm
refuse a result of another problem (exit 2, both files named); files of earlier versions (the
attributes stripped with h5py) still load, with a one-line note saying what cannot be checked.

No xxhash module is assumed: the fingerprint itself is computed only by atf; the tests check
its form, its stability (write/read, rewrites with other HDF5 storage, repeated runs), its
sensitivity and what the commands do with it."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

ATF = os.environ.get("ATF", "build/drivers/atf")
PROBLEM_PROVENANCE = ["fingerprint", "atf_version", "blas", "command", "data_source", "data_seed",
                      "standardize", "mlp_fingerprint"]
RESULT_PROVENANCE = ["problem_fingerprint", "loss", "tol", "eps_abs", "max_iter", "rho", "alpha",
                     "reduce", "adaptive_rho", "atf_version", "blas", "command", "penalty_override"]
# the BLAS atf is built with (meson.build: OpenBLAS) names itself, with the kernel it chose
BLAS = re.compile(r"^OpenBLAS \d+\.\d+\.\d+ .*\S")
HEX32 = re.compile(r"^[0-9a-f]{32}$")


def run(*args, expect=0):
    p = subprocess.run([ATF, *map(str, args)], capture_output=True, text=True, timeout=120)
    if expect is not None and p.returncode != expect:
        raise AssertionError(f"atf {' '.join(map(str, args))}: exit {p.returncode} "
                             f"(expected {expect})\n{p.stdout}{p.stderr}")
    return p


def attrs(path):
    with h5py.File(path, "r") as f:
        return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}


def copy_with_storage(src, dst, **kwargs):
    """Rewrite every dataset and attribute of src into dst with other HDF5 storage options
    (chunked, compressed): the same content in a different file."""
    with h5py.File(src, "r") as a, h5py.File(dst, "w") as b:
        def copy(ga, gb):
            for k, v in ga.attrs.items():
                gb.attrs[k] = v
            for k, item in ga.items():
                if isinstance(item, h5py.Group):
                    copy(item, gb.create_group(k))
                else:
                    data = item[()]
                    opts = kwargs if data.ndim > 0 and data.size > 1 else {}
                    gb.create_dataset(k, data=data, **opts)
        copy(a, b)


def strip_attrs(path, names):
    with h5py.File(path, "r+") as f:
        for n in names:
            if n in f.attrs:
                del f.attrs[n]


class Provenance(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="atf_provenance_")
        cls.p = cls.path("p.h5")
        cls.mlp = cls.path("mlp.h5")
        cls.feat = ["features", "--data", "synthetic:d=5,r=2", "--n-train", "20", "--n-test",
                    "16", "--widths", "5,8,8,1", "--data-seed", "3"]
        run(*cls.feat, "-o", cls.p, "--save-mlp", cls.mlp)
        cls.r = cls.path("r.h5")
        run("solve", cls.p, "-o", cls.r, "--quiet", "--tol", "1e-7", "--max-iter", "3000")
        # another data draw of the same architecture: same block shapes, other content
        cls.q = cls.path("q.h5")
        run("features", "--data", "synthetic:d=5,r=2", "--n-train", "20", "--n-test", "16",
            "--widths", "5,8,8,1", "--data-seed", "4", "--mlp", cls.mlp, "-o", cls.q)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def path(cls, name):
        return os.path.join(cls.dir, name)

    def test_problem_attributes(self):
        a = attrs(self.p)
        for k in PROBLEM_PROVENANCE:
            self.assertIn(k, a)
        self.assertRegex(a["fingerprint"], HEX32)
        self.assertRegex(a["mlp_fingerprint"], HEX32)
        version = run("--version").stdout.split()[-1]
        self.assertEqual(a["atf_version"], version)
        self.assertRegex(a["blas"], BLAS)
        self.assertTrue(a["command"].startswith("atf features --data synthetic:d=5,r=2"),
                        a["command"])
        self.assertIn("--data-seed 3", a["command"])
        self.assertEqual(a["data_source"], "synthetic:d=5,r=2")
        self.assertEqual(int(a["data_seed"]), 3)
        self.assertEqual(int(a["standardize"]), 0)

    def test_result_attributes(self):
        a = attrs(self.r)
        for k in RESULT_PROVENANCE[:-1]:  # no --penalty given: no penalty_override
            self.assertIn(k, a)
        self.assertNotIn("penalty_override", a)
        self.assertEqual(a["problem_fingerprint"], attrs(self.p)["fingerprint"])
        self.assertEqual(a["blas"], attrs(self.p)["blas"])  # one machine, one kernel
        self.assertEqual(a["loss"], "interpolate")
        self.assertEqual(float(a["tol"]), 1e-7)
        self.assertEqual(int(a["max_iter"]), 3000)
        self.assertIn("--tol 1e-7", a["command"])
        r2 = self.path("r_pen.h5")
        run("solve", self.p, "-o", r2, "--quiet", "--penalty", "pow:p=1.5,scale=0.5",
            "--structure", "diagonal", "--method", "admm")
        b = attrs(r2)
        self.assertEqual(b["penalty_override"], "pow:p=1.5,scale=0.5")
        self.assertEqual(b["structure"], "diagonal")
        # the penalty and structure overrides are settings: the problem is the same
        self.assertEqual(b["problem_fingerprint"], attrs(self.p)["fingerprint"])
        base = self.path("r_base.h5")
        run("baseline", self.p, "-o", base, "--quiet")
        c = attrs(base)
        self.assertEqual(c["problem_fingerprint"], attrs(self.p)["fingerprint"])
        self.assertEqual(c["method"], "baseline")
        self.assertNotIn("--method", c["command"])  # what the user typed

    def test_stable_and_deterministic(self):
        fp = attrs(self.p)["fingerprint"]
        again = self.path("again.h5")
        run(*self.feat, "-o", again)
        self.assertEqual(attrs(again)["fingerprint"], fp)
        # the saved network gives the same network fingerprint and the same problem
        via_mlp = self.path("via_mlp.h5")
        run(*self.feat, "--mlp", self.mlp, "-o", via_mlp)
        self.assertEqual(attrs(via_mlp)["fingerprint"], fp)
        self.assertEqual(attrs(via_mlp)["mlp_fingerprint"], attrs(self.p)["mlp_fingerprint"])
        # another draw differs, the network does not
        self.assertNotEqual(attrs(self.q)["fingerprint"], fp)
        self.assertEqual(attrs(self.q)["mlp_fingerprint"], attrs(self.p)["mlp_fingerprint"])
        # a copy with other storage (chunked, gzip) has the same content and fingerprint:
        # its result records the fingerprint the original stores, and they pair
        copy = self.path("copy.h5")
        copy_with_storage(self.p, copy, chunks=True, compression="gzip", shuffle=True)
        rc = self.path("r_copy.h5")
        p = run("solve", copy, "-o", rc, "--quiet")
        self.assertEqual(p.stderr, "")
        self.assertEqual(attrs(rc)["problem_fingerprint"], fp)
        run("predict", self.p, rc)
        run("predict", copy, self.r)

    def test_mismatch_refused(self):
        k = self.path("k.h5")
        for args in (["predict", self.q, self.r], ["kernel", self.q, self.r, "-o", k],
                     ["solve", self.q, "--warm", self.r, "-o", self.path("w.h5"), "--quiet"]):
            p = run(*args, expect=2)
            line = p.stderr.strip()
            self.assertEqual(len(line.splitlines()), 1, line)
            self.assertIn(self.q, line)
            self.assertIn(self.r, line)
            self.assertIn("problem_fingerprint", line)
        self.assertFalse(os.path.exists(k))
        self.assertFalse(os.path.exists(self.path("w.h5")))
        # the matching pair works
        run("predict", self.p, self.r)
        run("kernel", self.p, self.r, "-o", k)
        run("solve", self.p, "--warm", self.r, "-o", self.path("w.h5"), "--quiet")

    def test_swapped_test_split_refused(self):
        """The issue's case: a problem whose test rows are the result's training rows."""
        swapped = self.path("swapped.h5")
        shutil.copy(self.p, swapped)
        with h5py.File(swapped, "r+") as f:
            f["test/y"][0, 0] = f["test/y"][0, 0] + 1.0
        p = run("predict", swapped, self.r, expect=2)
        self.assertIn("another problem", p.stderr)

    def test_old_files_still_load(self):
        old_p, old_r = self.path("old_p.h5"), self.path("old_r.h5")
        shutil.copy(self.p, old_p)
        shutil.copy(self.r, old_r)
        strip_attrs(old_p, PROBLEM_PROVENANCE)
        strip_attrs(old_r, RESULT_PROVENANCE)
        # an old problem: its fingerprint is computed from its content
        r_new = self.path("r_from_old.h5")
        p = run("solve", old_p, "-o", r_new, "--quiet")
        self.assertEqual(p.stderr, "")
        self.assertEqual(attrs(r_new)["problem_fingerprint"], attrs(self.p)["fingerprint"])
        # an old result: accepted with a one-line note naming what is missing
        for args in (["predict", self.p, old_r], ["predict", old_p, old_r],
                     ["kernel", self.p, old_r, "-o", self.path("k_old.h5")],
                     ["solve", self.p, "--warm", old_r, "-o", self.path("w_old.h5"), "--quiet"]):
            p = run(*args)
            notes = [l for l in p.stderr.splitlines() if "note:" in l]
            self.assertEqual(len(notes), 1, p.stderr)
            self.assertIn("problem_fingerprint", notes[0])
            self.assertIn(old_r, notes[0])
        # even an old result of another problem cannot be refused: the note says why
        p = run("predict", self.q, old_r)
        self.assertIn("cannot check", p.stderr)

    def test_edited_problem(self):
        """A file edited after atf wrote it: read by its content, with a note; results of the
        edited content pair with it, results of the original do not."""
        edited = self.path("edited.h5")
        shutil.copy(self.p, edited)
        with h5py.File(edited, "r+") as f:
            f["r"][0] = f["r"][0] * 2.0
        stored = attrs(edited)["fingerprint"]
        re_ = self.path("r_edited.h5")
        p = run("solve", edited, "-o", re_, "--quiet")
        self.assertIn("does not match its content", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        content = attrs(re_)["problem_fingerprint"]
        self.assertRegex(content, HEX32)
        self.assertNotEqual(content, stored)
        p = run("predict", edited, re_)
        self.assertIn("edited", p.stderr)
        run("predict", edited, self.r, expect=2)
        run("predict", self.p, re_, expect=2)


if __name__ == "__main__":
    unittest.main(verbosity=1)
