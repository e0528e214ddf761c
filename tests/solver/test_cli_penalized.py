"""`atf solve --loss` and `--method newton|fista|irls` end to end (docs/record/solver.md §14.

- `--loss squared:lambda=λ` with the nuclear penalty against a cvxopt cone program, and
  `--loss xent:lambda=λ` with the Frobenius penalty (`fixed`) against a numpy proximal-gradient
  run (the references of test_penalized_refs.py), to 1e-6 relative objective, by `auto` (which
  must resolve to newton and say so), `newton` and `fista`;
- the JSON line and the result file carry the loss spec, loss_value, penalty_value and their sum
  `objective` separately (recomputed here from the returned B), plus pg_residual and duality_gap;
- `--method irls` reaches ADMM's objective on a convex penalty;
- bad loss specs and loss/method mismatches exit 2 with one line and write nothing; xent on a
  problem without /labels exits 2 naming the file and /labels."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import atf_testlib as T  # noqa: E402
from test_penalized_refs import (nuclear_squared_reference, nuclear_value, prox,  # noqa: E402
                                 xent)

TIGHT = ("--tol", "1e-10", "--max-iter", "100000")


class PenalizedCli(T.ScratchCase):
    def solve(self, pfile, *args, out="r.h5"):
        return T.solve_json("solve", pfile, "-o", self.path(out), *args)

    def check_parts(self, js, attrs, spec, method, auto_picks="newton"):
        """Loss, penalty and objective separately, in the JSON line and in the result file."""
        self.assertEqual(js["method"], auto_picks if method == "auto" else method)
        if method == "auto":
            self.assertIn("auto", js["method_note"])
        self.assertEqual(js["loss"], spec)
        self.assertEqual(attrs["loss"], spec)
        self.assertEqual(attrs["method"], js["method"])
        for key in ("objective", "loss_value", "penalty_value", "pg_residual"):
            self.assertEqual(attrs[key], js[key], key)
        self.assertAlmostEqual(js["loss_value"] + js["penalty_value"], js["objective"],
                               delta=1e-14 * abs(js["objective"]))
        self.assertLessEqual(js["pg_residual"], 1e-10)

    def test_squared_nuclear_against_cvxopt(self):
        rng = np.random.default_rng(3)
        prob = T.factored_problem(rng, 6, 2, [(4, 3), (3, 2)], penalty="nuclear:scale=0.3")
        pfile = prob.write(self.path("p.h5"))
        lam, gamma = 0.05, 0.3
        shapes = [(b.rows, b.cols) for b in prob.blocks]
        A = prob.A()
        _, ref = nuclear_squared_reference(A, prob.r, shapes, gamma, lam)
        for method in ("auto", "newton", "fista", "factored"):
            with self.subTest(method=method):
                self.squared_nuclear(pfile, prob, A, shapes, lam, gamma, ref, method)

    def squared_nuclear(self, pfile, prob, A, shapes, lam, gamma, ref, method):
        spec = f"squared:lambda={lam:g}"
        code, js, err = self.solve(pfile, "--loss", spec, "--method", method, *TIGHT)
        self.assertEqual(code, 0, err)
        attrs, blocks = T.read_result(self.path("r.h5"))
        self.check_parts(js, attrs, spec, method, auto_picks="factored")  # every block nuclear
        self.assertLess(abs(js["objective"] - ref) / ref, 1e-6, (js["objective"], ref))
        x = T.stacked(blocks, prob)
        loss = np.sum((A @ x - prob.r) ** 2) / (2 * lam)
        self.assertLess(abs(js["loss_value"] - loss) / ref, 1e-9)
        self.assertLess(abs(js["penalty_value"] - nuclear_value(x, shapes, gamma)) / ref, 1e-9)
        self.assertLess(js["duality_gap"], 1e-7)

    def test_xent_fixed_against_proximal_gradient(self):
        rng = np.random.default_rng(5)
        N, C, lam = 7, 3, 0.5
        prob = T.factored_problem(rng, N, C, [(3, 4), (4, 3)], penalty="fixed")
        f0 = rng.standard_normal((N, C))
        labels = rng.integers(0, C, N)
        pfile = prob.write(self.path("p.h5"))
        with h5py.File(pfile, "a") as f:
            f["f0"] = f0
            f["labels"] = labels.astype(np.int64)
        A = prob.A()
        shapes = [(b.rows, b.cols) for b in prob.blocks]
        t = 2 * lam / np.linalg.norm(A, 2) ** 2
        x = np.zeros(A.shape[1])
        for _ in range(30000):
            _, g = xent(A, x, f0, labels, C, lam)
            x = prox(x - t * g, shapes, t, 0.0, False)
        ref = xent(A, x, f0, labels, C, lam)[0] + x @ x
        for method in ("auto", "newton", "fista"):
            with self.subTest(method=method):
                self.xent_fixed(pfile, prob, A, f0, labels, C, lam, ref, method)

    def xent_fixed(self, pfile, prob, A, f0, labels, C, lam, ref, method):
        code, js, err = self.solve(pfile, "--loss", "xent:lambda=0.5", "--tol", "1e-11",
                                   "--max-iter", "100000", "--method", method)
        self.assertEqual(code, 0, err)
        attrs, blocks = T.read_result(self.path("r.h5"))
        self.check_parts(js, attrs, "xent:lambda=0.5", method)
        self.assertLess(abs(js["objective"] - ref) / ref, 1e-6, (js["objective"], ref))
        xb = T.stacked(blocks, prob)
        self.assertLess(abs(js["loss_value"] - xent(A, xb, f0, labels, C, lam)[0]) / ref, 1e-10)
        self.assertLess(abs(js["penalty_value"] - xb @ xb) / ref, 1e-10)

    def test_irls_matches_admm(self):
        rng = np.random.default_rng(51)
        prob = T.factored_problem(rng, 5, 2, [(6, 5), (5, 3)], penalty="zsq:scale=0.05")
        pfile = prob.write(self.path("p.h5"))
        code, admm, err = self.solve(pfile, "--tol", "1e-10", out="admm.h5")
        self.assertEqual(code, 0, err)
        code, irls, err = self.solve(pfile, "--method", "irls", "--tol", "1e-10", out="irls.h5")
        self.assertEqual(code, 0, err)
        self.assertEqual(irls["method"], "irls")
        self.assertEqual(irls["loss"], "interpolate")
        self.assertIsNone(irls["loss_value"])
        self.assertEqual(irls["penalty_value"], irls["objective"])
        self.assertLess(abs(irls["objective"] - admm["objective"]) / admm["objective"], 1e-6)
        self.assertLess(irls["constraint_residual"], 1e-10)
        self.assertLess(irls["stationarity"], 1e-6)

    def refused(self, pfile, *args):
        code, out, err = T.run("solve", pfile, "-o", self.path("bad.h5"), *args)
        self.assertEqual(code, 2, (args, err))
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertFalse(os.path.exists(self.path("bad.h5")))
        return err

    def test_refusals(self):
        rng = np.random.default_rng(7)
        prob = T.factored_problem(rng, 4, 2, [(3, 2)])
        pfile = prob.write(self.path("p.h5"))
        for spec in ("squared:lambda=0", "squared", "hinge:lambda=1", "xent:lambda=nan"):
            err = self.refused(pfile, "--loss", spec)
            self.assertIn(f'loss "{spec}"', err)
        self.assertIn("needs method fista, newton or factored",
                      self.refused(pfile, "--loss", "squared:lambda=1", "--method", "admm"))
        self.assertIn("needs method fista, newton or factored",
                      self.refused(pfile, "--loss", "squared:lambda=1", "--method", "irls"))
        self.assertIn("needs a penalized loss", self.refused(pfile, "--method", "fista"))
        self.assertIn("needs a penalized loss", self.refused(pfile, "--method", "newton"))
        self.assertIn("--method", self.refused(pfile, "--method", "simplex"))
        err = self.refused(pfile, "--loss", "xent:lambda=1")
        self.assertIn("p.h5", err)
        self.assertIn("/labels", err)

    def test_features_labels_xent_predict(self):
        """`atf features` stores /labels for class targets; `atf solve --loss xent` uses them and
        `atf predict` reports the test cross-entropy of the predictions (numpy recomputes it)."""
        rng = np.random.default_rng(11)
        n, d, C = 60, 6, 3
        labels = np.arange(n) % C
        centers = rng.standard_normal((C, d))
        X = centers[labels] + 0.8 * rng.standard_normal((n, d))
        data = self.path("three.h5")
        with h5py.File(data, "w") as f:
            f["X"] = X
            f["labels"] = labels.astype(np.int32)
        pfile = self.path("p.h5")
        code, _, err = T.run("features", "--data", data, "--n-train", "30", "--n-test", "30",
                             "--widths", f"{d},8,{C}", "-o", pfile)
        self.assertEqual(code, 0, err)
        with h5py.File(pfile, "r") as f:
            self.assertEqual(f["labels"].shape, (30,))
            self.assertEqual(f["test/labels"].shape, (30,))
            self.assertTrue(set(np.asarray(f["labels"])) <= set(range(C)))
        code, js, err = self.solve(pfile, "--loss", "xent:lambda=1", "--penalty",
                                   "sq:scale=0.01", "--tol", "1e-8")
        self.assertEqual(code, 0, err)
        self.assertEqual(js["loss"], "xent:lambda=1")
        pred = self.path("pred.h5")
        code, out, err = T.run("predict", pfile, self.path("r.h5"), "--json", "-o", pred)
        self.assertEqual(code, 0, err)
        js = json.loads(out.strip().splitlines()[-1])
        with h5py.File(pred, "r") as f:
            for split in ("train", "test"):
                F = np.asarray(f[split]["f"])
                y = np.asarray(f[split]["labels"])
                Z = F - F.max(axis=1, keepdims=True)
                ref = np.mean(np.log(np.exp(Z).sum(axis=1)) - Z[np.arange(len(y)), y])
                self.assertAlmostEqual(js[split]["xent"], ref, delta=1e-12 * max(1.0, ref))
        # the fitted cross-entropy on the training rows is the reported loss (λ = 1: a sum)
        self.assertAlmostEqual(js["train"]["xent"] * 30, T.read_result(self.path("r.h5"))[0][
            "loss_value"], delta=1e-9 * js["train"]["xent"] * 30)
        code, out, err = T.run("predict", pfile, self.path("r.h5"))
        self.assertEqual(code, 0, err)
        self.assertIn("xent", out)

    def test_sweep_and_samples_take_loss(self):
        """`atf sweep --loss` and `atf experiment samples --loss`: penalized rows with the loss
        spec, loss and penalty (objective = their sum); bad specs and xent without /labels: 2."""
        import csv
        # the tables' figures load PLplot's cairo driver (fontconfig): its one-time allocations
        # are suppressed under LeakSanitizer as in the experiments' own tests
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                        "experiments"))
        os.environ.setdefault("ATF", T.ATF)
        from test_experiments import combine_lsan_suppressions
        saved = os.environ.get("LSAN_OPTIONS")
        self.addCleanup(lambda: os.environ.pop("LSAN_OPTIONS", None) if saved is None
                        else os.environ.__setitem__("LSAN_OPTIONS", saved))
        combine_lsan_suppressions(self.dir)
        rng = np.random.default_rng(13)
        prob = T.factored_problem(rng, 8, 2, [(5, 4), (4, 2)])
        pfile = prob.write(self.path("p.h5"))
        out = self.path("sweep")
        code, _, err = T.run("sweep", pfile, "--out", out, "--families", "sq", "--scales", "1e-1",
                             "--structures", "layer", "--loss", "squared:lambda=0.1", "--quiet")
        self.assertEqual(code, 0, err)
        with open(os.path.join(out, "sweep.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([r["loss"] for r in rows], ["interpolate", "squared:lambda=0.1"])
        run = rows[1]
        self.assertEqual(run["status"], "solved")
        self.assertAlmostEqual(float(run["loss_value"]) + float(run["penalty_value"]),
                               float(run["objective"]), delta=1e-9 * float(run["objective"]))
        code, _, err = T.run("sweep", pfile, "--out", out, "--families", "sq", "--scales", "1e-1",
                             "--structures", "layer", "--loss", "squared:lambda=1", "--quiet")
        self.assertEqual(code, 2, err)  # a table of another loss is not resumed
        self.assertIn("rows of loss squared:lambda=0.1", err)
        code, _, err = T.run("sweep", pfile, "--out", self.path("s2"), "--loss", "squared:lambda=0")
        self.assertEqual(code, 2, err)
        self.assertIn("--loss", err)
        code, _, err = T.run("sweep", pfile, "--out", self.path("s3"), "--loss", "xent:lambda=1")
        self.assertEqual(code, 2, err)
        self.assertIn("/labels", err)
        out = self.path("samples")
        code, _, err = T.run("experiment", "samples", "--ns", "20", "--seeds", "1", "--n-test",
                             "20", "--hidden", "8", "--no-mlp", "--penalty", "sq:scale=0.01",
                             "--loss", "squared:lambda=0.1", "--out", out, "--json")
        self.assertEqual(code, 0, err)
        with open(os.path.join(out, "samples.csv")) as f:
            rows = {r["method"]: r for r in csv.DictReader(f)}
        self.assertEqual(rows["ntk"]["loss"], "interpolate")
        self.assertEqual(rows["p16"]["loss"], "squared:lambda=0.1")
        code, _, err = T.run("experiment", "samples", "--loss", "hinge", "--out", self.path("s4"))
        self.assertEqual(code, 2, err)


class LambdaBeyondTheArithmetic(T.ScratchCase):
    def test_one_wording(self):
        """A λ too small to solve in double precision is said in one wording whether the
        weight 1/λ cannot be formed (5e-324) or the solve breaks down on it (1e-300): exit 1,
        one line naming the loss and λ, no result file."""
        rng = np.random.default_rng(4)
        pfile = T.factored_problem(rng, 20, 1, [(16, 8), (8, 1)]).write(self.path("p.h5"))
        for lam, what in (("1e-300", "too far from 1 to solve"), ("5e-324", "not representable")):
            out = self.path(f"r{lam}.h5")
            code, _, err = T.run("solve", pfile, "-o", out, "--loss", f"squared:lambda={lam}",
                                 "--penalty", "sq", "--quiet")
            self.assertEqual(code, 1, err)
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertIn("the loss's weight 1/lambda relative to the penalty is " + what, err)
            self.assertIn("use a lambda closer to the data's scale", err)
            self.assertFalse(os.path.exists(out))


class IrlsCertificate(T.ScratchCase):
    def test_small_step_is_not_a_solution(self):
        """`abs` with r x 1e150 (an effective scale of 1e-300): IRLS creeps in tiny steps far from
        a stationary point. It used to stop there with status solved and stationarity 0.2; a
        `solved` must now carry a certificate, and ADMM solves the same problem certified."""
        rng = np.random.default_rng(0)
        prob = T.factored_problem(rng, 12, 1, [(8, 6), (6, 1)], penalty="abs")
        prob.r = prob.r * 1e150
        pfile = prob.write(self.path("p.h5"))
        code, js, err = T.solve_json("solve", pfile, "-o", self.path("irls.h5"), "--method", "irls")
        self.assertIn(code, (0, 1, 4), err)
        if code == 0:
            self.assertLessEqual(js["stationarity"], 1e-4, js)
        else:
            self.assertNotIn("solved", (js or {}).get("status", ""), js)
        code, js, err = T.solve_json("solve", pfile, "-o", self.path("admm.h5"))
        self.assertEqual(code, 0, err)
        self.assertLessEqual(js["stationarity"], 1e-6, js)

class CheckpointCli(T.ScratchCase):
    """`atf solve --checkpoint FILE`: a solve stopped by its iteration limit keeps its last
    checkpoint, and the same command with a larger --max-iter goes on from it to the
    uninterrupted solve's answer, bit for bit (B, iterations, certificates); the file is then
    removed; a checkpoint of another solve and a file that is not one exit 2 naming it."""

    def run_solve(self, pfile, out, *args):
        return T.solve_json("solve", pfile, "-o", self.path(out), *args)

    def labelled_problem(self, seed):
        """p.h5: two factored balanced+balanced blocks, 30 examples with f0 and labels of 3
        classes."""
        rng = np.random.default_rng(seed)
        prob = T.factored_problem(rng, 30, 3, [(8, 6), (6, 3)], penalty="balanced+balanced")
        pfile = prob.write(self.path("p.h5"))
        with h5py.File(pfile, "a") as f:
            f["f0"] = rng.standard_normal((30, 3))
            f["labels"] = rng.integers(0, 3, 30).astype(np.int64)
        return pfile

    def blocks(self, out):
        with h5py.File(self.path(out)) as f:
            return {k: f["blocks"][k]["B"][()] for k in f["blocks"]}

    def stopped_and_resumed(self, pfile, common, min_iterations, stop_at, certificates):
        """Solves once straight, once stopped by --max-iter stop_at with a checkpoint at every
        state allowed and run again to the end; checks the second equals the first bit for
        bit and that the checkpoint is kept at the limit and removed with the answer. Returns
        the checkpoint's path and its options."""
        code, ref, err = self.run_solve(pfile, "ref.h5", *common, "--max-iter", "500")
        self.assertEqual(code, 0, err)
        self.assertGreater(ref["iterations"], min_iterations)
        cp = self.path("cp.h5")
        cpargs = ["--checkpoint", cp, "--checkpoint-every", "0"]
        code, js, err = self.run_solve(pfile, "part.h5", *common, *cpargs, "--max-iter", stop_at)
        self.assertEqual(code, 4, err)
        self.assertTrue(os.path.exists(cp), "no checkpoint kept at the iteration limit")
        code, js, err = self.run_solve(pfile, "res.h5", *common, *cpargs, "--max-iter", "500")
        self.assertEqual(code, 0, err)
        self.assertFalse(os.path.exists(cp), "the checkpoint outlived the answer")
        for key in ("iterations", "objective", "status") + certificates:
            self.assertEqual(js[key], ref[key], key)
        want, got = self.blocks("ref.h5"), self.blocks("res.h5")
        for k in want:
            self.assertTrue(np.array_equal(want[k], got[k]), k)
        return cp, cpargs

    def test_limit_keeps_the_state_whatever_the_interval(self):
        """newton and alm stopped by --max-iter keep their state with the default interval
        (600 s, never due in a run this short)."""
        rng = np.random.default_rng(12)
        prob = T.factored_problem(rng, 30, 3, [(12, 10), (10, 3)], penalty="balanced+balanced")
        pfile = prob.write(self.path("wide.h5"))
        with h5py.File(pfile, "a") as f:
            f["f0"] = rng.standard_normal((30, 3))
            f["labels"] = rng.integers(0, 3, 30).astype(np.int64)
        for method, loss in (("newton", ["--loss", "xent:lambda=0.05"]), ("alm", [])):
            cp = self.path(f"{method}.ck.h5")
            code, _, err = self.run_solve(pfile, f"{method}.h5", *loss, "--method", method,
                                          "--tol", "1e-12", "--checkpoint", cp, "--max-iter", "2")
            self.assertEqual(code, 4, err)
            self.assertTrue(os.path.exists(cp), f"{method}: no checkpoint at the iteration limit")

    def test_resume_is_the_uninterrupted_solve(self):
        pfile = self.labelled_problem(11)
        common = ["--loss", "xent:lambda=0.05", "--method", "newton", "--tol", "1e-10"]
        cp, cpargs = self.stopped_and_resumed(pfile, common, 6, "5",
                                              ("pg_residual", "stationarity"))
        # another solve's state (another lambda), then a file that is not a checkpoint
        self.run_solve(pfile, "part.h5", *common, *cpargs, "--max-iter", "5")
        other = ["--loss", "xent:lambda=0.1"] + common[2:]
        code, _, err = self.run_solve(pfile, "x.h5", *other, *cpargs)
        self.assertEqual(code, 2, err)
        self.assertIn(cp, err)
        self.assertIn("another solve", err)
        with open(cp, "wb") as f:
            f.write(b"not a checkpoint")
        code, _, err = self.run_solve(pfile, "x.h5", *common, *cpargs)
        self.assertEqual(code, 2, err)
        self.assertIn(cp, err)
        code, _, err = self.run_solve(pfile, "x.h5", *common, "--checkpoint-every", "-3")
        self.assertEqual(code, 2, err)

    def test_alm_resume_is_the_uninterrupted_solve(self):
        """Interpolation by the augmented Lagrangian: stopped after 3 outer iterations, the
        same command with a larger limit goes on from the state kept before the last one to
        the uninterrupted answer, bit for bit; a Newton solve's state is another solve's."""
        rng = np.random.default_rng(12)  # 24 rows, 66 unknowns: it interpolates
        prob = T.factored_problem(rng, 8, 3, [(8, 6), (6, 3)], penalty="balanced+balanced")
        pfile = prob.write(self.path("p.h5"))
        common = ["--method", "alm", "--tol", "1e-9"]
        cp, cpargs = self.stopped_and_resumed(pfile, common, 4, "3",
                                              ("constraint_residual", "stationarity"))
        newton = ["--loss", "squared:lambda=0.05", "--method", "newton", "--max-iter", "5"]
        self.run_solve(pfile, "part.h5", *newton, *cpargs)
        code, _, err = self.run_solve(pfile, "x.h5", *common, *cpargs)
        self.assertEqual(code, 2, err)
        self.assertIn(cp, err)
        self.assertIn("another solve", err)

    def test_admm_resume_is_the_uninterrupted_solve(self):
        """Interpolation by ADMM with its projection by PCG (--linsys pcg): stopped
        at 5 iterations, the same command with a larger limit goes on from the state kept
        there to the uninterrupted answer, bit for bit, reading the factor --precond-file kept
        instead of building it; both files go with the answer. Another problem's factor, and
        an ALM state, are refused naming the file."""
        rng = np.random.default_rng(13)  # 180 rows, 276 unknowns: 11 iterations
        prob = T.factored_problem(rng, 60, 3, [(20, 12), (12, 3)], penalty="balanced+balanced")
        pfile = prob.write(self.path("p.h5"))
        pc = self.path("factor.h5")
        common = ["--method", "admm", "--precond-file", pc, "--linsys", "pcg"]
        code, part, err = self.run_solve(pfile, "part0.h5", *common, "--max-iter", "5")
        self.assertEqual(code, 4, err)
        self.assertTrue(os.path.exists(pc), "the factor was not kept at the limit")
        cp, cpargs = self.stopped_and_resumed(pfile, common, 8, "5",
                                              ("constraint_residual", "stationarity"))
        self.assertFalse(os.path.exists(pc), "the factor outlived the answer")
        code, js, err = T.run("solve", pfile, "-o", self.path("v.h5"), *common, *cpargs,
                              "--max-iter", "5")
        self.assertEqual(code, 4, err)
        self.assertIn("atf cg: gram32: the factor kept in", err)
        code, js, err = T.run("solve", pfile, "-o", self.path("v.h5"), *common, *cpargs)
        self.assertEqual(code, 0, err)
        self.assertIn("atf cg: gram32: the factor read from", err)
        self.assertIn("atf admm: resumed from a checkpoint after iteration 5", err)
        other = T.factored_problem(np.random.default_rng(14), 60, 3, [(20, 12), (12, 3)],
                                   penalty="balanced+balanced")
        ofile = other.write(self.path("o.h5"))
        self.run_solve(pfile, "part.h5", *common, "--max-iter", "5")
        code, _, err = self.run_solve(ofile, "x.h5", *common)
        self.assertEqual(code, 2, err)
        self.assertIn(pc, err)
        self.assertIn("another solve", err)
        alm = ["--method", "alm", "--max-iter", "2"]
        self.run_solve(pfile, "part.h5", *alm, *cpargs)
        code, _, err = self.run_solve(pfile, "x.h5", "--method", "admm", *cpargs)
        self.assertEqual(code, 2, err)
        self.assertIn(cp, err)
        self.assertIn("another solve", err)

    def test_continuation_resumes_in_its_stage(self):
        """From --warm at lambda 0.5 to 0.05 (balanced+balanced, nonconvex): continuation 2's
        bridges (named in method_note); stopped by --max-iter inside the first bridge, the run
        with a larger limit goes on in that stage to the uninterrupted answer; --continuation 0
        goes straight there; a ratio below 1 is exit 2."""
        pfile = self.labelled_problem(12)
        base = ["--method", "newton", "--tol", "1e-10"]
        code, _, err = self.run_solve(pfile, "w.h5", "--loss", "xent:lambda=0.5", *base)
        self.assertEqual(code, 0, err)
        common = ["--loss", "xent:lambda=0.05", "--warm", self.path("w.h5"), *base]
        code, ref, err = self.run_solve(pfile, "ref.h5", *common)
        self.assertEqual(code, 0, err)
        self.assertIn("continuation", ref["method_note"])
        cp = self.path("cp.h5")
        cpargs = ["--checkpoint", cp, "--checkpoint-every", "0"]
        code, _, err = self.run_solve(pfile, "part.h5", *common, *cpargs, "--max-iter", "2")
        self.assertEqual(code, 4, err)
        self.assertTrue(os.path.exists(cp), "no checkpoint kept in the bridge")
        with h5py.File(cp) as f:
            self.assertIn("on the way to", f.attrs["key"].decode() if isinstance(
                f.attrs["key"], bytes) else f.attrs["key"])
        code, js, err = self.run_solve(pfile, "res.h5", *common, *cpargs)
        self.assertEqual(code, 0, err)
        for key in ("iterations", "inner_iterations", "objective", "pg_residual", "status"):
            self.assertEqual(js[key], ref[key], key)
        want, got = self.blocks("ref.h5"), self.blocks("res.h5")
        for k in want:
            self.assertTrue(np.array_equal(want[k], got[k]), k)
        code, js, err = self.run_solve(pfile, "straight.h5", *common, "--continuation", "0")
        self.assertEqual(code, 0, err)
        self.assertNotIn("continuation", js["method_note"])
        code, _, err = self.run_solve(pfile, "bad.h5", *common, "--continuation", "0.5")
        self.assertEqual(code, 2, err)
        self.assertIn("continuation", err)

    def test_ctrl_c_keeps_the_step_it_stopped_in(self):
        """SIGINT while a Newton step runs (checkpoints every 600 s, none due): exit 130 with
        the top of that step kept in the file, and the same command goes on from there
        (its log names the step) to the uninterrupted answer, bit for bit."""
        rng = np.random.default_rng(5)  # labels of a planted model: a few hundred CG steps
        N, C = 1500, 5
        prob = T.factored_problem(rng, N, C, [(40, 20), (20, 5)], penalty="balanced+balanced",
                                  decay=True)
        A = prob.A()
        z = (A @ (0.02 * rng.standard_normal(A.shape[1]))).reshape(N, C)
        pfile = prob.write(self.path("p.h5"))
        with h5py.File(pfile, "a") as f:
            f["f0"] = np.zeros((N, C))
            f["labels"] = np.argmax(z + rng.gumbel(size=z.shape), axis=1).astype(np.int64)
        common = ["--loss", "xent:lambda=1", "--method", "newton", "--tol", "1e-8",
                  "--newton-rank", "8"]
        code, ref, err = self.run_solve(pfile, "ref.h5", *common)
        self.assertEqual(code, 0, err)
        cp = self.path("cp.h5")
        proc = subprocess.Popen([T.ATF, "solve", pfile, "-o", self.path("part.h5"), *common,
                                 "--checkpoint", cp, "--log-every", "1"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        rows = 0
        for line in proc.stderr:  # the table's rows: stop inside step 4 (its CG: 0.1-0.5 s)
            fields = line.split()
            rows += len(fields) == 9 and fields[0].isdigit()
            if rows == 5:
                time.sleep(0.05)
                proc.send_signal(signal.SIGINT)
                break
        _, err = proc.communicate(timeout=120)
        if rows < 4 or proc.returncode == 0:
            self.skipTest("the solve ended before the interrupt")
        self.assertEqual(proc.returncode, 130, err)
        self.assertTrue(os.path.exists(cp), "no state kept at the interrupt")
        attrs, _ = T.read_result(self.path("part.h5"))  # the top of the step it stopped in
        self.assertEqual(attrs["status"], "interrupted")
        code, out, err = T.run("solve", pfile, "-o", self.path("res.h5"), *common,
                               "--checkpoint", cp, "--json")
        self.assertEqual(code, 0, err)
        js = json.loads(out.splitlines()[-1])
        resumed = re.search(r"resumed from a checkpoint at step (\d+)", err)
        self.assertTrue(resumed and int(resumed.group(1)) >= 4, err)
        for key in ("iterations", "inner_iterations", "operator_passes", "objective",
                    "pg_residual", "status"):
            self.assertEqual(js[key], ref[key], key)
        want, got = self.blocks("ref.h5"), self.blocks("res.h5")
        for k in want:
            self.assertTrue(np.array_equal(want[k], got[k]), k)


if __name__ == "__main__":
    import unittest
    unittest.main(argv=sys.argv[:1])
