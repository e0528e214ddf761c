"""Every JSON line, JSON-lines table and CSV table atf writes survives hostile names: quotes,
commas, line breaks, backslashes, tabs and UTF-8 in file names, block names, method names and
penalty specs, parsed back with python's json and csv modules (docs/formats.md "JSON and CSV").
Bytes that are not UTF-8 (JSON strings are Unicode) still give valid JSON."""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experiments"))
from test_experiments import combine_lsan_suppressions  # noqa: E402 (PLplot's leaks under LSan)

ATF = os.environ.get("ATF", "build/drivers/atf")
NAMES = ['q"uote', "com,ma", "new\nline", "back\\slash", "utf8-\u00e9\u2713", "tab\there",
         'all "of",\n\\ th\u00e9m']
# block names: every hostile character, and distinct (HDF5 link names; no '/')
BLOCKS = ['a"b', "c,d", "e\nf", "g\\h", "\u00e9\u2713"]


def run(*args, expect=0):
    p = subprocess.run([ATF, *args], capture_output=True, timeout=120)
    if expect is not None and p.returncode != expect:
        raise AssertionError(f"atf {args}: exit {p.returncode} (expected {expect})\n"
                             f"{p.stdout.decode(errors='replace')}"
                             f"{p.stderr.decode(errors='replace')}")
    return p


def one_json_line(stdout):
    """stdout must be exactly one line of JSON (a raw newline inside would split it)."""
    text = stdout.decode("utf-8")
    lines = text.splitlines()
    assert len(lines) == 1 and text.endswith("\n"), repr(text)
    return json.loads(lines[0])


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def write_problem(path, names, seed=0, N=6):
    """A small dense problem with the given block names (consistent: more unknowns than rows)
    and a test split, written with h5py."""
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        f.attrs.update({"format": "atf-problem", "version": 1, "samples": N, "outputs": 1})
        f["r"] = rng.standard_normal(N)
        f["y"] = rng.standard_normal((N, 1))
        f["f0"] = f["y"][()] - f["r"][()][:, None]
        t = f.create_group("test")
        t.attrs.update({"samples": 4, "outputs": 1})
        t["y"] = rng.standard_normal((4, 1))
        t["f0"] = rng.standard_normal((4, 1))
        for j, name in enumerate(names):
            g = f.require_group("blocks").create_group(name)
            g.attrs.update({"index": j, "rows": 2, "cols": 3, "operator": "dense",
                            "penalty": "sq"})
            g["J"] = rng.standard_normal((N, 6))
            tg = t.require_group("blocks").create_group(name)
            tg.attrs.update({"rows": 2, "cols": 3, "operator": "dense"})
            tg["J"] = rng.standard_normal((4, 6))


class Escaping(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="atf_escaping_")
        with warnings.catch_warnings():  # the helper leaves its input files to the collector
            warnings.simplefilter("ignore", ResourceWarning)
            combine_lsan_suppressions(cls.dir)
        cls.prob = os.path.join(cls.dir, "blocks.h5")
        write_problem(cls.prob, BLOCKS)
        cls.res = os.path.join(cls.dir, "blocks_result.h5")
        cls.solve_json = one_json_line(
            run("solve", cls.prob, "-o", cls.res, "--quiet", "--json").stdout)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_solve_json(self):
        self.assertEqual(self.solve_json["status"], "solved")
        self.assertEqual(len(self.solve_json["problem_fingerprint"]), 32)

    def test_features_and_train_output_names(self):
        for j, name in enumerate(NAMES):
            out = os.path.join(self.dir, f"{name}.h5")
            js = one_json_line(run("features", "--data", "synthetic:d=3,r=1", "--n-train", "8",
                                   "--n-test", "4", "--widths", "3,4,1", "-o", out,
                                   "--json").stdout)
            self.assertEqual(js["output"], out)
            self.assertTrue(os.path.exists(out))
            mlp = os.path.join(self.dir, f"mlp {name}.h5")
            js = one_json_line(run("train", "--data", "synthetic:d=3,r=1", "--n-train", "8",
                                   "--n-test", "4", "--widths", "3,4,1", "--epochs", "1",
                                   "-o", mlp, "--quiet", "--json").stdout)
            self.assertEqual(js["output"], mlp)

    def test_not_utf8(self):
        out = os.path.join(self.dir.encode(), b"latin1-\xe9.h5")
        js = one_json_line(run("features", "--data", "synthetic:d=3,r=1", "--n-train", "8",
                               "--widths", "3,4,1", "-o", out, "--json").stdout)
        self.assertTrue(js["output"].endswith("latin1-?.h5"), js["output"])

    def test_kernel_block_names(self):
        k = os.path.join(self.dir, "k.h5")
        js = one_json_line(run("kernel", self.prob, self.res, "-o", k, "--json").stdout)
        self.assertEqual(js["blocks"], BLOCKS)
        self.assertEqual(len(js["layer_cosine_label"]), len(BLOCKS))

    def test_predict_method_name(self):
        """Methods are an enum: a result names its method in JSON as read, and a file whose
        `method` attribute is no method (here one with a quote, a backslash, a line break and
        a non-ASCII letter) is refused with one line that names the file and the attribute."""
        with h5py.File(self.res, "r") as f:
            method = f.attrs["method"]
            method = method.decode() if isinstance(method, bytes) else method
        js = one_json_line(run("predict", self.prob, self.res, "--json").stdout)
        self.assertEqual(js["source"], method + " result")
        self.assertIn("test", js)
        odd = os.path.join(self.dir, "odd_method.h5")
        shutil.copy(self.res, odd)
        with h5py.File(odd, "r+") as f:
            f.attrs["method"] = 'm"e\\t,h\n\u00e9'
        p = run("predict", self.prob, odd, "--json", expect=2)
        self.assertEqual(p.stdout, b"")
        err = p.stderr.decode("utf-8", errors="replace")
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertIn("odd_method.h5", err)
        self.assertIn("'method'", err)

    def test_penalty_specs_csv_and_json(self):
        out = os.path.join(self.dir, 'pen "dir", \u00e9')
        specs = ["pow:p=1.5,scale=0.1", "zsq:scale=1e-4"]
        js = one_json_line(run("experiment", "penalties", "--out", out, "--num", "5",
                               "--penalty", specs[0], "--penalty", specs[1], "--json").stdout)
        self.assertEqual(sorted(js["tail_slopes"]), sorted(specs))
        self.assertEqual(js["csv"], os.path.join(out, "penalties.csv"))
        rows = read_csv(js["csv"])
        self.assertEqual(len(rows), 10)
        self.assertEqual({r["spec"] for r in rows}, set(specs))

    def test_sweep_tables(self):
        """Row-store tables: block names become column names (effective ranks); the JSON
        lines, the CSV and a resumed run (the CSV is read back) agree."""
        out = os.path.join(self.dir, 'sweep "x",\ny')
        args = ["sweep", self.prob, "--out", out, "--families", "sq", "--scales", "1",
                "--structures", "layer", "--quiet", "--json"]
        js = one_json_line(run(*args).stdout)
        self.assertEqual(js["csv"], os.path.join(out, "sweep.csv"))
        rows = read_csv(js["csv"])
        with open(js["jsonl"], encoding="utf-8") as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), len(rows))
        for row, line in zip(rows, lines):
            obj = json.loads(line)
            self.assertEqual(list(obj), list(row))
            for key, value in row.items():
                if isinstance(obj[key], str):
                    self.assertEqual(obj[key], value)
        for name in BLOCKS:
            self.assertTrue(any(name in column for column in rows[0]), (name, list(rows[0])))
        # resume: the CSV with quoted line breaks is read back, nothing is re-run
        js2 = one_json_line(run(*args).stdout)
        self.assertEqual(js2["rows"], js["rows"])
        self.assertEqual(js2["new_rows"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=1)
