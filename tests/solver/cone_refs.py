"""Independent references for the solver tests, computed with cvxopt's interior-point methods.

nuclear_reference: min Σ_ℓ ‖B_ℓ‖_* s.t. A vec B = r through the semidefinite embedding
    ‖B‖_* = min ½(tr W1 + tr W2) s.t. [[W1, B], [Bᵀ, W2]] ⪰ 0  (one PSD cone per block).
huber_reference: the spectral Huber penalty of `zsq` (ω̃(v) = v² for v ≤ √γ, 2√γ v − γ beyond)
    is the infimal convolution of ‖·‖_F² and 2√γ‖·‖_*, so
    Σ ω̃(σ(B)) = min_{B = B1 + B2} ‖B1‖_F² + 2√γ ‖B2‖_*, a quadratic cone program (coneqp)."""
import numpy as np
from cvxopt import matrix, solvers, spmatrix

OPTIONS = {"show_progress": False, "abstol": 1e-10, "reltol": 1e-10, "feastol": 1e-10,
           "maxiters": 200}


def _embedding(P, Q, col_B, col_W):
    """Columns of G for S = [[W1, B], [Bᵀ, W2]] = h − G x with h = 0 (cvxopt 's' cone, stored
    column-major). B is row-major at col_B; W1, W2 lower triangles at col_W. Returns the
    triplets, the trace columns and the number of W variables."""
    n = P + Q
    rows, cols, vals, trace = [], [], [], []
    for a in range(P):
        for b in range(Q):
            for (i, j) in ((P + b, a), (a, P + b)):
                rows.append(i + j * n)
                cols.append(col_B + a * Q + b)
                vals.append(-1.0)
    k = col_W
    for base, m in ((0, P), (P, Q)):
        for j in range(m):
            for i in range(j, m):
                for (u, v) in {(base + i, base + j), (base + j, base + i)}:
                    rows.append(u + v * n)
                    cols.append(k)
                    vals.append(-1.0)
                if i == j:
                    trace.append(k)
                k += 1
    return rows, cols, vals, trace, k - col_W


def _cones(shapes, nB_total, first_W):
    """One PSD cone per block: G rows stacked cone after cone."""
    G_rows, G_cols, G_vals, trace, dims = [], [], [], [], []
    row0, col_B, col_W = 0, 0, first_W
    for (P, Q) in shapes:
        rows, cols, vals, tr, nW = _embedding(P, Q, col_B, col_W)
        G_rows += [row0 + r for r in rows]
        G_cols += cols
        G_vals += vals
        trace += tr
        dims.append(P + Q)
        row0 += (P + Q) ** 2
        col_B += P * Q
        col_W += nW
    return G_rows, G_cols, G_vals, trace, dims, row0, col_W


def _split(x, shapes):
    out, k = [], 0
    for (P, Q) in shapes:
        out.append(x[k:k + P * Q].reshape(P, Q))
        k += P * Q
    return out


def nuclear_reference(A, r, shapes):
    """Blocks B_ℓ and the value Σ‖B_ℓ‖_* of min Σ‖B_ℓ‖_* s.t. A vec B = r."""
    nB = sum(P * Q for P, Q in shapes)
    G_rows, G_cols, G_vals, trace, dims, nrows, nx = _cones(shapes, nB, nB)
    c = np.zeros(nx)
    c[trace] = 0.5
    G = spmatrix(G_vals, G_rows, G_cols, (nrows, nx))
    h = matrix(0.0, (nrows, 1))
    Aeq = np.hstack([A, np.zeros((A.shape[0], nx - nB))])
    solvers.options.update(OPTIONS)
    sol = solvers.conelp(matrix(c), G, h, {"l": 0, "q": [], "s": dims}, matrix(Aeq), matrix(r))
    assert sol["status"] == "optimal", sol["status"]
    x = np.array(sol["x"]).ravel()
    return _split(x[:nB], shapes), float(c @ x)


def huber_reference(A, r, shapes, gamma):
    """Blocks and value of min Σ_ℓ Σ_j ω̃(σ_j(B_ℓ)) for the spectral Huber penalty of zsq."""
    nB = sum(P * Q for P, Q in shapes)
    G_rows, G_cols, G_vals, trace, dims, nrows, nx = _cones(shapes, nB, 2 * nB)
    G_cols = [c + nB if c < nB else c for c in G_cols]  # the cones act on B2
    Pm = spmatrix(2.0, range(nB), range(nB), (nx, nx))
    q = np.zeros(nx)
    q[trace] = np.sqrt(gamma)  # 2√γ · ½(tr W1 + tr W2)
    G = spmatrix(G_vals, G_rows, G_cols, (nrows, nx))
    h = matrix(0.0, (nrows, 1))
    Aeq = np.hstack([A, A, np.zeros((A.shape[0], nx - 2 * nB))])
    solvers.options.update(OPTIONS)
    sol = solvers.coneqp(Pm, matrix(q), G, h, {"l": 0, "q": [], "s": dims}, matrix(Aeq),
                         matrix(r))
    assert sol["status"] == "optimal", sol["status"]
    x = np.array(sol["x"]).ravel()
    value = float(x[:nB] @ x[:nB] + q @ x)
    return _split(x[:nB] + x[nB:2 * nB], shapes), value


def entrywise_huber_reference(A, r, gamma):
    """min Σ_i ω̃(|x_i|) for zsq with 1×1 blocks (diagonal structure): the scalar Huber function
    is min_{x = a + u − v, u, v ≥ 0} a² + 2√γ(u + v), so the problem is the QP
    min ‖a‖² + 2√γ Σ(u + v)  s.t.  A(a + u − v) = r,  u, v ≥ 0  (cvxopt qp). (Splitting x = a + b
    with −t ≤ b ≤ t instead ends in a singular KKT system near the optimum.)"""
    n = A.shape[1]
    nx = 3 * n  # a, u, v
    Pm = spmatrix(2.0, range(n), range(n), (nx, nx))
    q = np.zeros(nx)
    q[n:] = 2.0 * np.sqrt(gamma)
    G = spmatrix(-1.0, range(2 * n), range(n, 3 * n), (2 * n, nx))
    h = matrix(0.0, (2 * n, 1))
    solvers.options.update(OPTIONS)
    sol = solvers.qp(Pm, matrix(q), G, h, matrix(np.hstack([A, A, -A])), matrix(r))
    assert sol["status"] == "optimal", sol["status"]
    x = np.array(sol["x"]).ravel()
    return x[:n] + x[n:2 * n] - x[2 * n:], float(x[:n] @ x[:n] + q @ x)
