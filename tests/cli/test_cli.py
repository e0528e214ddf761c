"""End-to-end tests of the `atf` binary's common contract: help, dispatch, exit codes, and
`atf penalty` against an independent brute-force computation with numpy/scipy."""
import csv
import io
import os
import subprocess
import sys
import unittest

import numpy as np
from scipy.optimize import minimize_scalar

ATF = os.environ.get("ATF", "build/drivers/atf")


def run(*args):
    p = subprocess.run([ATF, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def omega_tilde_ref(omega, v):
    """min_{z>=1} omega(z) + v^2/z^2 by a dense log grid, then bounded refinement."""
    z = np.geomspace(1.0, 1e4, 20001)
    f = omega(z) + v * v / z**2
    j = int(np.argmin(f))
    lo, hi = z[max(j - 1, 0)], z[min(j + 1, len(z) - 1)]
    if hi <= lo:
        return f[j]
    r = minimize_scalar(lambda s: omega(s) + v * v / s**2, bounds=(lo, hi),
                        method="bounded", options={"xatol": 1e-13})
    return min(r.fun, f[j])


class HelpAndDispatch(unittest.TestCase):
    def test_top_help(self):
        code, out, _ = run("--help")
        self.assertEqual(code, 0)
        for cmd in ("solve", "baseline", "penalty", "features", "kernel"):
            self.assertIn(cmd, out)

    def test_no_args_and_unknown(self):
        self.assertEqual(run()[0], 2)
        code, _, err = run("frobnicate")
        self.assertEqual(code, 2)
        self.assertIn("frobnicate", err)

    def test_every_command_has_help(self):
        _, out, _ = run("--help")
        section = out.split("commands:\n", 1)[1].split("\n\n", 1)[0]
        cmds = [l.split()[0] for l in section.splitlines() if l.strip()]
        self.assertGreaterEqual(len(cmds), 5)
        for c in cmds:
            code, text, _ = run(c, "--help")
            self.assertEqual(code, 0, c)
            self.assertIn("usage", text.lower(), c)


class CliReference(unittest.TestCase):
    def test_docs_cli_is_current(self):
        """docs/cli.md is generated from the --help texts; it must match the binary."""
        root = os.environ.get("ATF_SOURCE_ROOT", ".")
        gen = subprocess.run(["bash", os.path.join(root, "scripts", "gen_cli_doc.sh"), ATF],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(gen.returncode, 0, gen.stderr)
        with open(os.path.join(root, "docs", "cli.md"), encoding="utf-8") as f:
            committed = f.read()
        self.assertEqual(committed, gen.stdout,
                         "docs/cli.md is stale: run bash scripts/gen_cli_doc.sh > docs/cli.md")


class PenaltyCommand(unittest.TestCase):
    def table(self, *args):
        code, out, err = run("penalty", *args)
        self.assertEqual(code, 0, err)
        rows = list(csv.reader(io.StringIO(out)))
        self.assertEqual(rows[0], ["v", "omega_tilde", "z", "prox", "s1", "s2"])
        return np.array([[float(x) for x in r] for r in rows[1:]])

    def test_sq_matches_brute_force(self):
        t = self.table("sq", "--from", "0", "--to", "6", "--num", "25")
        self.assertEqual(t.shape, (25, 6))
        for v, val, z, prox, s1, s2 in t:
            ref = omega_tilde_ref(lambda s: (s - 1.0) ** 2, v)
            self.assertAlmostEqual(val, ref, delta=1e-9 * max(1.0, ref))
            self.assertAlmostEqual((z - 1) ** 2 + v * v / z**2, val, delta=1e-9 * max(1, val))
            self.assertAlmostEqual(s1 * s2, z, delta=1e-12 * z)
            self.assertTrue(0.0 <= prox <= v + 1e-15)

    def test_prox_is_global_minimiser(self):
        # prox_{t w~}(v) minimises t*w~(d) + (d-v)^2/2; check against a dense grid in d
        t = self.table("abs", "--from", "0.5", "--to", "8", "--num", "7", "--t", "0.7")
        omega = lambda s: np.abs(s - 1.0)
        for v, _, _, prox, _, _ in t:
            d = np.linspace(0, v, 801)
            obj = np.array([0.7 * omega_tilde_ref(omega, x) for x in d]) + 0.5 * (d - v) ** 2
            mine = 0.7 * omega_tilde_ref(omega, prox) + 0.5 * (prox - v) ** 2
            self.assertLessEqual(mine, obj.min() + 1e-8)

    def test_zsq_closed_form(self):
        g = 0.25
        t = self.table("zsq:scale=0.25", "--from", "0", "--to", "3", "--num", "31")
        for v, val, *_ in t:
            ref = v * v if v <= np.sqrt(g) else 2 * np.sqrt(g) * v - g
            self.assertAlmostEqual(val, ref, delta=1e-12 * max(1, ref))

    def test_nuclear_prox_soft_threshold(self):
        t = self.table("nuclear:scale=4", "--from", "0", "--to", "10", "--num", "11", "--t", "0.5")
        for v, val, _, prox, *_ in t:
            self.assertAlmostEqual(val, 4.0 * v, delta=1e-12 * max(1, v))
            self.assertAlmostEqual(prox, max(v - 2.0, 0.0), delta=1e-12 * max(1, v))

    def test_log_grid(self):
        t = self.table("sq", "--from", "1e-3", "--to", "1e3", "--num", "7", "--log")
        np.testing.assert_allclose(t[:, 0], np.geomspace(1e-3, 1e3, 7), rtol=1e-12)

    def test_bad_input(self):
        for args, word in [
            (["penalty", "bogus"], "bogus"),
            (["penalty", "pow:p=-1"], "p"),
            (["penalty", "sq:scale=0"], "scale"),
            (["penalty", "nuclear+sq"], "nuclear"),
            (["penalty", "sq", "--num", "x"], "--num"),
            (["penalty", "sq", "--from", "0", "--log"], "--log"),
            (["penalty", "sq", "--t", "0"], "--t"),
            (["penalty"], "SPEC"),
        ]:
            code, out, err = run(*args)
            self.assertEqual(code, 2, args)
            self.assertEqual(out, "", args)
            self.assertEqual(len(err.strip().splitlines()), 1, (args, err))
            self.assertIn(word, err, args)


class BalancedPenalty(unittest.TestCase):
    """`balanced` (ω = γ(z² − 1 − 2 ln z)) through the binary: its closed form, the split of
    `balanced+balanced` (s1 = s2, s² = 1 + σ², v = σ(1 + σ²) at γ = 1), and a certified solve."""

    table = PenaltyCommand.table

    def test_closed_form(self):
        g = 0.25
        for v, val, z, *_ in self.table("balanced:scale=0.25", "--from", "0", "--to", "40",
                                        "--num", "41"):
            u = (1 + np.sqrt(1 + 4 * v * v / g)) / 2
            self.assertAlmostEqual(z * z, u, delta=1e-12 * u)
            self.assertAlmostEqual(val, g * (2 * (u - 1) - np.log(u)), delta=1e-12 * max(1, val))

    def test_two_sided_split(self):
        for v, val, z, _, s1, s2 in self.table("balanced+balanced", "--from", "0", "--to", "30",
                                               "--num", "31"):
            sigma = v / z
            self.assertAlmostEqual(s1, s2, delta=1e-12 * s1)
            self.assertAlmostEqual(s1 * s1, 1 + sigma * sigma, delta=1e-12 * s1 * s1)
            self.assertAlmostEqual(v, sigma * (1 + sigma * sigma), delta=1e-12 * max(1, v))
            self.assertAlmostEqual(val, 3 * sigma**2 - 2 * np.log1p(sigma**2),
                                   delta=1e-12 * max(1, val))

    def test_solve_is_certified(self):
        import json
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            prob = os.path.join(tmp, "p.h5")
            code, _, err = run("features", "--data", "synthetic:d=4", "--n-train", "10",
                               "--n-test", "3", "--widths", "4,6,1", "-o", prob)
            self.assertEqual(code, 0, err)
            objectives = []
            for method in ("admm", "irls"):
                code, out, err = run("solve", prob, "-o", os.path.join(tmp, method + ".h5"),
                                     "--penalty", "balanced+balanced", "--method", method,
                                     "--quiet", "--json")
                self.assertEqual(code, 0, err)
                js = json.loads(out)
                self.assertEqual(js["status"], "solved")
                self.assertLess(js["stationarity"], 1e-5)
                self.assertLess(js["constraint_residual"], 1e-12)
                objectives.append(js["objective"])
            self.assertAlmostEqual(objectives[0], objectives[1], delta=1e-8 * objectives[0])


class MethodTable(unittest.TestCase):
    """`atf methods` prints the library's method table; --method, --linsys and --precond are
    read from it and from the solver's names; a result names the linear-system backend."""

    NAMES = ["admm", "lp", "baseline", "fista", "irls", "newton", "alm", "cg", "factored"]

    def test_methods_json(self):
        import json
        code, out, err = run("methods", "--json")
        self.assertEqual(code, 0, err)
        rows = json.loads(out)
        self.assertEqual([r["name"] for r in rows], self.NAMES)
        by = {r["name"]: r for r in rows}
        self.assertEqual({n for n, r in by.items() if r["penalized"]},
                         {"fista", "newton", "factored"})
        self.assertEqual({n for n, r in by.items() if r["baseline"]}, {"baseline", "cg"})
        self.assertEqual({n for n, r in by.items() if r["resumable"]},
                         {"admm", "newton", "alm", "cg", "factored"})
        self.assertEqual(by["irls"]["warm"], "refused")
        self.assertEqual(by["admm"]["processes"], "gram")
        for r in rows:
            self.assertTrue(r["summary"])
        code, text, _ = run("methods")
        self.assertEqual(code, 0)
        for n in self.NAMES:
            self.assertIn(n, text)
        self.assertEqual(run("methods", "extra")[0], 2)

    def test_options_from_the_table(self):
        import json
        import tempfile
        code, _, err = run("solve", "x.h5", "-o", "y.h5", "--method", "nope")
        self.assertEqual(code, 2)
        self.assertIn("is not one of auto, " + ", ".join(self.NAMES), err)
        code, _, err = run("path", "x.h5", "--loss", "xent", "--lambdas", "1", "-o", "d",
                           "--method", "admm")
        self.assertEqual(code, 2)
        self.assertIn("is not one of auto, fista, newton", err)
        for opt, val in (("--linsys", "gram"), ("--precond", "default"),
                         ("--memory-fraction", "0"), ("--gram-max-rows", "-3")):
            code, _, err = run("solve", "x.h5", "-o", "y.h5", opt, val)
            self.assertEqual(code, 2, (opt, val))
            self.assertIn(opt, err)
        with tempfile.TemporaryDirectory() as tmp:
            prob = os.path.join(tmp, "p.h5")
            code, _, err = run("features", "--data", "synthetic:d=4", "--n-train", "10",
                               "--n-test", "3", "--widths", "4,6,1", "-o", prob)
            self.assertEqual(code, 0, err)
            seen = {}
            for linsys in ("auto", "direct", "pcg"):
                code, out, err = run("solve", prob, "-o", os.path.join(tmp, linsys + ".h5"),
                                     "--linsys", linsys, "--quiet", "--json")
                self.assertEqual(code, 0, err)
                js = json.loads(out)
                seen[linsys] = js["linsys"]
                self.assertEqual(js["status"], "solved")
            self.assertEqual(seen, {"auto": "cholesky", "direct": "cholesky", "pcg": "pcg"})
            code, out, err = run("baseline", prob, "-o", os.path.join(tmp, "b.h5"), "--method",
                                 "cg", "--precond", "jacobi", "--quiet", "--json")
            self.assertEqual(code, 0, err)
            js = json.loads(out)
            self.assertTrue(js["method_note"].startswith("cg: jacobi preconditioner"), js)
            code, _, err = run("baseline", prob, "-o", os.path.join(tmp, "g.h5"), "--method",
                               "gram", "--gram-max-rows", "5", "--quiet")
            self.assertEqual(code, 0, err)  # asked for by name: the Gram whatever the bound
            code, out, err = run("baseline", prob, "-o", os.path.join(tmp, "a.h5"),
                                 "--gram-max-rows", "5", "--quiet", "--json")
            self.assertEqual(code, 0, err)
            self.assertEqual(json.loads(out)["method"], "cg")  # auto: above the bound, CG


if __name__ == "__main__":
    unittest.main(verbosity=2)
