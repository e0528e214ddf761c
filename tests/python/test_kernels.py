"""Kernels as neural-tangents users expect them (issue 46): trace_axes, diagonal_axes and
batch_size of atf.ntk and Result.kernel against the full kernel and against torch Jacobians
contracted the way neural-tangents does; Result.kernel's per-layer parts against J_ℓ M̂_ℓ² J_ℓᵀ
and their sum; atf.alignment against numpy and against `atf kernel`; atf.kernel_report against
`atf kernel` on the same files, bit for bit; and the refusals of bad arguments."""
import json
import os
import warnings

import h5py
import numpy as np
import torch

import atf
import atf_env
import torchref

nn = torch.nn
check = atf_env.check
BATCH_TOL = 1e-13  # batched against unbatched: other BLAS shapes, the same sums
REF_TOL = 1e-12    # against torch/functorch references, computed another way
# penalties that converge on these problems: a pair on spectral factors (s1 and s2 both ≠ 1),
# one term on entrywise and vector factors
PENALTY = {"layer": "sq+sq", "diagonal": "sq", "full": "sq"}


def close(a, b, what, tol=REF_TOL):
    torchref.close(a, b, what, tol)


def refused(fn, needles, what, cls=atf.InputError):
    """fn() raises cls (an atf.Error) with a one-line message containing every needle."""
    atf_env.raises(fn, cls, needles, what)
    try:
        fn()
    except atf.Error as e:
        check("\n" not in str(e), f"{what}: one-line message, got {str(e)!r}")


torch.manual_seed(7)
rng = np.random.default_rng(46)
MLP_NET = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 5, bias=False), nn.GELU(),
                        nn.Linear(5, 3)).double()
CNN = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 3 * 3, 3)).double()
MODELS = {"MLP (C library)": (MLP_NET, rng.standard_normal((9, 4)), rng.standard_normal((5, 4))),
          "CNN (torch path)": (CNN, rng.standard_normal((8, 1, 5, 5)),
                               rng.standard_normal((5, 1, 5, 5)))}


def nt_reference(net, X1, X2):
    """neural-tangents' trace_axes=(-1,) and diagonal_axes=(-1,) from torch Jacobians:
    Σ_params Σ_k J(x1)_k J(x2)_kᵀ / C, and Σ_params J(x1)_k J(x2)_kᵀ per k."""
    f1, J1 = torchref.jacobians(net, X1)
    _, J2 = torchref.jacobians(net, X2)
    N1, C = f1.shape
    N2 = len(X2)
    tr, dg = 0.0, 0.0
    for name in J1:
        A, B = J1[name].reshape(N1, C, -1), J2[name].reshape(N2, C, -1)
        tr = tr + np.einsum("ikp,jkp->ij", A, B) / C
        dg = dg + np.einsum("ikp,jkp->ijk", A, B)
    return tr, dg


def check_reductions(label, kernel, full, n1, n2, C):
    """trace_axes and diagonal_axes against the full kernel [n1, n2, C, C] of the same call."""
    T = kernel(trace_axes=(-1,))
    check(T.shape == (n1, n2), f"{label}: trace_axes=(-1,) shape {T.shape}")
    close(T, np.trace(full, axis1=2, axis2=3) / C, f"{label}: trace = mean of K[:, :, k, k]",
          1e-14)
    same = all(np.array_equal(kernel(trace_axes=a), T) for a in (-1, 1, [1], (-1, 1)))
    check(same, f"{label}: trace_axes -1, 1, [1] and (-1, 1) name the same axis")
    D = kernel(diagonal_axes=(-1,))
    check(D.shape == (n1, n2, C) and np.array_equal(D, np.diagonal(full, axis1=2, axis2=3)),
          f"{label}: diagonal_axes=(-1,) is K[:, :, k, k], bit for bit")
    parts = kernel(per_layer=True, trace_axes=-1)
    whole = sum(parts.values())
    close(whole, T, f"{label}: traced parts sum to the traced kernel", 1e-14)


def jacobian_rows(fn):
    """fn() and the largest number of examples whose Jacobian it computed at once."""
    seen = []
    inner = atf.tangent.tangent

    def spy(model, X, *args, **kw):
        t = inner(model, X, *args, **kw)
        seen.append(t.N)
        return t
    atf.tangent.tangent = spy
    try:
        return fn(), max(seen, default=0)
    finally:
        atf.tangent.tangent = inner


def check_batches(label, kernel, full, n1, n2):
    """batch_size against the unbatched kernel, whole, per layer and traced; the Jacobians of
    at most batch_size examples at a time (the memory bound)."""
    for bs in (1, 3, max(n1, n2) - 1):
        Kb, rows = jacobian_rows(lambda: kernel(batch_size=bs))
        check(0 < rows <= bs, f"{label}: batch_size={bs}: Jacobians of {rows} examples at once")
        close(Kb, full, f"{label}: batch_size={bs} vs unbatched", BATCH_TOL)
        Tb = kernel(batch_size=bs, trace_axes=(-1,))
        close(Tb, kernel(trace_axes=(-1,)), f"{label}: batch_size={bs}, traced", BATCH_TOL)
    pb, pu = kernel(batch_size=2, per_layer=True), kernel(per_layer=True)
    check(list(pb) == list(pu), f"{label}: batched per_layer keeps the block names")
    for name in pu:
        close(pb[name], pu[name], f"{label}: batch_size=2, per_layer {name}", BATCH_TOL)
    check(np.array_equal(kernel(batch_size=max(n1, n2)), full),
          f"{label}: batch_size >= N runs the unbatched code: the same bits")


# ---- atf.ntk: trace_axes, diagonal_axes, batch_size (an MLP and a torch CNN) ---------------------
for label, (net, X1, X2) in MODELS.items():
    N1, N2 = len(X1), len(X2)
    for tag, A, B in (("X1 with itself", X1, None), ("X1 with X2", X1, X2)):
        n2 = N1 if B is None else N2
        full = atf.ntk(net, A, B)
        C = full.shape[2]
        what = f"atf.ntk, {label}, {tag}"
        check(full.shape == (N1, n2, C, C), f"{what}: default still [N1, N2, C, C]")
        call = (lambda A, B: lambda **kw: atf.ntk(net, A, B, **kw))(A, B)
        check_reductions(what, call, full, N1, n2, C)
        check_batches(what, call, full, N1, n2)
        tr, dg = nt_reference(net, A, A if B is None else B)
        close(call(trace_axes=(-1,)), tr, f"{what}: trace_axes=(-1,) as neural-tangents "
              "contracts torch Jacobians (divided by C)")
        close(call(diagonal_axes=(-1,)), dg, f"{what}: diagonal_axes=(-1,) as neural-tangents")
    torch_in = torch.tensor(X1, dtype=torch.float32)
    check(np.array_equal(atf.ntk(net, torch_in, batch_size=4),
                         atf.ntk(net, torch_in.double(), batch_size=4)),
          f"{label}: batched float32 tensors give the kernel of their float64 values")


# ---- Result.kernel: per_layer, and the same arguments -------------------------------------------
def mhat_sq(rb):
    """M̂² of one block on vec(B) (row-major), formed densely."""
    if rb.layout == "entrywise":
        return np.diag((rb.s1 * rb.s2) ** 2)
    M1 = rb.U @ np.diag(rb.s1 ** 2) @ rb.U.T + np.eye(rb.rows) - rb.U @ rb.U.T
    M2 = rb.V @ np.diag(rb.s2 ** 2) @ rb.V.T + np.eye(rb.cols) - rb.V @ rb.V.T
    return np.kron(M1, M2)


def block_names(net):
    if net is MLP_NET:
        return torchref.mlp_names(net)
    return {n: n for n, _ in net.named_parameters()}


for label, (net, X1, X2) in MODELS.items():
    labels = np.arange(len(X1)) % 3
    prob = atf.features(net, X1, labels)
    names = block_names(net)
    _, J1 = torchref.jacobians(net, X1)
    _, J2 = torchref.jacobians(net, X2)
    N1, N2, C = len(X1), len(X2), 3
    for structure in ("layer", "diagonal"):
        res = atf.solve(prob, penalty=PENALTY[structure], structure=structure, tol=1e-9)
        what = f"Result.kernel, {label}, {structure}"
        full = res.kernel(X1, X2)
        parts = res.kernel(X1, X2, per_layer=True)
        check(list(parts) == list(res.blocks), f"{what}: per_layer names the result's blocks")
        acc = np.zeros_like(full)
        for part in parts.values():
            acc += part
        check(np.array_equal(acc, full), f"{what}: the parts sum to the kernel, bit for bit")
        for tname, name in names.items():
            ref = J1[tname] @ mhat_sq(res.blocks[name]) @ J2[tname].T
            close(parts[name], torchref.to_layout(ref, N1, N2, C),
                  f"{what}: part {name} = J_l M^2 J_l^T")
        call = lambda **kw: res.kernel(X1, X2, **kw)  # noqa: E731
        check_reductions(what, call, full, N1, N2, C)
        check_batches(what, call, full, N1, N2)
        same = res.kernel(X1)
        check(np.array_equal(res.kernel(X1, batch_size=len(X1) + 5), same),
              f"{what}: X1 with itself, batch_size > N: the same bits")
        close(res.kernel(X1, batch_size=2), same, f"{what}: X1 with itself in batches",
              BATCH_TOL)
    full_res = atf.solve(prob, penalty=PENALTY["full"], structure="full", tol=1e-9)
    refused(lambda: full_res.kernel(X1, per_layer=True),
            ["Result.kernel: per_layer", "structure full", "no per-layer parts"],
            f"{label}: per_layer of vector factors")
    close(full_res.kernel(X1, X2, batch_size=3), full_res.kernel(X1, X2),
          f"{label}: vector factors in batches", BATCH_TOL)


# ---- atf.alignment against numpy ----------------------------------------------------------------
def np_alignment(K, L, centered):
    if centered:
        n = K.shape[0]
        H = np.eye(n) - np.ones((n, n)) / n
        K, L = H @ K @ H, H @ L @ H
    return float(np.sum(K * L) / np.sqrt(np.sum(K * K) * np.sum(L * L)))


net, X1, _ = MODELS["MLP (C library)"]
N, C = len(X1), 3
labels = np.array([0, 1, 2, 2, 1, 0, 0, 2, 1])
Y = np.eye(C)[labels]
K4 = atf.ntk(net, X1)
Kflat = K4.transpose(0, 2, 1, 3).reshape(N * C, N * C)
KT = atf.ntk(net, X1, trace_axes=-1)
prob = atf.features(net, X1, labels)
r = prob.r
for centered in (True, False):
    tag = "centred" if centered else "uncentred"
    a = atf.alignment(K4, labels, centered=centered)
    close(a.value, np_alignment(Kflat, np.outer(Y.ravel(), Y.ravel()), centered),
          f"alignment {tag}: [N, N, C, C] with labels = numpy over the (example, output) pairs")
    check(a.centered == centered and "one-hot" in a.label_kernel and a.rows == N * C
          and a.over == "(example, output) pairs" and float(a) == a.value,
          f"alignment {tag}: the object says what was compared: {a}")
    close(atf.alignment(KT, Y, centered).value, np_alignment(KT, Y @ Y.T, centered),
          f"alignment {tag}: [N, N] (trace_axes) with targets [N, C] = numpy over the examples")
    close(atf.alignment(KT, labels, centered).value, np_alignment(KT, Y @ Y.T, centered),
          f"alignment {tag}: [N, N] with labels: one-hot over max + 1 classes")
    b = atf.alignment(K4, prob, centered)
    close(b.value, np_alignment(Kflat, np.outer(r, r), centered),
          f"alignment {tag}: a problem's label kernel is r r^T with r = y - f0")
    check("y − f0" in b.label_kernel, f"alignment {tag}: says it used the residual: {b}")
    check(b.value != atf.alignment(K4, prob.y, centered).value,
          f"alignment {tag}: the residual and the targets give different numbers (f0 != 0)")
    check(atf.alignment(Kflat, Y, centered).value == atf.alignment(K4, Y, centered).value and
          atf.alignment(Kflat, labels, centered).value ==
          atf.alignment(K4, labels, centered).value,
          f"alignment {tag}: the M x M kernel equals its [N, N, C, C] form, bit for bit")
    check(atf.alignment(KT, 5 * labels, centered).value ==
          atf.alignment(KT, labels, centered).value,
          f"alignment {tag}: [N, N] with labels: only equal classes count, not their numbers")
# one output: labels are ±1 targets, as atf.features makes them
net1 = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 1)).double()
K1 = atf.ntk(net1, X1)
lab1 = labels % 2
y1 = np.where(lab1 == 1, 1.0, -1.0)
for centered in (True, False):
    a = atf.alignment(K1, lab1, centered)
    close(a.value, np_alignment(K1[:, :, 0, 0], np.outer(y1, y1), centered),
          f"alignment, one output, centered={centered}: labels are ±1 targets")
    check("±1" in a.label_kernel, f"alignment, one output: says ±1: {a.label_kernel}")
centred_prob = atf.features(net, X1, labels, center=True)
check(atf.alignment(K4, centred_prob).value == atf.alignment(K4, centred_prob.y).value,
      "alignment: for a centred problem (f0 = 0) the residual is y: the same bits")
zero = atf.alignment(K4, np.ones((N, C)))
check(np.isnan(zero.value), f"alignment: a constant target has no centred alignment (NaN): {zero}")


# ---- atf.kernel_report against `atf kernel`, bit for bit ----------------------------------------
d = atf_env.scratch()
net, X1, _ = MODELS["MLP (C library)"]
labels = np.arange(len(X1)) % 3
prob = atf.features(net, X1, labels)
mlp0 = atf.from_torch(net)
trained = atf.MLP([w + 0.05 * rng.standard_normal(w.shape) for w in mlp0.weights],
                  [None if b is None else b + 0.05 for b in mlp0.biases], mlp0.activations)
ppath, m0path, m1path = (os.path.join(d, n) for n in ("p.h5", "m0.h5", "m1.h5"))
prob.write(ppath)
mlp0.write(m0path)
trained.write(m1path)


def same_as_cli(label, rep, kpath, js):
    """Every number of a KernelReport against `atf kernel`'s file and JSON line, bitwise."""
    with h5py.File(kpath, "r") as f:
        kernels = f["alignment"].attrs["kernels"]
        kernels = (kernels.decode() if isinstance(kernels, bytes) else str(kernels)).split(",")
        blocks = f["alignment"].attrs["blocks"]
        blocks = (blocks.decode() if isinstance(blocks, bytes) else str(blocks)).split(",")
        check(rep.kernels == kernels and rep.blocks == blocks,
              f"{label}: kernels {rep.kernels} / {kernels}, blocks {rep.blocks} / {blocks}")
        for k in kernels:
            check(np.array_equal(rep.K[k], f[k][...]), f"{label}: /{k} bit for bit")
        for t in ("cosine", "cka", "layer_cosine_label", "layer_cka_label"):
            check(np.array_equal(rep.table(t), f["alignment"][t][...], equal_nan=True),
                  f"{label}: /alignment/{t} bit for bit")
        s = f.attrs["theorem1_s"]
        check(np.array_equal(rep.theorem1_s, s, equal_nan=True),
              f"{label}: theorem1_s {rep.theorem1_s!r} vs {s!r}")
    as_json = lambda t: [[None if np.isnan(x) else x for x in row] for row in t]  # noqa: E731
    check(as_json(rep.table("cosine")) == js["cosine"] and
          as_json(rep.table("layer_cka_label")) == js["layer_cka_label"],
          f"{label}: the --json tables, to the last digit")
    lab = rep.kernels.index("label")
    check(rep.cosine["K0"]["label"] == rep.table("cosine")[0, lab] and
          rep.layer_cka[rep.blocks[-1]]["K0"] == rep.table("layer_cka_label")[-1, 0],
          f"{label}: the labelled values are the tables'")


for structure in ("layer", "diagonal", "full"):
    res = atf.solve(prob, penalty=PENALTY[structure], structure=structure, tol=1e-9)
    rpath, kpath = os.path.join(d, f"r-{structure}.h5"), os.path.join(d, f"k-{structure}.h5")
    res.write(rpath)
    js = json.loads(atf_env.run("kernel", ppath, rpath, "-o", kpath, "--mlp0", m0path,
                                "--mlp", m1path, "--path-points", "4", "--json").stdout)
    rep = atf.kernel_report(ppath, rpath, mlp0=m0path, mlp=m1path, path_points=4)
    same_as_cli(f"kernel_report from files, {structure}", rep, kpath, js)
    objs = atf.kernel_report(atf.Problem.read(ppath), atf.Result.read(rpath), mlp0=mlp0,
                             mlp=trained, path_points=4)
    same_as_cli(f"kernel_report from objects, {structure}", objs, kpath, js)
    check(rep.label_kernel == atf.kernels.RESIDUAL_LABEL and "y − f0" in rep.label_kernel,
          f"{structure}: the report names its label kernel")
    # atf.alignment of the file's kernels with the problem: the command's numbers, bit for bit
    for k in ("K0", "adapted"):
        check(atf.alignment(rep.K[k], prob, centered=False).value == rep.cosine[k]["label"] and
              atf.alignment(rep.K[k], prob).value == rep.cka[k]["label"],
              f"{structure}: atf.alignment(/{k}, problem) = atf kernel's cosine and cka")
    if structure == "full":
        check(all(np.isnan(rep.layer_cosine[b]["adapted"]) for b in rep.blocks),
              "full: the adapted kernel has no per-layer alignments (NaN, '-' in the table)")
        continue
    # Result.kernel's per-layer parts are the parts of the command's per-layer tables
    parts = res.kernel(X1, per_layer=True)
    for b in rep.blocks:
        close(atf.alignment(parts[b], prob, centered=False).value, rep.layer_cosine[b]["adapted"],
              f"{structure}: Result.kernel part {b} aligns as atf kernel's per-layer table")
# result files written by an earlier atf: without singular vectors (the report fills them in a
# copy of its own), without a problem fingerprint (a warning, as the command's note)
def copy_result(src_path, dst_path, drop_uv=False, drop_fingerprint=False):
    with h5py.File(src_path, "r") as src, h5py.File(dst_path, "w") as dst:
        for key, val in src.attrs.items():
            if not (drop_fingerprint and key == "problem_fingerprint"):
                dst.attrs[key] = val
        for name in src:
            src.copy(src[name], dst, name)
        for b in dst["blocks"] if drop_uv else ():
            del dst["blocks"][b]["U"], dst["blocks"][b]["V"]


rpath, bare = os.path.join(d, "r-layer.h5"), os.path.join(d, "r-bare.h5")
copy_result(rpath, bare, drop_uv=True)
res_bare = atf.Result.read(bare)
check(all(b.U is None for b in res_bare.blocks.values()), "the bare result has no U, V")
d_before = {n: b.d.copy() for n, b in res_bare.blocks.items()}
js = json.loads(atf_env.run("kernel", ppath, bare, "-o", os.path.join(d, "k-bare.h5"),
                            "--json").stdout)
rep = atf.kernel_report(atf.Problem.read(ppath), res_bare)
same_as_cli("kernel_report, result without U, V", rep, os.path.join(d, "k-bare.h5"), js)
check(all(np.array_equal(res_bare.blocks[n].d, d_before[n]) and res_bare.blocks[n].U is None
          for n in d_before), "the caller's result is left as it was (its views still valid)")
old_file = os.path.join(d, "r-old.h5")
copy_result(rpath, old_file, drop_fingerprint=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    atf.kernel_report(prob, rpath)
    atf.kernel_report(prob, old_file)
check(len(caught) == 1 and issubclass(caught[0].category, RuntimeWarning) and
      "no problem_fingerprint" in str(caught[0].message),
      f"kernel_report: a result without a fingerprint warns, once: {[str(w.message) for w in caught]}")


# ---- refusals: atf.Error subclasses with one-line messages --------------------------------------
net, X1, X2 = MODELS["MLP (C library)"]
res = atf.solve(prob, penalty="sq+sq")
for fn, where in ((lambda **kw: atf.ntk(net, X1, **kw), "atf.ntk"),
                  (lambda **kw: res.kernel(X1, **kw), "Result.kernel")):
    refused(lambda: fn(trace_axes=(0,)), [f"{where}: trace_axes", "axis 0", "sample axis"],
            f"{where}: tracing the sample axis")
    refused(lambda: fn(diagonal_axes=-2), [f"{where}: diagonal_axes", "sample axis"],
            f"{where}: diagonalising the sample axis")
    refused(lambda: fn(trace_axes=(2,)), [f"{where}: trace_axes", "axis 2", "out of range"],
            f"{where}: an axis out of range")
    for bad in ("x", 1.0, True, [None]):
        refused(lambda: fn(trace_axes=bad), [f"{where}: trace_axes", "not an axis"],
                f"{where}: trace_axes={bad!r}")
    refused(lambda: fn(trace_axes=-1, diagonal_axes=-1), [f"{where}: trace_axes and "
            "diagonal_axes both name the output axis"], f"{where}: both on one axis")
    for bad, why in ((0, "is outside 1"), (-3, "is outside 1"), (2.5, "not an integer"),
                     (True, "not an integer"), (2 ** 40, "does not fit a C int")):
        refused(lambda: fn(batch_size=bad), [f"{where}: batch_size", why],
                f"{where}: batch_size={bad!r}")
    refused(lambda: fn(X2=np.full((3, 4), np.nan), batch_size=2),
            [f"{where}: X2", "NaN or infinite"], f"{where}: NaN inputs named before batching")
refused(lambda: atf.ntk(CNN, np.zeros((0, 1, 5, 5)), batch_size=2), ["atf.ntk: X1", "shape"],
        "atf.ntk: no examples, torch path, batched")
refused(lambda: atf.alignment(np.zeros((3, 4)), [0, 1, 2]), ["atf.alignment: K", "shape (3, 4)"],
        "alignment: a non-square K")
refused(lambda: atf.alignment(atf.ntk(net, X1, diagonal_axes=-1), labels),
        ["atf.alignment: K", "diagonal kernel [N, N, C]"], "alignment: a diagonal kernel")
bad_K = K4.copy()
bad_K[0, 1, 2, 0] = np.nan
refused(lambda: atf.alignment(bad_K, labels), ["atf.alignment: K", "non-finite"],
        "alignment: NaN in K")
refused(lambda: atf.alignment(K4, labels[:5]), ["atf.alignment", "K is over 9 examples",
        "target has 5"], "alignment: labels of other examples")
refused(lambda: atf.alignment(K4, np.zeros((N, 2))), ["atf.alignment: K has 3 outputs",
        "target has 2"], "alignment: targets with other outputs")
refused(lambda: atf.alignment(K4, labels + 1), ["atf.alignment: target", "value 3",
        "outside 0 … 2"], "alignment: a label outside 0 … C − 1")
refused(lambda: atf.alignment(K4, labels > 0), ["atf.alignment: target", "bool"],
        "alignment: bool targets")
refused(lambda: atf.alignment(KT, np.zeros((N + 1, 2))), ["atf.alignment: K is 9 x 9",
        "target has 10 examples"], "alignment: an [N, N] kernel and other examples")
refused(lambda: atf.alignment(K4, labels, centered="yes"), ["atf.alignment: centered"],
        "alignment: centered not a bool")
other = atf.features(net, X1[:, ::-1].copy(), labels)
refused(lambda: atf.kernel_report(other, res), ["problem_fingerprint",
        "the result was computed from another problem"], "kernel_report: another problem")
refused(lambda: atf.kernel_report(ppath, path_points=0), ["atf.kernel_report: path_points",
        "is outside 1 … 100000"], "kernel_report: path_points 0")
refused(lambda: atf.kernel_report(ppath, path_method="fast"), ["fast"],
        "kernel_report: an unknown path method (the library's message)")
refused(lambda: atf.kernel_report(42), ["atf.kernel_report: problem", "int"],
        "kernel_report: not a problem")
refused(lambda: atf.kernel_report(ppath, mlp0=trained), ["does not reproduce", "/f0"],
        "kernel_report: an mlp0 that is not the problem's network (the library's message)")
refused(lambda: atf.kernel_report(ppath, mlp=CNN), ["atf.kernel_report: mlp", "Conv2d"],
        "kernel_report: a network that is not an MLP")
refused(lambda: atf.kernel_report(os.path.join(d, "missing.h5")), ["missing.h5"],
        "kernel_report: a missing problem file")
p = atf_env.run("kernel", ppath, "--mlp0", m1path, "-o", os.path.join(d, "x.h5"), ok=(2,))
try:
    atf.kernel_report(ppath, mlp0=m1path)
    check(False, "kernel_report: a wrong mlp0 file is refused")
except atf.InputError as e:
    cli = p.stderr.strip().splitlines()[-1]
    check(cli.endswith(e.message), f"kernel_report: the command's message {cli!r}, got "
          f"{e.message!r}")
atf_env.finish("test_kernels")
