"""The penalized problem (16) against references computed here, through the penalized_driver.

Usage: test_penalized_refs.py PENALIZED_DRIVER SCRATCH_DIR

- nuclear norm with a squared loss: min Σ 2√γ‖B_ℓ‖_* + (1/2λ)‖A vec B − r‖² as a cvxopt cone
  program (the semidefinite embedding of tests/solver/cone_refs.py, the quadratic loss in the
  objective of coneqp), on factored blocks with C = 2 and on dense + sparse blocks;
- softmax cross-entropy with the Frobenius (`fixed`) and nuclear penalties: a long numpy
  proximal-gradient run on the dense A (own softmax, own SVD soft-threshold), C = 3, with /f0
  and /labels written by h5py.
Both to 1e-6 relative objective, by FISTA and by Newton, and the B the driver returns must
reproduce its objective."""
import json
import os
import subprocess
import sys
import unittest

import h5py
import numpy as np
from cvxopt import matrix, solvers, spmatrix

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atf_testlib import Problem, factored_problem  # noqa: E402
from cone_refs import OPTIONS, _cones, _split  # noqa: E402

DRIVER = sys.argv[1] if len(sys.argv) > 1 else "build/tests/solver/penalized_driver"
SCRATCH = sys.argv[2] if len(sys.argv) > 2 else "/tmp/atf_penalized_refs"


METHODS = ("fista", "newton")


def run_driver(path, loss, penalty="-", eps="1e-10", method="fista"):
    p = subprocess.run([DRIVER, path, loss, penalty, eps, method], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, (p.returncode, p.stderr)
    return json.loads(p.stdout)


def stacked(out, problem):
    return np.concatenate([np.asarray(out["blocks"][b.name]) for b in problem.blocks])


def nuclear_squared_reference(A, r, shapes, gamma, lam):
    """min Σ 2√γ ½(tr W1 + tr W2) + (1/2λ)‖A x − r‖² over x = vec B and the embeddings."""
    nB = sum(P * Q for P, Q in shapes)
    G_rows, G_cols, G_vals, trace, dims, nrows, nx = _cones(shapes, nB, nB)
    Pm = np.zeros((nx, nx))
    Pm[:nB, :nB] = A.T @ A / lam
    q = np.zeros(nx)
    q[:nB] = -A.T @ r / lam
    q[trace] = np.sqrt(gamma)
    G = spmatrix(G_vals, G_rows, G_cols, (nrows, nx))
    solvers.options.update(OPTIONS)
    sol = solvers.coneqp(matrix(Pm), matrix(q), G, matrix(0.0, (nrows, 1)),
                         {"l": 0, "q": [], "s": dims})
    assert sol["status"] == "optimal", sol["status"]
    x = np.array(sol["x"]).ravel()
    value = 0.5 * x @ Pm @ x + q @ x + r @ r / (2 * lam)
    return _split(x[:nB], shapes), value


def nuclear_value(x, shapes, gamma):
    return sum(2 * np.sqrt(gamma) * np.linalg.svd(B, compute_uv=False).sum()
               for B in _split(x, shapes))


def xent(A, x, f0, labels, C, lam):
    z = (A @ x).reshape(-1, C) + f0
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    n = len(labels)
    value = -np.log(p[np.arange(n), labels]).sum() / lam
    p[np.arange(n), labels] -= 1.0
    return value, A.T @ p.ravel() / lam


def prox(x, shapes, t, gamma, nuclear):
    if not nuclear:
        return x / (1 + 2 * t)
    out = []
    for B in _split(x, shapes):
        U, s, Vt = np.linalg.svd(B, full_matrices=False)
        out.append(((U * np.maximum(s - 2 * np.sqrt(gamma) * t, 0)) @ Vt).ravel())
    return np.concatenate(out)


class PenalizedReferences(unittest.TestCase):
    def path(self, name):
        os.makedirs(SCRATCH, exist_ok=True)
        return os.path.join(SCRATCH, name)

    def check_nuclear_squared(self, prob, name, gamma, lam):
        path = prob.write(self.path(name))
        spec = f"nuclear:scale={gamma}"
        shapes = [(b.rows, b.cols) for b in prob.blocks]
        A = prob.A()
        _, ref = nuclear_squared_reference(A, prob.r, shapes, gamma, lam)
        for method in METHODS:
            with self.subTest(method=method):
                out = run_driver(path, f"squared:lambda={lam}", spec, method=method)
                self.check_nuclear_answer(out, prob, A, shapes, gamma, lam, ref)

    def check_nuclear_answer(self, out, prob, A, shapes, gamma, lam, ref):
        self.assertEqual(out["status"], "solved")
        self.assertLess(abs(out["objective"] - ref) / ref, 1e-6, (out["objective"], ref))
        x = stacked(out, prob)
        mine = nuclear_value(x, shapes, gamma) + np.sum((A @ x - prob.r) ** 2) / (2 * lam)
        self.assertLess(abs(mine - out["objective"]) / ref, 1e-9)
        self.assertLess(out["duality_gap"], 1e-7)

    def test_nuclear_squared_factored(self):
        rng = np.random.default_rng(3)
        prob = factored_problem(rng, 6, 2, [(4, 3), (3, 2)], penalty="nuclear")
        for lam in (1.0, 0.05):
            self.check_nuclear_squared(prob, f"nsq_{lam}.h5", 0.3, lam)

    def test_nuclear_squared_dense_sparse(self):
        rng = np.random.default_rng(4)
        base = factored_problem(rng, 5, 2, [(3, 3), (2, 3)], penalty="nuclear")
        blocks = [base.blocks[0].as_op("dense", 2), base.blocks[1].as_op("sparse", 2)]
        prob = Problem(5, 2, base.r, blocks)
        self.check_nuclear_squared(prob, "nsq_dense.h5", 0.1, 0.2)

    def test_xent_proximal_gradient(self):
        rng = np.random.default_rng(5)
        N, C, lam = 7, 3, 0.5
        prob = factored_problem(rng, N, C, [(3, 4), (4, 3)])
        f0 = rng.standard_normal((N, C))
        labels = rng.integers(0, C, N)
        A = prob.A()
        shapes = [(b.rows, b.cols) for b in prob.blocks]
        for spec, nuclear, gamma in (("fixed", False, 0.0), ("nuclear:scale=0.02", True, 0.02)):
            path = prob.write(self.path(f"xent_{nuclear}.h5"))
            with h5py.File(path, "a") as f:
                f["f0"] = f0
                f["labels"] = labels.astype(np.int64)
            t = 2 * lam / np.linalg.norm(A, 2) ** 2
            x = np.zeros(A.shape[1])
            for _ in range(30000):
                _, g = xent(A, x, f0, labels, C, lam)
                x = prox(x - t * g, shapes, t, gamma, nuclear)
            pen = nuclear_value(x, shapes, gamma) if nuclear else x @ x
            ref = xent(A, x, f0, labels, C, lam)[0] + pen
            for method in METHODS:
                with self.subTest(spec=spec, method=method):
                    out = run_driver(path, f"xent:lambda={lam}", spec, "1e-11", method)
                    self.assertEqual(out["status"], "solved")
                    self.assertLess(abs(out["objective"] - ref) / ref, 1e-6,
                                    (spec, out["objective"], ref))
                    xb = stacked(out, prob)
                    pen_b = nuclear_value(xb, shapes, gamma) if nuclear else xb @ xb
                    loss_b = xent(A, xb, f0, labels, C, lam)[0]
                    self.assertLess(abs(out["loss"] - loss_b) / ref, 1e-10)
                    self.assertLess(abs(out["penalty"] - pen_b) / ref, 1e-10)
                    self.assertLess(out["duality_gap"], 1e-8)

    def test_bad_labels(self):
        rng = np.random.default_rng(6)
        prob = factored_problem(rng, 4, 2, [(2, 2)])
        path = prob.write(self.path("labels.h5"))
        p = subprocess.run([DRIVER, path, "xent:lambda=1"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertIn("/labels: missing", p.stderr)
        with h5py.File(path, "a") as f:
            f["labels"] = np.array([0, 1, 2, 0], dtype=np.int64)
        p = subprocess.run([DRIVER, path, "xent:lambda=1"], capture_output=True, text=True)
        self.assertIn("label 2 of example 2 is outside 0 … 1", p.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
