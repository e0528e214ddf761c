"""`atf baseline --method gram|cg|auto` (docs/record/solver.md §9.1): the CG baseline agrees with
the Gram baseline and with numpy's min-norm solution, auto picks the Gram on a small problem and
says why, inconsistent data exit 3 with `infeasible` on both paths, a bad --method exits 2 with no
output, --max-iter stops cg (exit 4), --no-reduce gives the same interpolant and --checkpoint
resumes to the uninterrupted answer bit for bit."""
import json
import os
import sys
import unittest

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import atf_testlib as T  # noqa: E402


class BaselineMethods(T.ScratchCase):
    def setUp(self):
        super().setUp()
        rng = np.random.default_rng(41)
        self.problem = T.factored_problem(rng, 30, 2, [(10, 6), (6, 2)])  # M = 60, n = 72
        self.pfile = self.problem.write(self.path("p.h5"))
        self.ref = np.linalg.lstsq(self.problem.A(), self.problem.r, rcond=None)[0]

    def baseline(self, *args, pfile=None):
        out = self.path("r.h5")
        code, js, err = T.solve_json("baseline", pfile or self.pfile, "-o", out, *args)
        return code, js, err, out

    def test_cg_matches_gram_and_numpy(self):
        code, js, err, out = self.baseline("--method", "cg")
        self.assertEqual(code, 0, err)
        self.assertEqual(js["method"], "cg")
        self.assertEqual(js["status"], "solved")
        self.assertTrue(js["method_note"].startswith("cg: nystrom-block preconditioner"),
                        js["method_note"])
        self.assertGreater(js["iterations"], 0)
        self.assertGreaterEqual(js["operator_passes"], 2 * js["iterations"])
        self.assertLessEqual(js["constraint_residual"], 1.5e-8)
        x = T.stacked(T.read_result(out)[1], self.problem)
        self.assertTrue(np.all(np.isfinite(x)))
        self.assertLess(np.linalg.norm(x - self.ref), 1e-6 * np.linalg.norm(self.ref))
        with h5py.File(out, "r") as f:
            self.assertEqual(f.attrs["method"], "cg")
            note = f.attrs["method_note"]
            self.assertIn("cg:", note.decode() if isinstance(note, bytes) else note)
        code, js_g, err, out = self.baseline("--method", "gram")
        self.assertEqual(code, 0, err)
        self.assertEqual(js_g["method"], "baseline")
        self.assertLess(abs(js["objective"] - js_g["objective"]), 1e-6 * js_g["objective"])
        self.assertLess(abs(js["stationarity"] - js_g["stationarity"]),
                        1e-3 * js_g["stationarity"] + 1e-4)

    def test_auto_is_the_default_and_says_why(self):
        for args in ((), ("--method", "auto")):
            code, js, err, out = self.baseline(*args)
            self.assertEqual(code, 0, err)
            self.assertEqual(js["method"], "baseline")
            self.assertTrue(js["method_note"].startswith("auto: M = 60: the Gram needs"),
                            js["method_note"])
            x = T.stacked(T.read_result(out)[1], self.problem)
            self.assertLess(np.linalg.norm(x - self.ref), 1e-12 * np.linalg.norm(self.ref))

    def test_inconsistent_exits_3_on_both_paths(self):
        p = self.problem
        half = p.N // 2
        for b in p.blocks:  # examples half.. repeat 0.. with other targets: r not in range(A)
            b.H[half:2 * half] = b.H[:half]
            b.D[half * p.C:2 * half * p.C] = b.D[:half * p.C]
        p.r[half * p.C:2 * half * p.C] = p.r[:half * p.C] + 1.0
        pfile = p.write(self.path("bad.h5"))
        ls = np.linalg.lstsq(p.A(), p.r, rcond=None)[0]
        ls_res = np.linalg.norm(p.A() @ ls - p.r) / np.linalg.norm(p.r)
        for method, name in (("cg", "cg"), ("gram", "baseline")):
            code, js, err, out = self.baseline("--method", method, pfile=pfile)
            self.assertEqual(code, 3, err)
            self.assertEqual(js["status"], "infeasible")
            self.assertEqual(js["method"], name)
            self.assertIn("inconsistent", err)
            self.assertGreaterEqual(js["constraint_residual"], ls_res * (1 - 1e-6))
            self.assertLess(js["constraint_residual"], 10 * ls_res)
            x = T.stacked(T.read_result(out)[1], p)
            self.assertTrue(np.all(np.isfinite(x)))

    def test_bad_method_exits_2(self):
        out = self.path("r.h5")
        for bad in ("frob", "admm", "baseline"):
            code, _, err = T.run("baseline", self.pfile, "-o", out, "--method", bad)
            self.assertEqual(code, 2, bad)
            self.assertIn("--method", err)
            self.assertIn("gram, cg, auto", err)
        self.assertFalse(os.path.exists(out))
        code, usage, _ = T.run("baseline", "--help")
        self.assertEqual(code, 0)
        self.assertIn("--method M", usage)

    def test_step_limit_and_no_reduce(self):
        """--max-iter stops cg with exit 4 and the last iterate written; --no-reduce gives the
        same interpolant as the reduced solve."""
        code, js, err, out = self.baseline("--method", "cg", "--max-iter", "1")
        self.assertEqual(code, 4, err)
        self.assertEqual(js["status"], "max_iterations")
        self.assertEqual(js["iterations"], 1)
        self.assertIn("step limit 1", err)
        self.assertTrue(os.path.exists(out))
        code, js, err, out = self.baseline("--method", "cg", "--no-reduce")
        self.assertEqual(code, 0, err)
        x = T.stacked(T.read_result(out)[1], self.problem)
        self.assertLess(np.linalg.norm(x - self.ref), 1e-6 * np.linalg.norm(self.ref))
        code, _, err = T.run("baseline", self.pfile, "-o", self.path("x.h5"), "--max-iter", "x")
        self.assertEqual(code, 2)
        self.assertIn("--max-iter", err)

    def test_checkpoint_resumes_bit_for_bit(self):
        """--checkpoint: stopped by the step limit, the state stays in FILE (at the step it
        stopped at) and the next run goes on from it to the uninterrupted answer, bit for bit,
        then removes it; another tolerance's state and the Gram with a state are exit 2 naming
        the file; a damaged file is exit 2."""
        code, plain, err, out = self.baseline("--method", "cg")
        self.assertEqual(code, 0, err)
        x_plain = T.stacked(T.read_result(out)[1], self.problem)
        cp = self.path("state.h5")
        self.assertGreater(plain["iterations"], 1)
        code, js, err, out = self.baseline("--method", "cg", "--max-iter", "1",
                                           "--checkpoint", cp, "--checkpoint-every", "0")
        self.assertEqual(code, 4, err)
        self.assertTrue(os.path.exists(cp))
        out = self.path("r.h5")
        code, stdout, err = T.run("baseline", self.pfile, "-o", out, "--method", "cg",
                                  "--checkpoint", cp, "--json")
        self.assertEqual(code, 0, err)
        js = json.loads(stdout.strip().splitlines()[-1])
        self.assertIn("atf cg: resumed from a checkpoint at step 2", err)
        self.assertFalse(os.path.exists(cp))
        x = T.stacked(T.read_result(out)[1], self.problem)
        self.assertTrue(np.array_equal(x, x_plain))
        for k in ("iterations", "operator_passes", "stationarity", "objective"):
            self.assertEqual(js[k], plain[k], k)
        self.baseline("--method", "cg", "--max-iter", "1", "--checkpoint", cp)
        for cmd, args, words in (("solve", ("--method", "cg", "--tol", "1e-9"), "another solve"),
                                 ("baseline", ("--method", "gram"),
                                  "method admm, newton, alm, cg or factored")):
            code, _, err = T.run(cmd, self.pfile, "-o", self.path("o.h5"), *args,
                                 "--checkpoint", cp)
            self.assertEqual(code, 2, err)
            self.assertIn(words, err)
            self.assertIn(cp, err)
        # finite values no solve makes (a damaged file's 1e300 vectors): exit 2 naming the file
        # (before: the solve ran on them and failed on a non-finite B, naming neither file)
        with h5py.File(cp, "r+") as f:
            state = f["state"][...]
            state[40:] = np.where(state[40:] == 0, 1e300, state[40:] * 1e300)
            state[40:][~np.isfinite(state[40:])] = 1e300
            f["state"][...] = state
        code, _, err = T.run("baseline", self.pfile, "-o", self.path("o.h5"), "--method", "cg",
                             "--checkpoint", cp)
        self.assertEqual(code, 2, err)
        self.assertIn(cp, err)
        self.assertIn("values are damaged", err)
        with open(cp, "wb") as f:
            f.write(b"not a checkpoint")
        code, _, err = T.run("baseline", self.pfile, "-o", self.path("o.h5"), "--method", "cg",
                             "--checkpoint", cp)
        self.assertEqual(code, 2, err)
        self.assertIn(cp, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)

    def test_solve_takes_method_cg(self):
        code, js, err = T.solve_json("solve", self.pfile, "-o", self.path("s.h5"), "--method",
                                     "cg")
        self.assertEqual(code, 0, err)
        self.assertEqual(js["method"], "cg")


if __name__ == "__main__":
    unittest.main()
