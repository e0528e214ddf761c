"""Helpers of the solver tests: write problem files with h5py, run the atf binary, read results.

Everything here is an independent reference: problems are written as docs/formats.md describes them and
the dense constraint matrix is rebuilt with numpy (row m of a factored block = kron(h_i, d_m))."""
import json
import os
import subprocess
import tempfile
import unittest

import h5py
import numpy as np
import scipy.sparse as sp

ATF = os.environ.get("ATF", "build/drivers/atf")


class Block:
    """A block of problem (16): `op` is dense, sparse or factored; H, D for factored, J else."""

    def __init__(self, name, rows, cols, penalty="sq", structure="matrix", op="factored",
                 H=None, D=None, J=None):
        self.name, self.rows, self.cols = name, rows, cols
        self.penalty, self.structure, self.op = penalty, structure, op
        self.H, self.D, self.J = H, D, J

    def dense(self, C):
        """The M × rows·cols constraint matrix A_b."""
        if self.J is not None:
            return np.asarray(self.J, dtype=float)
        M = self.D.shape[0]
        return np.stack([np.kron(self.H[m // C], self.D[m]) for m in range(M)])

    def as_op(self, op, C):
        """The same block with another operator form (factored blocks only convert away)."""
        J = None if op == "factored" else self.dense(C)
        return Block(self.name, self.rows, self.cols, self.penalty, self.structure, op,
                     self.H if op == "factored" else None,
                     self.D if op == "factored" else None, J)


class Problem:
    def __init__(self, N, C, r, blocks):
        self.N, self.C, self.r, self.blocks = N, C, np.asarray(r, dtype=float), blocks

    @property
    def M(self):
        return self.N * self.C

    def A(self):
        return np.hstack([b.dense(self.C) for b in self.blocks])

    def with_op(self, op):
        return Problem(self.N, self.C, self.r, [b.as_op(op, self.C) for b in self.blocks])

    def with_penalty(self, penalty):
        blocks = [Block(b.name, b.rows, b.cols, penalty, b.structure, b.op, b.H, b.D, b.J)
                  for b in self.blocks]
        return Problem(self.N, self.C, self.r, blocks)

    def write(self, path):
        with h5py.File(path, "w") as f:
            f.attrs["format"] = "atf-problem"
            f.attrs["version"] = 1
            f.attrs["samples"] = self.N
            f.attrs["outputs"] = self.C
            f["r"] = self.r
            g = f.create_group("blocks")
            for index, b in enumerate(self.blocks):
                h = g.create_group(b.name)
                h.attrs["index"] = index
                h.attrs["rows"] = b.rows
                h.attrs["cols"] = b.cols
                h.attrs["penalty"] = b.penalty
                h.attrs["structure"] = b.structure
                h.attrs["operator"] = b.op
                if b.op == "factored":
                    h["H"] = np.asarray(b.H, dtype=float)
                    h["D"] = np.asarray(b.D, dtype=float)
                elif b.op == "dense":
                    h["J"] = np.asarray(b.J, dtype=float)
                else:
                    S = sp.csr_matrix(np.asarray(b.J, dtype=float))
                    h["J_indptr"] = S.indptr.astype(np.int64)
                    h["J_indices"] = S.indices.astype(np.int64)
                    h["J_data"] = S.data
        return path


class ScratchCase(unittest.TestCase):
    """A test case with a fresh temporary directory `self.dir`, removed after each test."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)


def factored_problem(rng, N, C, shapes, penalty="sq", rank_H=None, decay=False):
    """Random factored problem with blocks W1.. of the given (rows, cols) shapes; decay: the
    columns of H and D of decaying scale (0.7^j + 0.05 and 0.8^j + 0.1), a less well
    conditioned operator."""
    blocks = []
    for j, (P, Q) in enumerate(shapes):
        H = rng.standard_normal((N, P))
        if rank_H is not None and rank_H < min(N, P):
            H = rng.standard_normal((N, rank_H)) @ rng.standard_normal((rank_H, P))
        D = rng.standard_normal((N * C, Q))
        if decay:
            H *= 0.7 ** np.arange(P) + 0.05
            D *= 0.8 ** np.arange(Q) + 0.1
        blocks.append(Block(f"W{j + 1}", P, Q, penalty, "matrix", "factored", H, D))
    r = rng.standard_normal(N * C)
    return Problem(N, C, r, blocks)


def run(*args, timeout=300):
    p = subprocess.run([ATF, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def solve_json(*args, timeout=300):
    """Run atf with --json and --quiet; return (exit code, parsed JSON or None, stderr)."""
    code, out, err = run(*args, "--json", "--quiet", timeout=timeout)
    lines = [l for l in out.splitlines() if l.strip()]
    return code, (json.loads(lines[-1]) if lines else None), err


def read_result(path):
    with h5py.File(path, "r") as f:
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        blocks = {}
        for name, g in f["blocks"].items():
            blocks[name] = {k: np.array(g[k]) for k in g.keys()}
        return attrs, blocks


def stacked(blocks, problem):
    """The solution as one vector in the order of the problem's columns."""
    return np.concatenate([blocks[b.name]["B"].reshape(-1) for b in problem.blocks])
