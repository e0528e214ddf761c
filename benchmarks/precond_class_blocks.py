"""Data-space preconditioners for the NTK min-norm interpolant, measured on the exact Gram in numpy:
how many PCG steps A A^T lambda = r takes to a relative residual of 1e-8 with each.

A question for `atf baseline --method cg` (docs/record/solver.md §9.1), answered before building:
its default preconditioner is a rank-k Nystrom factor F (randomly pivoted Cholesky) plus the C x C
blocks of the residual G - F F^T that belong to one example. The rows of a C-output network's
Gram are (example, class) pairs, and within one class the Gram is a kernel on the examples;
this script compares, on a problem small enough to form G (M = N*C rows, 8 M^2 bytes):

  none                 plain CG
  kavg                 K_avg (x) I_C, K_avg the class-averaged N x N kernel (one Cholesky)
  class                blockdiag over classes of G's N x N class blocks (C Choleskys)
  nystrom+example      F F^T + the C x C example blocks of G - F F^T (atf's nystrom-block)
  nystrom+class        F F^T + the N x N class blocks of G - F F^T

Rows are equilibrated to a unit diagonal first (as atf's work problem is, up to powers of two);
the shift of the residual blocks is 0.1 x their mean diagonal (atf's). The Nystrom factor here is
plain one-pivot-at-a-time randomly pivoted Cholesky (seed 1), not atf's blocked one, so compare
the variants with each other, not with atf's step counts.

    OPENBLAS_NUM_THREADS=1 atf features --data fashion-mnist --split official --n-train 1000 \\
        --n-test 100 --widths 784,128,128,128,128,10 --bias --init lecun --no-standardize \\
        --out f1000.h5
    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 benchmarks/precond_class_blocks.py f1000.h5 \\
        --rank 1000 --variants none,kavg,class,nystrom+example,nystrom+class

Debian's python3 (numpy, scipy, h5py). Reports, never fails on time.
"""
import argparse
import time

import h5py
import numpy as np
import scipy.linalg as sl


def gram(path):
    """The row-equilibrated Gram and right-hand side of a problem file with factored blocks."""
    with h5py.File(path, "r") as f:
        r = f["r"][...]
        M = r.size
        N = f["f0"].shape[0]
        C = M // N
        G = np.zeros((M, M))
        for name in f["blocks"]:
            b = f["blocks"][name]
            if b.attrs["operator"] != "factored":
                raise SystemExit(f"{path}: block {name} is not factored")
            H, D = b["H"][...], b["D"][...]
            HH = H @ H.T
            for c in range(C):  # rows m = i*C + c
                G[c::C, :] += np.repeat(HH, C, axis=1) * (D[c::C] @ D.T)
    d = 1.0 / np.sqrt(np.diag(G).copy())
    G *= d[:, None]
    G *= d[None, :]
    return G, r * d, N, C


def pcg(A, b, apply_pinv, tol=1e-8, max_steps=20000):
    x = np.zeros_like(b)
    res = b.copy()
    z = apply_pinv(res)
    p = z.copy()
    rz = res @ z
    nb = np.linalg.norm(b)
    for k in range(1, max_steps + 1):
        Ap = A @ p
        a = rz / (p @ Ap)
        x += a * p
        res -= a * Ap
        if np.linalg.norm(res) <= tol * nb:
            return k
        z = apply_pinv(res)
        rz_new = res @ z
        p = z + (rz_new / rz) * p
        rz = rz_new
    return max_steps


def nystrom(G, k, seed=1):
    rng = np.random.default_rng(seed)
    M = G.shape[0]
    F = np.zeros((M, k))
    diag = np.diag(G).copy()
    for j in range(k):
        w = np.maximum(diag, 0.0)
        p = rng.choice(M, p=w / w.sum())
        col = G[:, p] - F[:, :j] @ F[p, :j]
        F[:, j] = col / np.sqrt(col[p])
        diag -= F[:, j] ** 2
    return F, diag


def class_solver(blocks, N, C):
    facs = [sl.cho_factor(B) for B in blocks]

    def apply(v):
        V = v.reshape(N, C).copy()
        for c in range(C):
            V[:, c] = sl.cho_solve(facs[c], V[:, c])
        return V.reshape(-1)
    return apply


def example_solver(blocks, N, C):
    inv = np.linalg.inv(blocks)  # N blocks of C x C

    def apply(v):
        return np.einsum("nij,nj->ni", inv, v.reshape(N, C)).reshape(-1)
    return apply


def woodbury(F, base):
    """(B + F F^T)^-1 from B^-1 (base) by the Woodbury identity."""
    BF = np.column_stack([base(F[:, j]) for j in range(F.shape[1])])
    core = sl.cho_factor(np.eye(F.shape[1]) + F.T @ BF)

    def apply(v):
        bv = base(v)
        return bv - BF @ sl.cho_solve(core, F.T @ bv)
    return apply


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("problem")
    ap.add_argument("--rank", type=int, default=1000)
    ap.add_argument("--variants", default="none,kavg,class,nystrom+example,nystrom+class")
    a = ap.parse_args()
    t = time.time()
    G, r, N, C = gram(a.problem)
    print(f"{a.problem}: N = {N}, C = {C}, M = {N * C}; Gram formed in {time.time() - t:.0f} s")
    eye = np.eye(N)
    F = R_diag = None
    print("| preconditioner | PCG steps to 1e-8 | build s | solve s |")
    print("| --- | --- | --- | --- |")
    for v in a.variants.split(","):
        t = time.time()
        if v.startswith("nystrom") and F is None:
            F, R_diag = nystrom(G, a.rank)
            print(f"(rank {a.rank}: residual trace {R_diag.sum() / N / C:.1%} of the trace)")
        shift = 0.1 * R_diag.mean() if F is not None else 0.0
        if v == "none":
            P = lambda x: x  # noqa: E731
        elif v == "kavg":
            K = sum(G[c::C, c::C] for c in range(C)) / C
            P = class_solver([K + 1e-10 * eye] * C, N, C)
        elif v == "class":
            P = class_solver([G[c::C, c::C] + 1e-10 * eye for c in range(C)], N, C)
        elif v == "nystrom+example":
            blocks = np.stack([G[i * C:(i + 1) * C, i * C:(i + 1) * C] -
                               F[i * C:(i + 1) * C] @ F[i * C:(i + 1) * C].T for i in range(N)])
            P = woodbury(F, example_solver(blocks + shift * np.eye(C), N, C))
        elif v == "nystrom+class":
            P = woodbury(F, class_solver([G[c::C, c::C] - F[c::C] @ F[c::C].T + shift * eye
                                          for c in range(C)], N, C))
        else:
            raise SystemExit(f"unknown variant {v}")
        built = time.time() - t
        t = time.time()
        steps = pcg(G, r, P)
        print(f"| {v} | {steps} | {built:.1f} | {time.time() - t:.1f} |", flush=True)


if __name__ == "__main__":
    main()
