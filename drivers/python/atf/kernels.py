"""Kernel alignments in process: atf.alignment (a kernel against targets or labels) and
atf.kernel_report (every kernel and alignment of `atf kernel`, from the same C function).

Both go through the library's own functions — atf_kernel_cosine, atf_kernel_cka,
atf_kernel_outer and atf_kernel_report_compute (problems/tangent/atf_kernel.h) — so that the
numbers are those `atf kernel` prints and writes, to the last bit, for the same kernels."""
import ctypes
import os
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _check, _errors, _kernel_lib, _lib
from .mlp import MLP, from_torch
from .problem import Problem
from .result import Result

# `atf kernel`'s label kernel, said wherever its numbers are returned (issue 46: a user's own
# cosine with y yᵀ differs from atf's when f0 ≠ 0, and nothing said why)
RESIDUAL_LABEL = ("r rᵀ with r = y − f0, the problem's residual (what any interpolating "
                  "solution fits): the label kernel of `atf kernel`")


def _fail(message: str) -> None:
    raise _errors.InputError(message, "bad input")


@dataclass(frozen=True)
class Alignment:
    """The alignment of a kernel with a label kernel, and what was compared.

    value: the number (NaN when a kernel is 0 after centring, e.g. a constant target);
    centered: whether both kernels were centred by H = I − 11ᵀ/n first;
    label_kernel: which label kernel L (y yᵀ of the targets, of one-hot or ±1 labels, or the
    residual r = y − f0 of a problem);
    rows: n, the side of the n × n kernels compared;
    over: "examples" (an [N, N] kernel) or "(example, output) pairs" (M = N·C rows
    m = i·C + k, as the C library and `atf kernel`). float(a) is a.value."""
    value: float
    centered: bool
    label_kernel: str
    rows: int
    over: str

    def __float__(self) -> float:
        return self.value


def _as_target(target: Any) -> Tuple[np.ndarray, bool, str]:
    """(values, are_labels, description): a problem's residual [N, C], integer labels [N], or
    float targets [N] / [N, C]."""
    if isinstance(target, Problem):
        r = target.r.reshape(target.samples, target.outputs)
        return r, False, RESIDUAL_LABEL
    a = _check.to_numpy(target, "atf.alignment: target")
    if a.dtype.kind in "iu":
        if a.ndim == 2 and a.shape[1] == 1:
            a = a.reshape(-1)
        if a.ndim != 1 or a.shape[0] == 0:
            _fail(f"atf.alignment: target: integer labels of shape {a.shape}: class indices are "
                  "one integer per example [N] (float arrays are targets)")
        return a, True, ""
    y = _check.floats(a, "atf.alignment: target", finite=True)
    if y.ndim == 1:
        y = y.reshape(-1, 1)
    if y.ndim != 2 or y.shape[0] == 0:
        _fail(f"atf.alignment: target: shape {y.shape}, expected targets [N] or [N, C], integer "
              "labels [N], or an atf.Problem")
    return y, False, "y yᵀ of the targets y given"


def _flat_kernel(K: Any) -> Tuple[np.ndarray, Optional[int]]:
    """(K as a C-contiguous n × n float64 matrix, C) — C for [N, N, C, C] kernels (flattened
    to rows m = i·C + k, as the C library's), None for a 2-d K."""
    K = _check.floats(K, "atf.alignment: K", finite=True)
    if K.ndim == 4 and K.shape[0] == K.shape[1] and K.shape[2] == K.shape[3] and K.shape[0]:
        N, _, C, _ = K.shape
        return np.ascontiguousarray(K.transpose(0, 2, 1, 3).reshape(N * C, N * C)), C
    if K.ndim == 2 and K.shape[0] == K.shape[1] and K.shape[0]:
        return np.ascontiguousarray(K), None
    hint = (": a diagonal kernel [N, N, C] (diagonal_axes) has no alignment here; align the "
            "full kernel or its trace (trace_axes=(-1,))" if K.ndim == 3 else "")
    _fail(f"atf.alignment: K: shape {K.shape}, expected a square kernel over one set of "
          f"examples: [N, N], [N, N, C, C] or the M × M kernel of `atf kernel`{hint}")


def _label_targets(labels: np.ndarray, C: Optional[int]) -> Tuple[np.ndarray, str]:
    """Targets of class indices as atf.features makes them: one-hot over C ≥ 2 outputs, ±1 for
    one output (C = 1). C None (an [N, N] kernel): one-hot over the classes present, whose
    y yᵀ is that of one-hot targets over any number of classes (1 for the same class, else 0)."""
    lab = _check.labels(labels, "atf.alignment: target", labels.shape[0], C).astype(np.int64)
    if C == 1:
        return (2.0 * lab - 1.0).reshape(-1, 1), "y yᵀ of the ±1 targets of the labels (one output)"
    if C is None:
        _, lab = np.unique(lab, return_inverse=True)
    classes = C if C is not None else int(lab.max()) + 1
    Y = np.zeros((lab.shape[0], classes))
    Y[np.arange(lab.shape[0]), lab] = 1.0
    return Y, "y yᵀ of the one-hot targets of the labels (1 for the same class, else 0)"


def _outputs(n: int, N: int, KC: Optional[int], C: Optional[int], what: str
             ) -> Optional[int]:
    """How an n × n kernel reads for a target of N examples: the outputs C of a kernel over the
    (example, output) pairs (m = i·C + k; KC from an [N, N, C, C] K, else n = N·C with the
    target's C, or for labels C = n / N), or None for a kernel over the N examples."""
    if KC is not None:
        if n != N * KC:
            _fail(f"atf.alignment: K is over {n // KC} examples but {what} has {N}")
        return KC
    if n == N:
        return None
    if C is None and n % N == 0:
        return n // N
    if C is not None and C > 1 and n == N * C:
        return C
    _fail(f"atf.alignment: K is {n} x {n} but {what} has {N} examples"
          + (f" of {C} outputs" if C is not None else "")
          + ": expected [N, N], [N, N, C, C] or the M x M kernel over (example, output) pairs "
            "(M = N·C)")


def _label_kernel(K: np.ndarray, KC: Optional[int], target: Any
                  ) -> Tuple[np.ndarray, str, str]:
    """(L, its description, "examples" or "(example, output) pairs") for a flat kernel K."""
    values, are_labels, desc = _as_target(target)
    n, N = K.shape[0], values.shape[0]
    what = "the problem" if isinstance(target, Problem) else "target"
    C = _outputs(n, N, KC, None if are_labels else values.shape[1], what)
    if are_labels:
        values, desc = _label_targets(values, C)
    elif C is not None and values.shape[1] != C:
        _fail(f"atf.alignment: K has {C} outputs per example but {what} has {values.shape[1]}")
    if C is None:
        return values @ values.T, desc, "examples"
    v = np.ascontiguousarray(values.reshape(-1))  # row m = i·C + k, as r in a problem file
    L = np.empty((n, n))
    _kernel_lib.outer(n, v.ctypes.data_as(_lib.P_D), L.ctypes.data_as(_lib.P_D))
    return L, desc, "(example, output) pairs" if C > 1 else "examples"


def alignment(K: Any, target: Any, centered: bool = True) -> Alignment:
    """The kernel–target alignment of K with the label kernel L = y yᵀ:

        uncentred (centered=False): A(K, L) = ⟨K, L⟩_F / (‖K‖_F ‖L‖_F) (Cristianini et al.;
        the cosine similarity, the number of the paper's Figure 1);
        centred (centered=True, the default): A(H K H, H L H) with H = I − 11ᵀ/n — centred
        kernel alignment (Cortes, Mohri & Rostamizadeh 2012), computed by centring on the fly.

    These are atf_kernel_cosine and atf_kernel_cka of the C library, the numbers `atf kernel`
    prints, so equal kernels give equal bits.

    K: [N, N] (e.g. atf.ntk(..., trace_axes=(-1,))), or [N, N, C, C] (atf.ntk's default), or the
    M × M kernel of `atf kernel`'s file (/K0, ...; M = N·C). [N, N, C, C] is flattened to the
    M × M matrix over the (example, output) pairs m = i·C + k as the C library does, and then
    centred over those M pairs (H is M × M), as `atf kernel` centres — not per output.

    target: float targets y [N] or [N, C], with L = y yᵀ (over the examples for an [N, N] K:
    L_ij = Σ_k y_ik y_jk; over the pairs otherwise: L_mm' = y_m y_m'); or integer class labels
    [N], made into targets as atf.features makes them — one-hot over C outputs, ±1 for one
    output (C from K; for an [N, N] K one-hot, L_ij = 1 for the same class, else 0: pass ±1
    floats for a one-output model's traced kernel) —; or an atf.Problem, whose label kernel is `atf kernel`'s:
    r rᵀ with r = y − f0, the residual, not y. The two differ unless f0 = 0 (center=True): to
    get `atf kernel`'s numbers pass the problem; to align with the targets themselves pass y.

    Returns an atf.Alignment (float() gives the value) that also records whether it was
    centred, which label kernel was used and over what rows. NaN when a kernel is 0 (after
    centring: a constant target). Refused (atf.InputError): K not a square kernel over one set
    of examples, NaN or infinite values, a target whose examples or outputs do not fit K,
    labels outside 0 … C − 1."""
    if not isinstance(centered, (bool, np.bool_)):
        _fail(f"atf.alignment: centered: {centered!r} is not True or False")
    Kf, KC = _flat_kernel(K)
    L, desc, over = _label_kernel(Kf, KC, target)
    n = Kf.shape[0]
    fn = _kernel_lib.cka if centered else _kernel_lib.cosine
    value = fn(n, Kf.ctypes.data_as(_lib.P_D), L.ctypes.data_as(_lib.P_D))
    return Alignment(float(value), bool(centered), desc, n, over)


# ---- the report of `atf kernel` ------------------------------------------------------------------

class KernelReport:
    """What `atf kernel` computes for a problem (and a result, networks): its kernels and their
    alignments, from atf_kernel_report_compute — the numbers of `atf kernel`'s tables and file,
    bit for bit.

    kernels: the kernel names, in the file's order (K0, adapted, paper17, theorem1, label,
    final, path_average: those the inputs allow); blocks: the problem's block names;
    cosine[a][b], cka[a][b]: the uncentred and centred alignment of kernels a and b (centred
    over the M rows, as atf.alignment); layer_cosine[block][kernel], layer_cka[block][kernel]:
    the block's part of that kernel against the label kernel (NaN where a kernel has no
    per-block parts: label, theorem1, paper17, and adapted for vector factors); theorem1_s: s
    of Theorem 1 (NaN without a result); f0_check: max |f_θ0(X) − f0| with mlp0 (else NaN);
    K[name]: the M × M kernels (rows m = i·C + k, as /K0, ... in the file; K[name].reshape(N,
    C, N, C).transpose(0, 2, 1, 3) is atf.ntk's layout); label_kernel: what "label" is —
    r rᵀ with r = y − f0, the problem's residual, not y yᵀ; table(name): "cosine", "cka",
    "layer_cosine_label" or "layer_cka_label" as the file's /alignment arrays."""

    label_kernel = RESIDUAL_LABEL

    def __init__(self, r: "_kernel_lib.KernelReportC"):
        nk, nb, M = r.nkernels, r.nblocks, r.M
        self.rows = M
        self.kernels: List[str] = [_lib.text(r.names[j].value) for j in range(nk)]
        self.blocks: List[str] = [_lib.text(r.blocks[b].value) for b in range(nb)]
        self.theorem1_s = float(r.theorem1_s)
        self.f0_check = float(r.f0_check)
        self.K: Dict[str, np.ndarray] = {
            name: np.ctypeslib.as_array(r.K[j], shape=(M, M)).copy()
            for j, name in enumerate(self.kernels)}
        self._tables = {
            "cosine": _copy(r.cosine, (nk, nk)), "cka": _copy(r.cka, (nk, nk)),
            "layer_cosine_label": _copy(r.layer_cosine, (nb, nk)),
            "layer_cka_label": _copy(r.layer_cka, (nb, nk))}
        self.cosine = self._labelled("cosine", self.kernels)
        self.cka = self._labelled("cka", self.kernels)
        self.layer_cosine = self._labelled("layer_cosine_label", self.blocks)
        self.layer_cka = self._labelled("layer_cka_label", self.blocks)

    def _labelled(self, table: str, rows: List[str]) -> Dict[str, Dict[str, float]]:
        t = self._tables[table]
        return {a: {b: float(t[i, j]) for j, b in enumerate(self.kernels)}
                for i, a in enumerate(rows)}

    def table(self, name: str) -> np.ndarray:
        """One of the file's /alignment arrays (a copy): cosine and cka [kernels × kernels],
        layer_cosine_label and layer_cka_label [blocks × kernels]."""
        if name not in self._tables:
            _fail(f"KernelReport.table: {name!r} is not one of {', '.join(self._tables)}")
        return self._tables[name].copy()

    def __repr__(self) -> str:
        label = self.cosine.get("label", {})
        pairs = ", ".join(f"{k} {label[k]:.4f}" for k in self.kernels if k != "label")
        return (f"<atf.KernelReport {self.rows} rows, kernels {', '.join(self.kernels)}; "
                f"cosine with the label kernel (r = y - f0): {pairs}>")


def _copy(ptr: Any, shape: Tuple[int, int]) -> np.ndarray:
    if shape[0] * shape[1] == 0:
        return np.empty(shape)
    return np.ctypeslib.as_array(ptr, shape=shape).copy()


def _named(value: Any, kind: type, reader: Any, what: str) -> Tuple[Any, Optional[bytes]]:
    """(an object of `kind`, its name for the library's messages): the object itself (named by
    the library's default), or one read from a file name (named by it)."""
    if value is None or isinstance(value, kind):
        return value, None
    if isinstance(value, (str, bytes, os.PathLike)):
        return reader(value), _check.path(value, f"atf.kernel_report: {what}")
    return None, None


def _network(value: Any, what: str) -> Tuple[Optional[MLP], Optional[bytes]]:
    """An atf.MLP from an atf.MLP, an MLP file or a torch MLP (atf.from_torch, every parameter:
    the report, as `atf kernel`, uses the whole network)."""
    mlp, name = _named(value, MLP, MLP.read, what)
    if mlp is None and value is not None:
        try:
            mlp = from_torch(value, trainable_only=False)
        except _errors.InputError as e:
            _fail(f"atf.kernel_report: {what}: {e.message}")
    return mlp, name


def _check_pair(problem: Problem, result: Result, pname: str, rname: str) -> None:
    """The fingerprint check `atf kernel` makes (atf_result_match): a result of another problem
    is refused; a result without a fingerprint warns, as the command notes on stderr."""
    root = problem.parent if problem.parent is not None else problem
    theirs, ours = result.problem_fingerprint, root.fingerprint
    if theirs and theirs != ours:
        _fail(f"{rname}: / attribute 'problem_fingerprint': {theirs}, but {pname} has "
              f"fingerprint {ours}: the result was computed from another problem")
    if not theirs:
        warnings.warn(f"atf.kernel_report: {rname} has no problem_fingerprint (written by an "
                      f"earlier atf): cannot check that it was computed from {pname}",
                      RuntimeWarning, stacklevel=3)


def _own_factors(result: Result) -> Result:
    """The result itself when every spectral block has its singular vectors; else a private
    copy (its file, read back: the same bits), because atf_kernel_report_compute then fills
    them by atf_result_factors, which reallocates the factor arrays the caller's Result views."""
    if all(b.layout != "spectral" or (b.U is not None and b.V is not None)
           for b in result.blocks.values()):
        return result
    with tempfile.TemporaryDirectory(prefix="atf-kernel-") as scratch:
        path = os.path.join(scratch, "result.h5")
        result.write(path)
        return Result.read(path)


def kernel_report(problem: Any, result: Any = None, *, mlp0: Any = None, mlp: Any = None,
                  path_points: int = 50, path_method: str = "auto") -> KernelReport:
    """`atf kernel PROBLEM [RESULT] [--mlp0 MLP0] [--mlp MLP] [--path-points T]
    [--path-method M]` in process: atf_kernel_report_compute, the function behind the command,
    so every kernel, alignment and per-layer alignment equals the command's for the same files
    bit for bit (its -o file and --json tables). Returns an atf.KernelReport with the values
    labelled by kernel and block name.

    problem: an atf.Problem or a problem file; result: an atf.Result of it, a result file, or
    None (then K0 and the label kernel only); mlp0, mlp: the network the problem was built from
    and the trained one (atf.MLP, an MLP file or a torch MLP) for the final and path-averaged
    kernels, whose inputs are recovered from the problem's block W1; path_points T (1 …
    100000) and path_method (auto, materialize, hadamard) as the command's.

    The label kernel is `atf kernel`'s: r rᵀ with r = y − f0 (the residual), not y yᵀ — see
    atf.alignment, which takes the targets themselves too. The per-layer alignments are each
    block's part of K0, adapted (eq. 7: Result.kernel(X, per_layer=True) at the problem's
    inputs), final and path_average against it.

    Refused (atf.InputError, with the library's one-line message where it refuses): a result
    of another problem (the fingerprints differ) or with other blocks, networks that do not fit
    the problem or (mlp0) do not reproduce its /f0, bad path_points or path_method."""
    prob, pname = _named(problem, Problem, Problem.read, "problem")
    if prob is None:
        _fail(f"atf.kernel_report: problem: expected an atf.Problem or a problem file, got "
              f"{type(problem).__name__}")
    res, rname = _named(result, Result, Result.read, "result")
    if res is None and result is not None:
        _fail(f"atf.kernel_report: result: expected an atf.Result, a result file or None, got "
              f"{type(result).__name__}")
    m0, m0name = _network(mlp0, "mlp0")
    m1, m1name = _network(mlp, "mlp")
    T = _check.integer(path_points, "atf.kernel_report: path_points", 1, 100000)
    meth = ctypes.c_int()
    err = _lib.errbuf()
    _errors.check(_lib.lib.atf_path_method_parse(
        _check.text(path_method, "atf.kernel_report: path_method"), ctypes.byref(meth), err), err)
    if res is not None:
        _check_pair(prob, res, os.fsdecode(pname or b"the problem"),
                    os.fsdecode(rname or b"result"))
    own = _own_factors(res) if res is not None else None
    inputs = _kernel_lib.KernelInputsC(
        prob._p, own._p if own is not None else None, m0._h if m0 is not None else None,
        m1._h if m1 is not None else None, T, meth.value, pname, rname, m0name, m1name)
    out = _kernel_lib.KernelReportC()
    _errors.check(_kernel_lib.report_compute(ctypes.byref(inputs), ctypes.byref(out), err), err)
    try:
        return KernelReport(out)
    finally:
        _kernel_lib.report_free(ctypes.byref(out))
