"""The same problem in every operator form, with and without the subspace reduction, with two
outputs, and with rank-deficient or inconsistent constraints."""
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import atf_testlib as T  # noqa: E402


class Case(T.ScratchCase):
    def solve(self, problem, *args, expect=0, name="p"):
        pfile = problem.write(os.path.join(self.dir, name + ".h5"))
        out = os.path.join(self.dir, name + "_r.h5")
        code, js, err = T.solve_json("solve", pfile, "-o", out, *args)
        self.assertEqual(code, expect, err)
        attrs, blocks = T.read_result(out)
        return js, attrs, T.stacked(blocks, problem)


def duplicate_example(problem, i, j, shift=0.0):
    """Make example j a copy of example i (H rows, D rows, r), r optionally shifted."""
    C = problem.C
    for b in problem.blocks:
        b.H[j] = b.H[i]
        b.D[j * C:(j + 1) * C] = b.D[i * C:(i + 1) * C]
    problem.r[j * C:(j + 1) * C] = problem.r[i * C:(i + 1) * C] + shift
    return problem


class OperatorForms(Case):
    def test_dense_sparse_factored_agree_two_outputs(self):
        rng = np.random.default_rng(21)
        base = T.factored_problem(rng, 7, 2, [(6, 4), (4, 2)], penalty="sq:scale=0.1")
        results = {}
        for op in ("factored", "dense", "sparse"):
            js, attrs, x = self.solve(base.with_op(op), "--tol", "1e-10", name=op)
            self.assertEqual(attrs["status"], "solved")
            self.assertLess(js["constraint_residual"], 1e-12)
            results[op] = (js, x)
        ref = results["factored"][1]
        for op in ("dense", "sparse"):
            self.assertLess(np.linalg.norm(results[op][1] - ref), 1e-6 * np.linalg.norm(ref), op)
            self.assertAlmostEqual(results[op][0]["objective"], results["factored"][0]["objective"],
                                   delta=1e-9 * results["factored"][0]["objective"])

    def test_mixed_operator_forms(self):
        rng = np.random.default_rng(22)
        base = T.factored_problem(rng, 6, 2, [(5, 4), (4, 3), (3, 2)], penalty="nuclear:scale=0.2")
        mixed = T.Problem(base.N, base.C, base.r, [base.blocks[0].as_op("dense", 2),
                                                   base.blocks[1].as_op("sparse", 2),
                                                   base.blocks[2]])
        a, _, xa = self.solve(base, "--tol", "1e-11", "--eps-abs", "1e-13", name="fact")
        b, _, xb = self.solve(mixed, "--tol", "1e-11", "--eps-abs", "1e-13", name="mixed")
        self.assertAlmostEqual(a["objective"], b["objective"], delta=1e-8 * a["objective"])
        self.assertLess(np.linalg.norm(xa - xb), 1e-6 * np.linalg.norm(xa))

    def test_sparse_matrix_with_structure(self):
        # a genuinely sparse Jacobian (CHOLMOD path), compared with the dense form
        rng = np.random.default_rng(23)
        M, P, Q = 8, 6, 5
        J = rng.standard_normal((M, P * Q)) * (rng.random((M, P * Q)) < 0.3)
        block = T.Block("S", P, Q, "zsq:scale=0.05", "matrix", "sparse", J=J)
        sparse = T.Problem(M, 1, rng.standard_normal(M), [block])
        dense = T.Problem(M, 1, sparse.r, [block.as_op("dense", 1)])
        a, _, xa = self.solve(sparse, "--tol", "1e-10", name="s")
        b, _, xb = self.solve(dense, "--tol", "1e-10", name="d")
        code, _, err = T.run("solve", os.path.join(self.dir, "s.h5"), "-o",
                             os.path.join(self.dir, "v.h5"))
        self.assertIn("projection by CHOLMOD, rank 8", err)
        self.assertLess(np.linalg.norm(xa - xb), 1e-6 * np.linalg.norm(xb))
        self.assertLess(np.linalg.norm(J @ xa - sparse.r), 1e-12 * np.linalg.norm(sparse.r))


class Reduction(Case):
    def test_reduce_on_off_same_answer_wide_layers(self):
        rng = np.random.default_rng(24)
        for penalty in ("sq:scale=0.05", "nuclear", "abs:scale=0.1"):
            problem = T.factored_problem(rng, 5, 2, [(24, 18), (18, 3)], penalty=penalty)
            pfile = problem.write(os.path.join(self.dir, "w.h5"))
            code, out, err = T.run("solve", pfile, "-o", os.path.join(self.dir, "w_r.h5"),
                                   "--tol", "1e-10", "--eps-abs", "1e-12", "--json")
            self.assertEqual(code, 0, err)
            # the header reports the core size: rank(H) ≤ N = 5 rows, rank(D) ≤ M = 10 columns
            self.assertIn("variables (486 before reduction)", err)
            n_core = int(err.split(" variables (")[0].split()[-1])
            self.assertLessEqual(n_core, 5 * 10 + 5 * 3)
            on, _, x_on = self.solve(problem, "--tol", "1e-10", "--eps-abs", "1e-12", name="on")
            off, _, x_off = self.solve(problem, "--tol", "1e-10", "--eps-abs", "1e-12",
                                       "--no-reduce", name="off")
            self.assertAlmostEqual(on["objective"], off["objective"],
                                   delta=1e-7 * on["objective"], msg=penalty)
            self.assertLess(np.linalg.norm(x_on - x_off), 1e-6 * np.linalg.norm(x_off), penalty)
            self.assertLess(on["constraint_residual"], 1e-12)

    def test_rank_deficient_layer_inputs(self):
        # H of rank 2 < min(N, P): the reduction keeps only rank(H) columns of the core
        rng = np.random.default_rng(25)
        problem = T.factored_problem(rng, 8, 1, [(10, 6)], penalty="sq", rank_H=2)
        # r must lie in range(A): take it from a random B
        problem.r = problem.A() @ rng.standard_normal(60)
        on, _, x_on = self.solve(problem, "--tol", "1e-10", name="on")
        off, _, x_off = self.solve(problem, "--tol", "1e-10", "--no-reduce", name="off")
        self.assertLess(np.linalg.norm(x_on - x_off), 1e-6 * np.linalg.norm(x_off))
        self.assertLess(on["constraint_residual"], 1e-10)


class RankDeficiency(Case):
    def check_consistent(self, problem, *args):
        A = problem.A()
        self.assertLess(np.linalg.matrix_rank(A), A.shape[0])
        js, attrs, x = self.solve(problem, "--tol", "1e-9", *args)
        self.assertEqual(attrs["status"], "solved")
        self.assertLess(js["constraint_residual"], 1e-10)
        self.assertLess(js["ls_residual"], 1e-10)
        self.assertTrue(np.all(np.isfinite(x)))
        return js, x

    def test_duplicate_examples_consistent(self):
        rng = np.random.default_rng(26)
        problem = duplicate_example(T.factored_problem(rng, 9, 2, [(7, 5), (5, 2)]), 2, 6)
        js, x = self.check_consistent(problem)
        # same answer in the dense form (another Gram path, same rank deficiency)
        js2, x2 = self.check_consistent(problem.with_op("dense"))
        self.assertLess(np.linalg.norm(x - x2), 1e-6 * np.linalg.norm(x))

    def test_sparse_rank_deficient_consistent(self):
        rng = np.random.default_rng(27)
        problem = duplicate_example(T.factored_problem(rng, 8, 1, [(6, 5)]), 1, 4)
        self.check_consistent(problem.with_op("sparse"))
        # CHOLMOD sees the singular AAᵀ and hands over to the rank-revealing path (rank 7 of 8)
        code, _, err = T.run("solve", os.path.join(self.dir, "p.h5"), "-o",
                             os.path.join(self.dir, "v.h5"))
        self.assertEqual(code, 0, err)
        self.assertIn("projection by eigendecomposition, rank 7", err)

    def test_inconsistent_constraints(self):
        rng = np.random.default_rng(28)
        for op in ("factored", "sparse"):
            problem = duplicate_example(T.factored_problem(rng, 8, 2, [(6, 5), (5, 2)]), 1, 5,
                                        shift=0.5)
            problem = problem.with_op(op)
            js, attrs, x = self.solve(problem, expect=3, name=op)
            self.assertEqual(attrs["status"], "infeasible")
            self.assertTrue(np.all(np.isfinite(x)))
            for key in ("objective", "constraint_residual", "stationarity", "ls_residual"):
                self.assertTrue(np.isfinite(js[key]), key)
            A = problem.A()
            x_ls = np.linalg.lstsq(A, problem.r, rcond=None)[0]  # min-norm least squares
            ls = np.linalg.norm(A @ x_ls - problem.r) / np.linalg.norm(problem.r)
            self.assertGreater(js["ls_residual"], 1e-3)
            self.assertAlmostEqual(js["ls_residual"], ls, delta=1e-8)
            self.assertLess(np.linalg.norm(x - x_ls), 1e-8 * np.linalg.norm(x_ls), op)
            # the baseline command agrees
            pfile = os.path.join(self.dir, op + ".h5")
            code, bj, err = T.solve_json("baseline", pfile, "-o", os.path.join(self.dir, "b.h5"))
            self.assertEqual(code, 3, err)
            self.assertEqual(bj["status"], "infeasible")


if __name__ == "__main__":
    unittest.main()
