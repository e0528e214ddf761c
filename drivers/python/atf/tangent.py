"""Tangent features of a model at any inputs, and what is built from them: atf.features,
atf.ntk, atf.path_kernel, and the linearised model and adapted kernel behind Result.predict and
Result.kernel.

A model is an atf.MLP (factored Jacobians from the C library: H [N, rows], D [N·C, cols] per
block) or any torch module (dense per-parameter Jacobians from functorch, see _torch.py). The
kernels are assembled here with numpy from those blocks as [N1, N2, C, C] (neural-tangents'
layout with trace_axes=()): K[i, j, k, l] = Σ_blocks ⟨∇f_k(x1_i), M̂² ∇f_l(x2_j)⟩ (M̂ = I for the
NTK), then traced or diagonalised over the outputs on request, whole or in tiles of examples."""
import ctypes
import numbers
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _check, _errors, _lib, _torch
from ._check import as_inputs
from ._progress import Progress, ProgressArg
from .mlp import MLP

_c = _lib.lib


def _fail(message):
    raise _errors.InputError(message, "bad input")


class TBlock:
    """One block's tangent features: factored (H [N, rows], D [M, cols]) or dense (J [M,
    rows·cols])."""

    def __init__(self, name, rows, cols, H=None, D=None, J=None, index=None):
        self.name, self.rows, self.cols = name, rows, cols
        self.H, self.D, self.J = H, D, J
        self.index = index  # the block's index in the C Jacobian (MLPs), else None

    factored = property(lambda self: self.J is None)

    def dense(self):
        """J [M, rows·cols] (formed for factored blocks: row m is vec(h_i δ_mᵀ))."""
        if self.J is not None:
            return self.J
        N, M = self.H.shape[0], self.D.shape[0]
        C = M // N
        return np.einsum("ia,ikb->ikab", self.H, self.D.reshape(N, C, self.cols)).reshape(
            M, self.rows * self.cols)


class _CJacobian:
    """Owns a C atf_jacobian; numpy views of its arrays keep it alive."""

    def __init__(self):
        self.c = _lib.JacobianC()

    def view(self, ptr, shape):
        n = int(np.prod(shape))
        buf = (ctypes.c_double * n).from_address(ctypes.addressof(ptr.contents))
        buf._atf_owner = self
        return np.frombuffer(buf, dtype=np.float64).reshape(shape)

    def __del__(self):
        _c.atf_jacobian_free(ctypes.byref(self.c))


class Tangent:
    """f [N, C] (the model's outputs) and the blocks of its Jacobian at N inputs."""

    def __init__(self, N, C, f, blocks, jac=None):
        self.N, self.C, self.M = N, C, N * C
        self.f, self.blocks, self.jac = f, blocks, jac

    def names(self):
        return [b.name for b in self.blocks]


def mlp_tangent(mlp: MLP, X: Any, what: str = "X", prog: Optional[Progress] = None
                ) -> Tangent:
    """The factored Jacobian of an atf.MLP at X, from atf_mlp_jacobian (no copies: the arrays
    are views of the C memory); the MLP's frozen blocks are left out."""
    X = as_inputs(X, mlp.widths[0], what)
    if prog is not None:
        prog.start(f"Jacobian at {what.rsplit(': ', 1)[-1]} ({X.shape[0]} examples, C library)",
                   0)
    owner = _CJacobian()
    err = _lib.errbuf()
    e = _c.atf_mlp_jacobian(mlp._h, X.shape[0], X.ctypes.data_as(_lib.P_D),
                            ctypes.byref(owner.c), err)
    _errors.check(e, err)
    J = owner.c
    N, C, M = J.N, J.C, J.M
    blocks = []
    for b in range(J.nblocks):
        jb = J.blocks[b]
        name = _lib.text(jb.name)
        if name in mlp.frozen:
            continue
        blocks.append(TBlock(name, jb.rows, jb.cols, H=owner.view(jb.H, (N, jb.rows)),
                             D=owner.view(jb.D, (M, jb.cols)), index=b))
    return Tangent(N, C, owner.view(J.f, (N, C)), blocks, owner)


class TorchModel:
    """A float64 snapshot of a torch module that is not an MLP (the general path), with the
    names of the parameters that become blocks (trainable_only: those with requires_grad)."""

    def __init__(self, module: Any, trainable_only: bool = True, eval_mode: bool = False):
        self.names = _torch.trainable_names(module, trainable_only)
        self.module = _torch.snapshot(module, eval_mode)

    def __repr__(self):
        return f"<atf torch model {type(self.module).__name__}, {len(self.names)} parameters>"


def resolve(model: Any, what: str = "model", trainable_only: bool = True,
            eval_mode: bool = False) -> Union[MLP, TorchModel]:
    """An atf.MLP or a TorchModel for any model argument (torch MLPs become atf.MLP): the torch
    model's checks (_torch.check_module: NaN parameters, training mode) first, then the MLP
    path (atf.from_torch), else the general path. Refuses a model left without blocks (every
    parameter frozen)."""
    if isinstance(model, MLP):
        m = model if trainable_only else model._unfrozen()
        if not m.trainable_blocks():
            _fail(f"{what}: every block of the network is frozen ({', '.join(m.frozen)}): "
                  "pass trainable_only=False to keep them")
        return m
    if isinstance(model, TorchModel):
        return model
    if _torch.is_module(model):
        _torch.check_module(model, what, eval_mode)
        try:
            m = MLP._from_torch(model, trainable_only, eval_mode=True)
        except _errors.InputError:
            m = TorchModel(model, trainable_only, eval_mode)
            if not m.names:
                _fail(f"{what}: every parameter of the model has requires_grad=False: pass "
                      "trainable_only=False to keep them")
            return m
        return resolve(m, what)
    _fail(f"{what}: expected an atf.MLP or a torch.nn.Module, got {type(model).__name__}")


def tangent(model: Union[MLP, TorchModel], X: Any, what: str = "X",
            prog: Optional[Progress] = None) -> Tangent:
    if isinstance(model, MLP):
        return mlp_tangent(model, X, what, prog)
    f, blocks = _torch.module_tangent(model.module, X, what, model.names, prog)
    N, C = f.shape
    return Tangent(N, C, f, [TBlock(n, r, c, H, D, J) for n, r, c, H, D, J in blocks])


# ---- kernels in [N1, N2, C, C] -------------------------------------------------------------------

def _to_layout(G, N1, N2, C):
    """[N1·C, N2·C] (rows m = i·C + k) -> [N1, N2, C, C]."""
    return G.reshape(N1, C, N2, C).transpose(0, 2, 1, 3)


def _pair_gram(b1, b2, N1, N2, C, left=None, right=None):
    """Σ over the block of ⟨G1, L G2 R⟩ in [N1, N2, C, C], with the symmetric maps L (rows ×
    rows) and R (cols × cols) given as (U, w): I + U diag(w) Uᵀ, or None for I."""
    if b1.factored and b2.factored:
        GH = b1.H @ b2.H.T
        if left is not None:
            U, w = left
            GH += (b1.H @ U) * w @ (b2.H @ U).T
        GD = b1.D @ b2.D.T
        if right is not None:
            V, w = right
            GD += (b1.D @ V) * w @ (b2.D @ V).T
        return GH[:, :, None, None] * _to_layout(GD, N1, N2, C)
    J1, J2 = b1.dense(), b2.dense()
    if left is not None or right is not None:
        G = J2.reshape(-1, b2.rows, b2.cols)
        if left is not None:
            U, w = left
            G = G + np.einsum("pk,k,kmq->mpq", U, w, np.einsum("pk,mpq->kmq", U, G),
                              optimize=True)
        if right is not None:
            V, w = right
            G = G + np.einsum("mpk,k,qk->mpq", G @ V, w, V, optimize=True)
        J2 = G.reshape(J2.shape)
    return _to_layout(J1 @ J2.T, N1, N2, C)


def _check_same(t1, t2):
    if t1.names() != t2.names() or t1.C != t2.C:
        _fail("kernel: the two inputs give different blocks")


Kernel = Union[np.ndarray, Dict[str, np.ndarray]]
Axes = Union[int, Sequence[int]]
Reduce = Callable[[np.ndarray], np.ndarray]


def _names_output_axis(axes: Axes, what: str) -> bool:
    """Whether neural-tangents-style `axes` (axes of one model output f(X) [N, C]) name the
    output axis (-1 or 1); () names none. atf flattens each example's output to C values, so
    there is one output axis; the sample axis (0 or -2) is refused: atf's kernels are between
    examples, and tracing over them would mix the examples the kernel is about."""
    if isinstance(axes, (bool, np.bool_)):
        _fail(f"{what}: {axes!r} is not an axis or a tuple of axes")
    if isinstance(axes, numbers.Integral):
        axes = (axes,)
    try:
        items = tuple(axes)
    except TypeError:
        _fail(f"{what}: {axes!r} is not an axis or a tuple of axes")
    for a in items:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, numbers.Integral):
            _fail(f"{what}: {a!r} is not an axis (an integer)")
        if int(a) in (0, -2):
            _fail(f"{what}: axis {int(a)} is the sample axis of the outputs [N, C]: it is never "
                  "traced or diagonalised (the kernel is between examples); the output axis is "
                  "-1 (or 1)")
        if int(a) not in (1, -1):
            _fail(f"{what}: axis {int(a)} is out of range for the outputs [N, C] (the output "
                  "axis is -1 or 1)")
    return bool(items)


def _trace_outputs(K: np.ndarray) -> np.ndarray:
    """neural-tangents' trace over the output axis: (1/C) Σ_k K[:, :, k, k], [N1, N2]. Summed in
    the order k = 0 … C−1 whatever the shape (numpy's reductions may reorder by layout), so
    equal entries trace to equal bits in a tile and in the whole."""
    C = K.shape[2]
    out = np.array(K[:, :, 0, 0])
    for k in range(1, C):
        out += K[:, :, k, k]
    return out / C


def output_reduction(trace_axes: Axes, diagonal_axes: Axes, what: str) -> Reduce:
    """The map from a kernel [N1, N2, C, C] to what `trace_axes` and `diagonal_axes` ask for:
    itself, its trace [N1, N2] (divided by C, as neural-tangents does) or its diagonal
    [N1, N2, C]. An axis named by both is refused (neural-tangents silently traces it)."""
    trace = _names_output_axis(trace_axes, f"{what}: trace_axes")
    diagonal = _names_output_axis(diagonal_axes, f"{what}: diagonal_axes")
    if trace and diagonal:
        _fail(f"{what}: trace_axes and diagonal_axes both name the output axis: trace it "
              "(trace_axes=(-1,)) or keep its diagonal (diagonal_axes=(-1,)), not both")
    if trace:
        return _trace_outputs
    if diagonal:
        return lambda K: np.ascontiguousarray(np.diagonal(K, axis1=2, axis2=3))
    return lambda K: K


def _reduced(K: Kernel, reduce: Reduce) -> Kernel:
    return {n: reduce(p) for n, p in K.items()} if isinstance(K, dict) else reduce(K)


def batch_rows(batch_size: Optional[int], what: str) -> Optional[int]:
    """batch_size as an int ≥ 1, or None (no batching)."""
    if batch_size is None:
        return None
    return _check.integer(batch_size, f"{what}: batch_size (examples per batch)", 1)


def examples(model: Union[MLP, TorchModel], X: Any, what: str) -> np.ndarray:
    """X checked whole as the model's inputs (float64, finite, one example per row), so that a
    bad input is named with its own shape before any batch of it runs."""
    if isinstance(model, MLP):
        return as_inputs(X, model.widths[0], what)
    return _torch._as_tensor(X, what).numpy()


def _slices(n: int, size: int) -> List[slice]:
    return [slice(a, min(a + size, n)) for a in range(0, n, size)]


def _place(out: Optional[Kernel], K: Kernel, s1: slice, s2: slice, n1: int, n2: int
           ) -> Kernel:
    """Copy one batch's kernel (or dict of parts) into the whole, allocated at the first batch."""
    if isinstance(K, dict):
        out = out if out is not None else {}
        for name, part in K.items():
            out[name] = _place(out.get(name), part, s1, s2, n1, n2)
        return out
    if out is None:
        out = np.empty((n1, n2) + K.shape[2:])
    out[s1, s2] = K
    return out


def in_batches(model: Union[MLP, TorchModel], X1: np.ndarray, X2: Optional[np.ndarray],
               size: int, combine: Callable[["Tangent", "Tangent"], Kernel], reduce: Reduce,
               prog: Progress, what: str) -> Kernel:
    """The kernel between X1 and X2 (None: X1) in tiles of at most size × size examples:
    the Jacobians of one batch of X1 and one of X2 at a time (a batch of X1's is computed once
    per row of tiles, X2's once per tile), each tile combined and reduced on its own, so that
    memory is bounded by the tile, not by N1 × N2 × C². combine(t1, t2) gives a tile's kernel
    [n1, n2, C, C] or its dict of parts."""
    other = X1 if X2 is None else X2
    rows1, rows2 = _slices(X1.shape[0], size), _slices(other.shape[0], size)
    out = None
    prog.start(f"kernel in {len(rows1)} x {len(rows2)} batches of {size} examples",
               len(rows1) * len(rows2), "batches")
    for s1 in rows1:
        t1 = tangent(model, X1[s1], f"{what}: X1")
        for s2 in rows2:
            same = X2 is None and s1 == s2
            t2 = t1 if same else tangent(model, other[s2], f"{what}: X{1 if X2 is None else 2}")
            _check_same(t1, t2)
            out = _place(out, _reduced(combine(t1, t2), reduce), s1, s2, X1.shape[0],
                         other.shape[0])
            prog.step()
    return out


def _ntk_of(per_layer: bool) -> Callable[["Tangent", "Tangent"], Kernel]:
    def combine(t1: Tangent, t2: Tangent) -> Kernel:
        parts = {b1.name: _pair_gram(b1, b2, t1.N, t2.N, t1.C)
                 for b1, b2 in zip(t1.blocks, t2.blocks)}
        return parts if per_layer else sum(parts.values())
    return combine


def ntk(model: Any, X1: Any, X2: Any = None, per_layer: bool = False, *,
        trace_axes: Axes = (), diagonal_axes: Axes = (), batch_size: Optional[int] = None,
        trainable_only: bool = True, eval_mode: bool = False,
        progress: ProgressArg = None) -> Kernel:
    """The empirical NTK of a model between X1 and X2 (default X1), [N1, N2, C, C] (K[i, j, k, l]
    between output k at x1_i and output l at x2_j); with per_layer, a dict block name -> its part
    (the parts sum to the kernel).

    model: an atf.MLP or a torch module (see atf.features for what is accepted and refused:
    NaN parameters, train-mode BatchNorm/Dropout unless eval_mode=True, outputs that are not one
    tensor, modules functorch cannot differentiate — each atf.InputError naming the module or
    parameter). trainable_only: parameters with requires_grad=False (an MLP's frozen blocks)
    are left out. X1, X2: numpy arrays or torch tensors (float32 converted: the kernel is
    computed in float64); NaN, complex, bool or string inputs are refused. progress: the long
    loops on Python's sys.stderr, throttled — None (default) once the call has run 2 s, True
    from the start, False never, or a file-like object (docs/python.md, "Progress").

    trace_axes, diagonal_axes: neural-tangents' arguments, for the output axis (-1, or 1, of the
    outputs [N, C]; atf flattens each example's output to C values): trace_axes=(-1,) returns
    (1/C) Σ_k K[:, :, k, k], [N1, N2] — the mean over the outputs, as neural-tangents divides
    its trace by the traced size —, diagonal_axes=(-1,) returns K[:, :, k, k], [N1, N2, C].
    The default () for both is deliberately *not* neural-tangents' trace_axes=(-1,): atf's
    kernels are over (example, output) pairs — problem (16)'s rows m = i·C + k, whose
    cross-output terms a finite network does have, and the M × M kernels of `atf kernel` — and
    this function has always returned the full [N1, N2, C, C]; neural-tangents' default would
    change the shape of every existing caller's kernel and, for C > 1, its values. Pass
    trace_axes=(-1,) for neural-tangents' [N1, N2]. The sample axis (0) is never traced, and an
    axis named by both is refused. per_layer applies them to each part.

    batch_size: compute the kernel in tiles of at most batch_size × batch_size examples (the
    Jacobians of one batch of X1 and one of X2 at a time; each tile traced or diagonalised on
    its own), so that memory is bounded by a tile and the returned array, not by the Jacobians
    of all examples; unlike neural-tangents' nt.batch it need not divide N1 or N2 (the last
    batch is smaller). The result equals the unbatched kernel to rounding — within 1e-13
    relative, as the tests check —, not bit for bit: BLAS products of other shapes may round
    differently, and an MLP's kernel of X1 with itself comes unbatched from the C library
    (atf_kernel_mlp). batch_size ≥ N1 and N2 runs the unbatched code (the same bits).
    """
    reduce = output_reduction(trace_axes, diagonal_axes, "atf.ntk")
    size = batch_rows(batch_size, "atf.ntk")
    model = resolve(model, "atf.ntk", trainable_only, eval_mode)
    prog = Progress("atf.ntk", progress)
    if size is not None:
        X1 = examples(model, X1, "atf.ntk: X1")
        X2 = None if X2 is None else examples(model, X2, "atf.ntk: X2")
        if size < X1.shape[0] or (X2 is not None and size < X2.shape[0]):
            out = in_batches(model, X1, X2, size, _ntk_of(per_layer), reduce, prog, "atf.ntk")
            prog.done(f"{X1.shape[0]} x {X1.shape[0] if X2 is None else X2.shape[0]} examples "
                      "in batches")
            return _finite_kernel(out)
    if isinstance(model, MLP) and X2 is None:
        out = _mlp_ntk(model, X1, per_layer, prog)
        prog.done()
        return _finite_kernel(_reduced(out, reduce))
    t1 = tangent(model, X1, "atf.ntk: X1", prog)
    t2 = t1 if X2 is None else tangent(model, X2, "atf.ntk: X2", prog)
    _check_same(t1, t2)
    parts = {}
    prog.start("kernel blocks", len(t1.blocks), "blocks")
    for b1, b2 in zip(t1.blocks, t2.blocks):
        parts[b1.name] = _pair_gram(b1, b2, t1.N, t2.N, t1.C)
        prog.step()
    prog.done(f"{t1.N} x {t2.N} examples, {len(parts)} blocks")
    return _finite_kernel(_reduced(parts if per_layer else sum(parts.values()), reduce))


def _finite_kernel(K: Kernel) -> Kernel:
    """K, or atf.NumericalError naming the first block whose kernel overflowed (finite
    parameters and inputs can still give inf: weights of 1e308)."""
    for name, part in (K.items() if isinstance(K, dict) else [("the kernel", K)]):
        if not np.all(np.isfinite(part)):
            raise _errors.NumericalError(
                f"atf.ntk: {name}: the kernel has non-finite entries (the model's Jacobian "
                f"overflows double precision at these inputs)", "numerical error")
    return K


def _kernel_parts(K: np.ndarray, KB: Optional[np.ndarray], names: list, frozen: tuple,
                  per_layer: bool, N: int, C: int) -> Kernel:
    """The kernel (or its parts) from atf_kernel_*'s K and per-block KB without the frozen
    blocks."""
    if per_layer:
        return {name: _to_layout(KB[j], N, N, C) for j, name in enumerate(names)
                if name not in frozen}
    if frozen:
        K = sum(KB[j] for j, name in enumerate(names) if name not in frozen)
    return _to_layout(K, N, N, C)


def _mlp_ntk(mlp: MLP, X: Any, per_layer: bool, prog: Progress) -> Kernel:
    """K(X, X) of an MLP by atf_kernel_mlp (the C library's Hadamard Grams)."""
    X = as_inputs(X, mlp.widths[0], "atf.ntk: X1")
    N, C = X.shape[0], mlp.widths[-1]
    M, names = N * C, mlp.block_names()
    _check.integer(M, "atf.ntk: X1: examples x outputs", 1)
    prog.start(f"kernel of {N} examples (C library)", 0)
    K = np.zeros((M, M))
    parts = per_layer or bool(mlp.frozen)
    KB = np.zeros((len(names), M, M)) if parts else None
    err = _lib.errbuf()
    e = _c.atf_kernel_mlp(mlp._h, N, X.ctypes.data_as(_lib.P_D), K.ctypes.data_as(_lib.P_D),
                          KB.ctypes.data_as(_lib.P_D) if parts else None, err)
    _errors.check(e, err)
    return _kernel_parts(K, KB, names, mlp.frozen, per_layer, N, C)


def path_kernel(model0: Any, model: Any, X: Any, T: int = 50, method: str = "auto",
                per_layer: bool = False, *, trainable_only: bool = True) -> Kernel:
    """The path-averaged tangent kernel (paper eq. 2 / 20) of two atf.MLP of one architecture:
    J̄ = (1/T) Σ_j ∇f at θ0 + t_j (θ − θ0), t_j = j/(T−1), K̄ = Σ_ℓ J̄_ℓ J̄_ℓᵀ, by
    atf_kernel_path_average; [N, N, C, C] (per_layer: a dict name -> part).

    trainable_only: the blocks frozen in either model (requires_grad=False in torch) are left
    out of the sum. Refused (atf.InputError): models that are not MLPs or of two architectures,
    T not an integer in 1 … 2³¹−1, an unknown method, X as for atf.ntk."""
    m0 = resolve(model0, "atf.path_kernel: model0", trainable_only)
    m1 = resolve(model, "atf.path_kernel: model", trainable_only)
    if not isinstance(m0, MLP) or not isinstance(m1, MLP):
        _fail("atf.path_kernel: both models must be MLPs (atf.MLP or a torch MLP)")
    T = _check.integer(T, "atf.path_kernel: T (at least one point is needed)", 1)
    X = as_inputs(X, m0.widths[0], "atf.path_kernel: X")
    N, C = X.shape[0], m0.widths[-1]
    M, names = N * C, m0.block_names()
    meth = ctypes.c_int()
    err = _lib.errbuf()
    _errors.check(_c.atf_path_method_parse(_check.text(method, "atf.path_kernel: method"),
                                           ctypes.byref(meth), err), err)
    frozen = tuple(n for n in names if n in m0.frozen or n in m1.frozen)
    K = np.zeros((M, M))
    parts = per_layer or bool(frozen)
    KB = np.zeros((len(names), M, M)) if parts else None
    e = _c.atf_kernel_path_average(m0._h, m1._h, N, X.ctypes.data_as(_lib.P_D), T,
                                   meth.value, K.ctypes.data_as(_lib.P_D),
                                   KB.ctypes.data_as(_lib.P_D) if parts else None, err)
    _errors.check(e, err)
    return _kernel_parts(K, KB, names, frozen, per_layer, N, C)


# ---- the linearised model and the adapted kernel of a result -------------------------------------

def _match(t, result, what):
    """The result's blocks in the tangent's order, checked by name and shape."""
    out = []
    for b in t.blocks:
        rb = result.blocks.get(b.name)
        if rb is None or (rb.rows, rb.cols) != (b.rows, b.cols):
            have = ", ".join(f"{n} {r.rows}x{r.cols}" for n, r in result.blocks.items())
            _fail(f"{what}: the model's block {b.name} ({b.rows}x{b.cols}) is not in the result "
                  f"(it has {have}): is this the model the problem was built from (with the same "
                  "trainable_only)?")
        out.append(rb)
    if len(out) != len(result.blocks):
        _fail(f"{what}: the result has {len(result.blocks)} blocks, the model {len(out)}")
    return out


def linear_part(t, rbs):
    """Σ_ℓ ⟨∇_ℓ f(x_i), B_ℓ⟩ [N, C]."""
    out = np.zeros(t.M)
    for b, rb in zip(t.blocks, rbs):
        if b.factored:
            out += np.einsum("mb,mb->m", np.repeat(b.H @ rb.B, t.C, axis=0), b.D)
        else:
            out += b.J @ rb.B.reshape(-1)
    return out.reshape(t.N, t.C)


def predict(model, center, result, X):
    t = tangent(model, X, "Result.predict: X_new")
    rbs = _match(t, result, "Result.predict")
    f = linear_part(t, rbs)
    return f if center else t.f + f


def _side(U, s):
    """(U, s² − 1) for I + U diag(s² − 1) Uᵀ, or None when every s is 1."""
    w = np.asarray(s) ** 2 - 1.0
    return None if not np.any(w) else (U, w)


def _entrywise(b1, b2, S, N1, N2, C):
    """Σ_j S_j g_j(x1) g_j(x2)ᵀ over the entries j of B (S [rows, cols])."""
    if b1.factored and b2.factored:
        T = np.einsum("ia,ab,ja->ijb", b1.H, S, b2.H, optimize=True)
        return np.einsum("ijb,ikb,jlb->ijkl", T, b1.D.reshape(N1, C, -1),
                         b2.D.reshape(N2, C, -1), optimize=True)
    return _to_layout((b1.dense() * S.reshape(-1)) @ b2.dense().T, N1, N2, C)


def _vector_kernel(t1: Tangent, t2: Tangent, rbs: list) -> np.ndarray:
    """Eq. 7 for vector factors (structure full): β = (B_1..B_L) is one vector block, so
    K = s2² (K0 + (s1² − 1) ‖β‖⁻² (Aβ)(Aβ)ᵀ); the blocks share one transformation."""
    N1, N2, C = t1.N, t2.N, t1.C
    K = np.zeros((N1, N2, C, C))
    s1, s2 = float(rbs[0].s1[0]), float(rbs[0].s2[0])
    for b1, b2 in zip(t1.blocks, t2.blocks):
        K += _pair_gram(b1, b2, N1, N2, C)
    beta2 = sum(float(np.sum(rb.B * rb.B)) for rb in rbs)
    if beta2 > 0:
        a1, a2 = linear_part(t1, rbs), linear_part(t2, rbs)
        K += (s1 * s1 - 1.0) / beta2 * np.einsum("ik,jl->ijkl", a1, a2)
    return s2 * s2 * K


def _adapted_part(b1: TBlock, b2: TBlock, rb: Any, N1: int, N2: int, C: int) -> np.ndarray:
    """Block ℓ's part of eq. 7, ∇_ℓ f(x) M̂_ℓ² ∇_ℓ f(x')ᵀ (atf_kernel_adapted_block)."""
    if rb.layout == "entrywise":
        S = (rb.s1 * rb.s2).reshape(rb.rows, rb.cols) ** 2
        return _entrywise(b1, b2, S, N1, N2, C)
    if rb.U is None or rb.V is None:
        _fail(f"Result.kernel: block {rb.name}: singular vectors U, V missing")
    return _pair_gram(b1, b2, N1, N2, C, _side(rb.U, rb.s1), _side(rb.V, rb.s2))


def _adapted_of(result: Any, per_layer: bool) -> Callable[[Tangent, Tangent], Kernel]:
    """combine(t1, t2): eq. 7 between two tangents, whole (the parts summed in block order) or
    per block. Vector factors have no per-block parts: refused with per_layer, as `atf kernel`
    shows "-" for them."""
    def combine(t1: Tangent, t2: Tangent) -> Kernel:
        rbs = _match(t1, result, "Result.kernel")
        if any(rb.layout == "vector" for rb in rbs):
            if per_layer:
                _fail("Result.kernel: per_layer: the result has vector factors (structure full): "
                      "its blocks share one transformation M̂, so the adapted kernel has no "
                      "per-layer parts")
            return _vector_kernel(t1, t2, rbs)
        triples = zip(t1.blocks, t2.blocks, rbs)
        if per_layer:
            return {b1.name: _adapted_part(b1, b2, rb, t1.N, t2.N, t1.C)
                    for b1, b2, rb in triples}
        K = np.zeros((t1.N, t2.N, t1.C, t1.C))
        for b1, b2, rb in triples:  # one part at a time: the sum of the parts, in block order
            K += _adapted_part(b1, b2, rb, t1.N, t2.N, t1.C)
        return K
    return combine


def adapted_kernel(model: Union[MLP, TorchModel], result: Any, X1: Any, X2: Any = None,
                   per_layer: bool = False, *, trace_axes: Axes = (), diagonal_axes: Axes = (),
                   batch_size: Optional[int] = None, progress: ProgressArg = None) -> Kernel:
    """Eq. 7, K = ∇f(x) M̂² ∇f(x')ᵀ, with M̂ recovered from the result's factors (as
    atf_kernel_adapted of the C library, docs/math.md §6), [N1, N2, C, C]; per_layer: a dict
    block name -> ∇_ℓ f M̂_ℓ² ∇_ℓ fᵀ (atf_kernel_adapted_block; they sum to the kernel).
    trace_axes, diagonal_axes, batch_size and progress as for atf.ntk."""
    reduce = output_reduction(trace_axes, diagonal_axes, "Result.kernel")
    size = batch_rows(batch_size, "Result.kernel")
    combine = _adapted_of(result, per_layer)
    prog = Progress("Result.kernel", progress)
    if size is not None:
        X1 = examples(model, X1, "Result.kernel: X1")
        X2 = None if X2 is None else examples(model, X2, "Result.kernel: X2")
        if size < X1.shape[0] or (X2 is not None and size < X2.shape[0]):
            out = in_batches(model, X1, X2, size, combine, reduce, prog, "Result.kernel")
            prog.done()
            return out
    t1 = tangent(model, X1, "Result.kernel: X1", prog)
    t2 = t1 if X2 is None else tangent(model, X2, "Result.kernel: X2", prog)
    _check_same(t1, t2)
    out = _reduced(combine(t1, t2), reduce)
    prog.done(f"{t1.N} x {t2.N} examples")
    return out
