"""Valid problem and result files written with h5py, and numpy references (tests only).

A problem is described by a plain dict (`spec`) so that tests can mutate it before writing:
root attributes, root datasets, blocks (attributes + datasets) and an optional test split.
"""
import numpy as np
import scipy.sparse as sp
import h5py

N, C, NT = 6, 2, 4  # training samples, outputs, test samples


def _csr(rows, n, rng):
    """A random CSR matrix [rows, n] with an empty row and a duplicate entry."""
    dense = rng.standard_normal((rows, n)) * (rng.random((rows, n)) < 0.4)
    dense[1, :] = 0.0
    m = sp.csr_matrix(dense)
    indptr, indices, data = m.indptr.astype(np.int64), m.indices.astype(np.int64), m.data
    # duplicate the first entry of row 0 (scipy sums duplicates, and so must atf)
    if indptr[1] > 0:
        indices = np.insert(indices, 0, indices[0])
        data = np.insert(data, 0, 0.5)
        indptr = indptr.copy()
        indptr[1:] += 1
    return indptr, indices, data


def operator_datasets(kind, n_samples, rows, cols, rng, c=C):
    M = n_samples * c
    if kind == "dense":
        return {"J": rng.standard_normal((M, rows * cols))}
    if kind == "sparse":
        indptr, indices, data = _csr(M, rows * cols, rng)
        return {"J_indptr": indptr, "J_indices": indices, "J_data": data}
    return {"H": rng.standard_normal((n_samples, rows)), "D": rng.standard_normal((M, cols))}


BLOCKS = [  # name, index, operator, rows, cols, penalty, structure
    ("W1", 0, "factored", 3, 4, "sq", "matrix"),
    ("Jd", 1, "dense", 2, 3, "sq+abs", "matrix"),
    ("Sp", 2, "sparse", 3, 2, "nuclear", "diagonal"),
]


def valid_spec(seed=0, with_test=True, c=C):
    rng = np.random.default_rng(seed)
    spec = {
        "attrs": {"format": "atf-problem", "version": 1, "samples": N, "outputs": c},
        "data": {"r": rng.standard_normal(N * c), "y": rng.standard_normal((N, c)),
                 "f0": rng.standard_normal((N, c)), "labels": rng.integers(0, 10, N)},
        "blocks": {},
        "test": None,
    }
    for name, index, kind, rows, cols, pen, struct in BLOCKS:
        spec["blocks"][name] = {
            "attrs": {"index": index, "rows": rows, "cols": cols, "operator": kind,
                      "penalty": pen, "structure": struct},
            "data": operator_datasets(kind, N, rows, cols, rng, c),
        }
    if with_test:
        spec["test"] = {
            "attrs": {"samples": NT, "outputs": c},
            "data": {"y": rng.standard_normal((NT, c)), "f0": rng.standard_normal((NT, c)),
                     "labels": rng.integers(0, 2, NT)},
            "blocks": {name: {"attrs": {"rows": rows, "cols": cols, "operator": kind},
                              "data": operator_datasets(kind, NT, rows, cols, rng, c)}
                       for name, index, kind, rows, cols, pen, struct in BLOCKS},
        }
    return spec


def _write_group(g, desc):
    for k, v in desc.get("attrs", {}).items():
        g.attrs[k] = v
    for k, v in desc.get("data", {}).items():
        g[k] = v


def _write_with_blocks(g, desc):
    """Attributes and datasets of desc in g, and each of desc["blocks"] in g/blocks/NAME."""
    _write_group(g, desc)
    blocks = g.create_group("blocks")
    for name, b in desc["blocks"].items():
        _write_group(blocks.create_group(name), b)


def write_spec(path, spec):
    with h5py.File(path, "w") as f:
        _write_with_blocks(f, spec)
        if spec.get("test") is not None:
            _write_with_blocks(f.create_group("test"), spec["test"])


def block_matrix(data, kind, n_samples, rows, cols, c=C):
    """The dense constraint matrix A [n_samples·c, rows·cols] by docs/formats.md, with numpy."""
    M = n_samples * c
    if kind == "dense":
        return np.asarray(data["J"], dtype=np.float64)
    if kind == "sparse":
        m = sp.csr_matrix((np.asarray(data["J_data"], dtype=np.float64), data["J_indices"],
                           data["J_indptr"]), shape=(M, rows * cols))
        return m.toarray()
    H = np.asarray(data["H"], dtype=np.float64)
    D = np.asarray(data["D"], dtype=np.float64)
    rows_of_m = np.repeat(np.arange(n_samples), c)  # row m = i·c + k uses H row i
    return np.einsum("ma,mb->mab", H[rows_of_m], D).reshape(M, rows * cols)


def reference_residual(spec, n_samples, blocks, r, names_in_order, c=C):
    """A vec(B) − r at B_l[j] = sin(j + 1 + l), l the position in the sorted block order."""
    res = -np.asarray(r, dtype=np.float64).copy()
    for l, name in enumerate(names_in_order):
        b = blocks[name]
        train = spec["blocks"][name]["attrs"]
        kind = b["attrs"].get("operator", train.get("operator"))
        kind = kind.decode() if isinstance(kind, bytes) else kind
        rows, cols = int(train["rows"]), int(train["cols"])
        x = np.sin(np.arange(rows * cols) + 1.0 + l)
        res += block_matrix(b["data"], kind, n_samples, rows, cols, c) @ x
    return res


def valid_result_spec(seed=1):
    rng = np.random.default_rng(seed)
    spec = {"attrs": {"format": "atf-result", "version": 1, "status": "solved",
                      "method": "admm", "objective": 1.5, "iterations": 42,
                      "primal_residual": 1e-9, "dual_residual": 2e-9,
                      "constraint_residual": 1e-15, "stationarity": 3e-8,
                      "solve_seconds": 0.25, "structure": "layer", "ls_residual": np.nan},
            "blocks": {}}
    for name, index, kind, rows, cols, pen, struct in BLOCKS[:2]:
        B = rng.standard_normal((rows, cols))
        U, d, Vt = np.linalg.svd(B, full_matrices=False)
        spec["blocks"][name] = {
            "attrs": {"index": index, "rows": rows, "cols": cols, "penalty": pen,
                      "factors": "spectral"},
            "data": {"B": B, "d": d, "s1": np.ones_like(d), "sigma": d, "s2": np.ones_like(d),
                     "U": U, "V": Vt.T},
        }
    return spec


def write_result_spec(path, spec):
    with h5py.File(path, "w") as f:
        _write_with_blocks(f, spec)
