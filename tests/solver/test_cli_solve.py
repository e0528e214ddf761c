"""The command-line contract of `atf solve` and `atf baseline` (docs/formats.md): exit codes, JSON line,
warm starts, iteration limit, SIGINT, refusals, and that no half-written file is ever left."""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import atf_testlib as T  # noqa: E402

KEYS = ("status", "objective", "iterations", "primal_residual", "dual_residual",
        "constraint_residual", "stationarity", "seconds", "method", "structure", "ls_residual",
        "setup_seconds", "projection_seconds", "prox_seconds", "other_seconds")


class Cli(T.ScratchCase):
    def setUp(self):
        super().setUp()
        rng = np.random.default_rng(31)
        self.problem = T.factored_problem(rng, 10, 2, [(8, 6), (6, 2)], penalty="sq:scale=0.01")
        self.pfile = self.problem.write(self.path("p.h5"))

    def read(self, name, mode="rb"):
        with open(self.path(name), mode) as f:
            return f.read()

    def files(self):
        return sorted(os.listdir(self.dir))

    def test_help(self):
        for cmd in ("solve", "baseline"):
            code, out, _ = T.run(cmd, "--help")
            self.assertEqual(code, 0)
            self.assertIn("usage: atf " + cmd, out)

    def test_solved_means_certified(self):
        """ADMM says `solved` only with a certificate ≤ --tol: where the residual test passes
        first (here the nuclear penalty at --tol 1e-4, 7 of 12 problems), the tolerances tighten
        and the run goes on, saying so in its table."""
        tightened = 0
        for seed in range(12):
            p = T.factored_problem(np.random.default_rng(seed), 12, 2, [(8, 6), (6, 2)],
                                   penalty="nuclear")
            pfile = p.write(self.path(f"n{seed}.h5"))
            code, out, err = T.run("solve", pfile, "-o", self.path(f"r{seed}.h5"), "--method",
                                   "admm", "--tol", "1e-4", "--json")
            self.assertEqual(code, 0, err)
            js = json.loads(out.strip().splitlines()[-1])
            self.assertEqual(js["status"], "solved", err)
            self.assertLessEqual(js["stationarity"], 1e-4, f"seed {seed}: {err}")
            tightened += "tolerances tightened" in err
        self.assertGreater(tightened, 0)

    def test_json_line_and_result_file(self):
        out = self.path("r.h5")
        code, stdout, stderr = T.run("solve", self.pfile, "-o", out, "--json")
        self.assertEqual(code, 0, stderr)
        lines = stdout.strip().splitlines()
        self.assertEqual(len(lines), 1)
        js = json.loads(lines[0])
        for key in KEYS:
            self.assertIn(key, js)
        self.assertEqual(js["status"], "solved")
        self.assertEqual(js["method"], "admm")
        # table and summary on stderr
        self.assertIn("iter", stderr)
        self.assertIn("status solved", stderr)
        attrs, _ = T.read_result(out)
        self.assertEqual(attrs["status"], "solved")
        self.assertEqual(attrs["iterations"], js["iterations"])
        self.assertAlmostEqual(attrs["objective"], js["objective"], delta=0)
        # --quiet: nothing on stderr
        code, _, stderr = T.run("solve", self.pfile, "-o", out, "--quiet")
        self.assertEqual(code, 0)
        self.assertEqual(stderr, "")

    def test_warm_start_needs_fewer_iterations(self):
        first = self.path("first.h5")
        code, cold, err = T.solve_json("solve", self.pfile, "-o", first, "--tol", "1e-6")
        self.assertEqual(code, 0, err)
        code, warm, err = T.solve_json("solve", self.pfile, "-o", self.path("second.h5"),
                                       "--tol", "1e-8", "--warm", first)
        self.assertEqual(code, 0, err)
        code, cold8, err = T.solve_json("solve", self.pfile, "-o", self.path("third.h5"),
                                        "--tol", "1e-8")
        self.assertGreater(cold8["iterations"], 5)
        self.assertLess(warm["iterations"], cold8["iterations"])
        self.assertAlmostEqual(warm["objective"], cold8["objective"],
                               delta=1e-8 * cold8["objective"])

    def test_warm_start_must_fit(self):
        other = T.factored_problem(np.random.default_rng(1), 10, 2, [(5, 6), (6, 2)])
        ofile = other.write(self.path("other.h5"))
        code, _, err = T.run("solve", ofile, "-o", self.path("o.h5"), "--quiet")
        self.assertEqual(code, 0, err)
        code, _, err = T.run("solve", self.pfile, "-o", self.path("x.h5"), "--warm",
                             self.path("o.h5"))
        self.assertEqual(code, 2)
        self.assertIn("o.h5", err)  # the message names the warm-start file
        self.assertNotIn("x.h5", self.files())

    def test_iteration_limit(self):
        out = self.path("r.h5")
        code, js, err = T.solve_json("solve", self.pfile, "-o", out, "--max-iter", "2",
                                     "--tol", "1e-12")
        self.assertEqual(code, 4, err)
        self.assertEqual(js["status"], "max_iterations")
        self.assertEqual(js["iterations"], 2)
        attrs, blocks = T.read_result(out)
        self.assertEqual(attrs["status"], "max_iterations")
        x = T.stacked(blocks, self.problem)
        self.assertTrue(np.all(np.isfinite(x)))
        # the last iterate is the feasible X
        A = self.problem.A()
        r = self.problem.r
        self.assertLess(np.linalg.norm(A @ x - r), 1e-12 * np.linalg.norm(r))

    def test_lp_refused_for_other_structures_and_penalties(self):
        out = self.path("r.h5")
        code, _, err = T.run("solve", self.pfile, "-o", out, "--method", "lp")
        self.assertEqual(code, 2)
        self.assertIn("diagonal", err)
        code, _, err = T.run("solve", self.pfile, "-o", out, "--method", "lp", "--structure",
                             "diagonal")
        self.assertEqual(code, 2)
        self.assertIn("nuclear", err)
        self.assertNotIn("r.h5", self.files())

    def test_bad_input_and_usage(self):
        out = self.path("r.h5")
        cases = [
            (("solve", self.path("missing.h5"), "-o", out), "missing.h5"),
            (("solve", self.pfile, "-o", out, "--penalty", "bogus"), "bogus"),
            (("solve", self.pfile, "-o", out, "--structure", "banded"), "banded"),
            (("solve", self.pfile, "-o", out, "--max-iter", "0"), "--max-iter"),
            (("solve", self.pfile, "-o", out, "--alpha", "2.5"), "alpha"),
            (("solve", self.pfile, "-o", out, "--frobnicate"), "frobnicate"),
            (("solve", self.pfile), "-o"),
            (("solve", self.pfile, "-o", self.path("nodir/r.h5")), "nodir"),
            # the files a run may write later are checked before it starts, as -o is
            (("solve", self.pfile, "-o", out, "--checkpoint", self.path("nodir/ck.h5")),
             "nodir/ck.h5"),
            (("solve", self.pfile, "-o", out, "--method", "admm", "--precond-file",
              self.path("nodir/pf.h5")), "nodir/pf.h5"),
            (("baseline", self.pfile, "-o", out, "--method", "cg", "--checkpoint",
              self.path("nodir/ck.h5")), "nodir/ck.h5"),
            (("baseline", self.pfile, "-o", out, "--tol", "1e-3"), "--tol"),
        ]
        for args, needle in cases:
            code, _, err = T.run(*args)
            self.assertEqual(code, 2, args)
            self.assertIn(needle, err, args)
        # a truncated problem file: the message names the file
        data = self.read("p.h5")
        with open(self.path("cut.h5"), "wb") as f:
            f.write(data[: len(data) // 2])
        code, _, err = T.run("solve", self.path("cut.h5"), "-o", out)
        self.assertEqual(code, 2)
        self.assertIn("cut.h5", err)
        self.assertEqual(self.files(), ["cut.h5", "p.h5"])  # no output, no temporary left over

    def test_failure_keeps_an_existing_output(self):
        out = self.path("r.h5")
        code, _, _ = T.run("solve", self.pfile, "-o", out, "--quiet")
        self.assertEqual(code, 0)
        before = self.read("r.h5")
        code, _, _ = T.run("solve", self.pfile, "-o", out, "--method", "lp")
        self.assertEqual(code, 2)
        self.assertEqual(self.read("r.h5"), before)

    def test_full_structure_needs_one_penalty(self):
        problem = T.factored_problem(np.random.default_rng(2), 6, 1, [(4, 3), (3, 1)])
        problem.blocks[1].penalty = "abs"
        pfile = problem.write(self.path("mixed.h5"))
        code, _, err = T.run("solve", pfile, "-o", self.path("r.h5"), "--structure", "full")
        self.assertEqual(code, 2)
        self.assertIn("different penalties", err)
        code, js, err = T.solve_json("solve", pfile, "-o", self.path("r.h5"), "--structure",
                                     "full", "--penalty", "abs")
        self.assertEqual(code, 0, err)
        self.assertEqual(js["structure"], "full")

    def test_baseline(self):
        out = self.path("b.h5")
        code, js, err = T.solve_json("baseline", self.pfile, "-o", out)
        self.assertEqual(code, 0, err)
        self.assertEqual(js["method"], "baseline")
        self.assertEqual(js["iterations"], 0)
        x = T.stacked(T.read_result(out)[1], self.problem)
        ref = np.linalg.lstsq(self.problem.A(), self.problem.r, rcond=None)[0]
        self.assertLess(np.linalg.norm(x - ref), 1e-12 * np.linalg.norm(ref))
        with h5py.File(out, "r") as f:
            self.assertEqual(f.attrs["method"], "baseline")

    def test_sigint_writes_the_last_iterate(self):
        rng = np.random.default_rng(33)
        big = T.factored_problem(rng, 40, 2, [(60, 40), (40, 2)], penalty="nuclear")
        pfile = big.write(self.path("big.h5"))
        out = self.path("int.h5")
        log = open(self.path("log.txt"), "w")
        # tolerances no run can meet: only SIGINT ends it
        proc = subprocess.Popen([T.ATF, "solve", pfile, "-o", out, "--tol", "0", "--eps-abs",
                                 "1e-300", "--max-iter", "1000000000", "--log-every", "1",
                                 "--json"], stdout=subprocess.PIPE, stderr=log, text=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            with open(self.path("log.txt")) as f:
                if sum(1 for _ in f) > 20:  # header lines and table rows: the loop runs
                    break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=60)
        log.close()
        self.assertEqual(proc.returncode, 130, self.read("log.txt", "r")[-2000:])
        js = json.loads(stdout.strip().splitlines()[-1])
        self.assertEqual(js["status"], "interrupted")
        self.assertGreater(js["iterations"], 0)
        attrs, blocks = T.read_result(out)
        self.assertEqual(attrs["status"], "interrupted")
        x = T.stacked(blocks, big)
        self.assertTrue(np.all(np.isfinite(x)))
        A = big.A()
        self.assertLess(np.linalg.norm(A @ x - big.r), 1e-10 * np.linalg.norm(big.r))
        self.assertNotIn("tmp", " ".join(self.files()))

    def test_sigint_before_any_watch_is_exit_130(self):
        """A Ctrl-C that comes before a command watches for it (here `atf features`, which
        never does) ends the run with exit 130 and no output, not death by the signal."""
        out = self.path("big.h5")
        proc = subprocess.Popen([T.ATF, "features", "--data", "synthetic", "--n-train", "200000",
                                 "--n-test", "0", "-o", out], stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)  # past the dynamic loader, into the command
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 130, err[-2000:])
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
