"""h5py ⇄ atf interoperability of problem and result files.

Usage: test_h5py_interop.py READ_PROBLEM SCRATCH_DIR

Files written by h5py (in several attribute and dtype variants) are read by atf (through the
read_problem driver), which writes them back; h5py must then find exactly the same data. The
driver also prints A vec(B) − r for a fixed B, which is compared with numpy's A built from
docs/formats.md (row-major flattening, row m = i·C + k) to 1e-12.
"""
import os
import subprocess
import sys
import unittest

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import problem_fixtures as fx  # noqa: E402

TOOL = SCRATCH = None
INTEGER_DATASETS = {"J_indptr", "J_indices", "labels"}


def run(*args):
    p = subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def parse_summary(text):
    out = {"blocks": []}
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        if key == "block":
            out["blocks"].append(rest.split())
        elif key in ("residual", "test_residual"):
            out[key] = np.array([float(v) for v in rest.split()])
        else:
            out[key] = rest
    return out


def as_written(v):
    """What h5py returns for an attribute value: str for strings, numbers as numbers."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.bytes_):
        return v.decode()
    return v


class ProblemInterop(unittest.TestCase):
    def path(self, name):
        return os.path.join(SCRATCH, name)

    def roundtrip(self, spec, name, c=fx.C):
        src, dst = self.path(name + ".h5"), self.path(name + "_out.h5")
        fx.write_spec(src, spec)
        code, out, err = run(src, dst)
        self.assertEqual(code, 0, err)
        self.assertEqual(err, "", "the library must not print")
        summary = parse_summary(out)
        order = [b[0] for b in summary["blocks"]]
        # residual against numpy's A (independent construction)
        ref = fx.reference_residual(spec, fx.N, spec["blocks"], spec["data"]["r"], order, c)
        np.testing.assert_allclose(summary["residual"], ref, rtol=1e-12,
                                   atol=1e-12 * np.abs(ref).max())
        if spec.get("test") is not None:
            t = spec["test"]
            r_t = (np.asarray(t["data"]["y"], float) - np.asarray(t["data"]["f0"], float)).ravel()
            ref = fx.reference_residual(spec, fx.NT, t["blocks"], r_t, order, c)
            np.testing.assert_allclose(summary["test_residual"], ref, rtol=1e-12,
                                       atol=1e-12 * np.abs(ref).max())
        self.compare_files(spec, dst)
        os.remove(src)
        os.remove(dst)
        return summary

    def compare_group(self, want, got, where):
        for k, v in want.get("data", {}).items():
            self.assertIn(k, got, where)
            a, b = np.asarray(v), got[k][()]
            self.assertEqual(a.shape, b.shape, f"{where}/{k}")
            self.assertTrue(np.array_equal(a.astype(b.dtype), b), f"{where}/{k} differs")
            if k in INTEGER_DATASETS:
                self.assertEqual(b.dtype, np.int64, f"{where}/{k} dtype")
            else:  # any numeric input type is read as, and written back as, float64
                self.assertEqual(b.dtype, np.float64, f"{where}/{k} dtype")
        for k, v in want.get("attrs", {}).items():
            self.assertIn(k, got.attrs, f"{where} attribute {k}")
            g = got.attrs[k]
            self.assertIsInstance(g, (str, np.integer), f"{where} attribute {k} type")
            self.assertEqual(as_written(g), as_written(v), f"{where} attribute {k}")

    def compare_files(self, spec, path):
        with h5py.File(path, "r") as f:
            self.compare_group(spec, f, "/")
            for name, b in spec["blocks"].items():
                self.compare_group(b, f["blocks"][name], f"/blocks/{name}")
            if spec.get("test") is not None:
                self.compare_group(spec["test"], f["test"], "/test")
                for name, b in spec["test"]["blocks"].items():
                    self.compare_group(b, f["test/blocks"][name], f"/test/blocks/{name}")
            else:
                self.assertNotIn("test", f)

    def test_plain(self):
        s = self.roundtrip(fx.valid_spec(0), "plain")
        self.assertEqual([b[0] for b in s["blocks"]], ["W1", "Jd", "Sp"])
        self.assertEqual(s["blocks"][2], ["Sp", "2", "sparse", "3", "2", "diagonal", "nuclear"])
        self.assertEqual(s["optional"], "y=1 f0=1 labels=1 test=1")
        self.assertEqual(s["test_samples"], str(fx.NT))

    def test_variants(self):
        """Float sizes, fixed-length strings, float32/int datasets, index order ≠ name order."""
        spec = fx.valid_spec(1)
        spec["attrs"]["samples"] = np.float64(fx.N)
        spec["attrs"]["outputs"] = np.int32(fx.C)
        spec["attrs"]["format"] = np.bytes_(b"atf-problem")
        b = spec["blocks"]
        b["W1"]["attrs"]["index"] = 7
        b["Jd"]["attrs"]["index"] = np.float64(-1)
        b["Sp"]["attrs"]["index"] = np.int16(3)
        b["Jd"]["attrs"]["operator"] = np.bytes_(b"dense")
        del b["W1"]["attrs"]["penalty"], b["W1"]["attrs"]["structure"]
        b["Jd"]["data"]["J"] = b["Jd"]["data"]["J"].astype(np.float32)
        b["W1"]["data"]["H"] = np.round(4 * b["W1"]["data"]["H"]).astype(np.int32)
        b["Sp"]["data"]["J_indices"] = b["Sp"]["data"]["J_indices"].astype(np.int32)
        spec["test"]["blocks"]["W1"]["data"]["D"] = \
            spec["test"]["blocks"]["W1"]["data"]["D"].astype(np.float32)
        spec["data"]["labels"] = spec["data"]["labels"].astype(np.uint8)
        # what atf writes back: floats as float64, sizes as int64, defaults made explicit
        s = self.roundtrip(spec, "variants")
        self.assertEqual([x[0] for x in s["blocks"]], ["Jd", "Sp", "W1"])
        self.assertEqual(s["blocks"][2][5:], ["matrix", "sq"])

    def test_minimal(self):
        """Only the required items: outputs defaults to 1, no y/f0/labels/test."""
        spec = fx.valid_spec(2, with_test=False, c=1)
        del spec["attrs"]["outputs"]
        spec["data"] = {"r": spec["data"]["r"]}
        src, dst = self.path("minimal.h5"), self.path("minimal_out.h5")
        fx.write_spec(src, spec)
        code, out, err = run(src, dst)
        self.assertEqual(code, 0, err)
        s = parse_summary(out)
        self.assertEqual(s["outputs"], "1")
        self.assertEqual(s["optional"], "y=0 f0=0 labels=0 test=0")
        with h5py.File(dst, "r") as f:
            self.assertEqual(f.attrs["outputs"], 1)
            self.assertEqual(set(f.keys()), {"r", "blocks"})
        os.remove(src)
        os.remove(dst)


class DocumentedExample(unittest.TestCase):
    """The h5py example of docs/formats.md writes a problem that atf reads."""

    def test_formats_md_example(self):
        doc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                           "formats.md")
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        marker = "<!-- example: problem -->\n```python\n"
        self.assertIn(marker, text)
        code = text.split(marker, 1)[1].split("```", 1)[0]
        cwd = os.getcwd()
        os.chdir(SCRATCH)
        try:
            exec(compile(code, doc, "exec"), {})
        finally:
            os.chdir(cwd)
        path = os.path.join(SCRATCH, "problem.h5")
        code, out, err = run(path)
        self.assertEqual(code, 0, err)
        s = parse_summary(out)
        self.assertEqual(s["samples"], "8")
        self.assertEqual(s["outputs"], "2")
        self.assertEqual(s["blocks"], [["W1", "0", "factored", "5", "4", "matrix", "sq+sq"],
                                       ["extra", "1", "dense", "2", "3", "diagonal", "sq"]])
        self.assertEqual(s["optional"], "y=1 f0=1 labels=1 test=1")
        os.remove(path)


class ResultInterop(unittest.TestCase):
    def test_result_roundtrip(self):
        spec = fx.valid_result_spec()
        src, dst = os.path.join(SCRATCH, "res.h5"), os.path.join(SCRATCH, "res_out.h5")
        fx.write_result_spec(src, spec)
        code, out, err = run("--result", src, dst)
        self.assertEqual(code, 0, err)
        self.assertIn("status solved", out)
        with h5py.File(dst, "r") as f:
            for k, v in spec["attrs"].items():
                g = f.attrs[k]
                if isinstance(v, float) and np.isnan(v):
                    self.assertTrue(np.isnan(g), k)
                else:
                    self.assertEqual(g, v, k)
            for name, b in spec["blocks"].items():
                for k, v in b["data"].items():
                    self.assertTrue(np.array_equal(f["blocks"][name][k][()], v), f"{name}/{k}")
                for k, v in b["attrs"].items():
                    self.assertEqual(f["blocks"][name].attrs[k], v, f"{name} attribute {k}")
        os.remove(src)
        os.remove(dst)

    def test_result_defaults(self):
        """Without index, U/V and the optional metrics: name order and defaults."""
        spec = fx.valid_result_spec()
        for k in ("structure", "ls_residual"):
            del spec["attrs"][k]
        for b in spec["blocks"].values():
            del b["attrs"]["index"], b["attrs"]["factors"], b["data"]["U"], b["data"]["V"]
        src = os.path.join(SCRATCH, "res_min.h5")
        fx.write_result_spec(src, spec)
        code, out, err = run("--result", src)
        self.assertEqual(code, 0, err)
        names = [line.split()[1] for line in out.splitlines() if line.startswith("block")]
        self.assertEqual(names, sorted(spec["blocks"]))
        os.remove(src)


if __name__ == "__main__":
    TOOL, SCRATCH = sys.argv[1], sys.argv[2]
    os.makedirs(SCRATCH, exist_ok=True)
    unittest.main(argv=[sys.argv[0], "-v"])
