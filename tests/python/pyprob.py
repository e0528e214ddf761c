"""A small problem with one block of each operator kind, built through atf.Problem."""
import numpy as np
import scipy.sparse

import atf

N, C = 6, 2
M = N * C


def arrays(seed=7):
    rng = np.random.default_rng(seed)
    H = rng.standard_normal((N, 4))
    D = rng.standard_normal((M, 3))
    J = rng.standard_normal((M, 4))
    S = scipy.sparse.random(M, 6, density=0.5, random_state=seed, format="csr") * 2.0
    S = scipy.sparse.csr_matrix(S + scipy.sparse.eye(M, 6, format="csr"))
    r = rng.standard_normal(M)
    f0 = rng.standard_normal((N, C))
    labels = rng.integers(0, C, N)
    return H, D, J, S, r, f0, labels


def build(seed=7, penalty="sq"):
    H, D, J, S, r, f0, labels = arrays(seed)
    blocks = [atf.Block.factored("W1", H, D, penalty=penalty),
              atf.Block.dense("W2", J, 2, 2, penalty=penalty),
              atf.Block.sparse("W3", S, 3, 2, penalty=penalty)]
    return atf.Problem(r, blocks, N, C, f0=f0, y=f0 + r.reshape(N, C), labels=labels)
