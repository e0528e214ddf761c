#!/usr/bin/python3
"""Adapted kernels (eq. 7) of results of every factor layout, against numpy from the definition.

For each problem the per-block Jacobians J_ℓ [M × P·Q] are materialised from the operators
(factored: J[m, a·Q + b] = h_ia δ_mb), the transformation M̂ is formed densely on the parameter
vector from the result's factors, and K = J M̂² Jᵀ is compared with `atf kernel`'s /adapted:
- entrywise (`--structure diagonal`, or a block with structure "diagonal"): M̂ = diag(s1·s2);
- vector (`--structure full`): M̂ = s2 (I + (s1 − 1) ββᵀ/‖β‖²) on the concatenated β;
- spectral (matrix blocks, next to an entrywise block): M̂ = M̂1 ⊗ M̂2 (row-major vec).
Penalty sq+sq makes s2 ≠ 1, so the two sides of M̂ both matter. Factored problems with
C = 1 and C = 2 exercise both summation orders of the entrywise kernel (over columns of B or
over rows). Environment: ATF (the binary)."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

ATF = os.environ["ATF"]


def run(*args):
    p = subprocess.run([ATF, *map(str, args)], capture_output=True, text=True)
    assert p.returncode == 0, f"atf {' '.join(map(str, args))}: exit {p.returncode}\n{p.stderr}"
    return p


def jacobians(path):
    """Per block (in index order): name, J [M × P·Q], structure."""
    out = []
    with h5py.File(path, "r") as f:
        C = int(f.attrs.get("outputs", 1))
        blocks = sorted(f["blocks"], key=lambda n: int(f["blocks"][n].attrs["index"]))
        for n in blocks:
            g = f["blocks"][n]
            P, Q, op = int(g.attrs["rows"]), int(g.attrs["cols"]), g.attrs["operator"]
            if op == "factored":
                H, D = g["H"][()], g["D"][()]
                Hm = np.repeat(H, C, axis=0)                     # row m uses h_i, i = m // C
                J = (Hm[:, :, None] * D[:, None, :]).reshape(len(D), P * Q)
            elif op == "dense":
                J = g["J"][()]
            else:
                M = len(g["J_indptr"]) - 1
                J = np.zeros((M, P * Q))
                ptr, idx, val = g["J_indptr"][()], g["J_indices"][()], g["J_data"][()]
                for m in range(M):
                    J[m, idx[ptr[m]:ptr[m + 1]]] = val[ptr[m]:ptr[m + 1]]
            out.append((n, J, g.attrs.get("structure", "matrix")))
    return out


def side(S, X, s):
    """M̂ side I + X diag(s − 1) Xᵀ (X orthonormal columns)."""
    return np.eye(S) + X @ np.diag(s - 1.0) @ X.T


def transformation(res_path, blocks):
    """M̂ on the concatenated parameter vector, from the result's factors."""
    with h5py.File(res_path, "r") as f:
        parts = []
        for n, J, _ in blocks:
            g = f["blocks"][n]
            P, Q = int(g.attrs["rows"]), int(g.attrs["cols"])
            layout = g.attrs["factors"]
            s1, s2 = g["s1"][()], g["s2"][()]
            parts.append((layout, P, Q, g["B"][()], s1, s2, g))
        layout = parts[0][0]
        if layout == "vector":
            beta = np.concatenate([B.ravel() for _, _, _, B, _, _, _ in parts])
            s1, s2 = parts[0][4][0], parts[0][5][0]
            u = beta / np.linalg.norm(beta)
            return s2 * (np.eye(len(beta)) + (s1 - 1.0) * np.outer(u, u)), layout
        mats = []
        for lay, P, Q, B, s1, s2, g in parts:
            if lay == "entrywise":
                mats.append(np.diag(s1 * s2))
            else:
                U, V = g["U"][()], g["V"][()]
                mats.append(np.kron(side(P, U, s1), side(Q, V, s2)))
        n = sum(m.shape[0] for m in mats)
        T = np.zeros((n, n))
        o = 0
        for m in mats:
            T[o:o + len(m), o:o + len(m)] = m
            o += len(m)
        return T, "/".join(p[0] for p in parts)


def check(tmp, prob, res, label):
    ker = os.path.join(tmp, "k.h5")
    run("kernel", prob, res, "-o", ker)
    blocks = jacobians(prob)
    J = np.hstack([b[1] for b in blocks])
    T, layout = transformation(res, blocks)
    Kref = J @ T @ T @ J.T
    K0 = J @ J.T
    with h5py.File(ker, "r") as f:
        K, K17, Kk0 = f["adapted"][()], f["paper17"][()], f["K0"][()]
    scale = np.abs(Kref).max()
    err = np.abs(K - Kref).max() / scale
    assert err < 1e-11, f"{label} ({layout}): adapted vs numpy, max rel diff {err:.3g}"
    assert np.abs(Kk0 - K0).max() < 1e-12 * np.abs(K0).max(), f"{label}: K0"
    # the adapted kernel really differs from the NTK (the test can fail)
    assert np.abs(K - K0).max() > 1e-3 * scale, f"{label}: adapted kernel equals K0"
    if "spectral" not in layout and layout != "vector":
        # 1×1 blocks have no cross terms: eq. 17 equals eq. 7
        assert np.abs(K17 - Kref).max() < 1e-11 * scale, f"{label}: eq. 17 vs eq. 7"
    if layout == "vector":
        with h5py.File(res, "r") as f:
            beta = np.concatenate([f["blocks"][b[0]]["B"][()].ravel() for b in blocks])
            s = f["blocks"][blocks[0][0]]["s1"][0] * f["blocks"][blocks[0][0]]["s2"][0]
        g = J @ beta
        K17ref = K0 + (s * s - 1.0) * np.outer(g, g) / (beta @ beta)
        assert np.abs(K17 - K17ref).max() < 1e-11 * np.abs(K17ref).max(), f"{label}: eq. 17"
    print(f"{label}: {layout} adapted kernel matches numpy (max rel diff {err:.2g})")


def factored_problems(tmp):
    """C = 1 (synthetic) and C = 2 (an HDF5 data set) factored problems of small ReLU nets."""
    p1 = os.path.join(tmp, "p1.h5")
    run("features", "--data", "synthetic:d=4", "--n-train", 9, "--n-test", 0, "--widths",
        "4,5,1", "-o", p1)
    data = os.path.join(tmp, "data.h5")
    rng = np.random.default_rng(5)
    with h5py.File(data, "w") as f:
        f["X"] = rng.standard_normal((7, 3))
        f["Y"] = rng.standard_normal((7, 2))
    p2 = os.path.join(tmp, "p2.h5")
    run("features", "--data", data, "--widths", "3,6,2", "--bias", "-o", p2)
    return [p1, p2]


def operator_problem(tmp):
    """Dense block (structure matrix) and sparse block (structure diagonal), written by h5py."""
    rng = np.random.default_rng(11)
    M = 8
    path = os.path.join(tmp, "ops.h5")
    Jd = rng.standard_normal((M, 12))
    Js = rng.standard_normal((M, 6)) * (rng.random((M, 6)) < 0.6)
    Js[np.arange(M), np.arange(M) % 6] += 1.0       # no empty row
    with h5py.File(path, "w") as f:
        f.attrs.update(format="atf-problem", version=1, samples=M, outputs=1)
        f["r"] = rng.standard_normal(M)
        g = f.create_group("blocks/Wd")
        g.attrs.update(index=0, rows=3, cols=4, penalty="sq+sq", operator="dense")
        g["J"] = Jd
        g = f.create_group("blocks/Sp")
        g.attrs.update(index=1, rows=2, cols=3, penalty="sq+sq", operator="sparse",
                       structure="diagonal")
        nz = np.nonzero(Js)
        g["J_indptr"] = np.concatenate([[0], np.cumsum((Js != 0).sum(axis=1))]).astype(np.int64)
        g["J_indices"] = nz[1].astype(np.int64)
        g["J_data"] = Js[nz]
    return path


def main(tmp):
    for i, prob in enumerate(factored_problems(tmp)):
        for structure in ("diagonal", "full"):
            res = os.path.join(tmp, f"r{i}{structure}.h5")
            run("solve", prob, "-o", res, "--structure", structure, "--penalty", "sq+sq",
                "--quiet")
            check(tmp, prob, res, f"factored problem {i + 1}, --structure {structure}")
    # a spectral result without U, V (older files): they are recomputed with the penalty the
    # result was solved with (--penalty abs+sq), not the problem file's (sq)
    prob = os.path.join(tmp, "p1.h5")
    res, bare = os.path.join(tmp, "rabs.h5"), os.path.join(tmp, "rabs_nouv.h5")
    run("solve", prob, "-o", res, "--penalty", "abs+sq", "--quiet")
    check(tmp, prob, res, "factored problem 1, --penalty abs+sq")
    with h5py.File(res, "r") as f, h5py.File(bare, "w") as g:
        for k in f:
            f.copy(k, g)
        g.attrs.update(f.attrs)
        for n in g["blocks"]:
            del g["blocks"][n]["U"], g["blocks"][n]["V"]
    kernels = []
    for r in (res, bare):
        run("kernel", prob, r, "-o", os.path.join(tmp, "k.h5"))
        with h5py.File(os.path.join(tmp, "k.h5"), "r") as f:
            kernels.append(f["adapted"][()])
    diff = np.abs(kernels[0] - kernels[1]).max() / np.abs(kernels[0]).max()
    assert diff < 1e-12, f"adapted kernel without stored U, V differs by {diff:.3g}"
    print(f"spectral result without U, V: same adapted kernel (max rel diff {diff:.2g})")
    prob = operator_problem(tmp)
    for structure in ("layer", "diagonal", "full"):
        res = os.path.join(tmp, f"ops{structure}.h5")
        run("solve", prob, "-o", res, "--structure", structure, "--quiet")
        check(tmp, prob, res, f"dense + sparse problem, --structure {structure}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(tmp)
    print("kernel layouts: ok")
