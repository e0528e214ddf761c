"""atf.features: the problem (16) of a model at its weights on (X, Y), as `atf features` builds
it (docs/tangent.md §4): r = y − f0, /y, /f0, /labels, the test split, provenance.

An MLP (atf.MLP, or a torch nn.Sequential MLP) gives factored blocks W1, b1, ... whose H and D are
moved from the C Jacobian into the problem without a copy; any other torch module gives one dense
block per parameter tensor (functorch). The problem remembers the model (and whether it was
centered), so that results solved from it predict and give kernels at new inputs."""
import ctypes
from typing import Any, Optional, Tuple

import numpy as np

from . import _check, _errors, _lib, _torch, tangent as _tan
from ._progress import Progress, ProgressArg
from .mlp import MLP
from .problem import FACTORED, Block, Problem, _fill_block, _put

_c = _lib.lib


_fail = _errors.fail


def targets(Y: Any, N: int, C: int, what: str) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """(y [N, C], labels [N] or None).

    Integer class indices [N]: with C ≥ 2 outputs they must be 0 … C−1 and give one-hot targets;
    with one output they must be 0/1 (or −1/+1) and give ±1 targets (class 0 → −1, class 1 →
    +1); labels are the class indices. Float targets [N, C] (or [N] for one output): one-hot
    rows, and ±1 targets of one output, keep their labels. Refused: other labels, bool,
    complex, object or string arrays, NaN or infinite targets, wrong shapes."""
    Y = _torch.to_numpy(Y, what)
    if Y.ndim == 0 or Y.shape[0] != N:
        _fail(f"{what}: {Y.shape[0] if Y.ndim else 0} rows but there are {N} inputs")
    if Y.dtype.kind in "iu":
        if Y.ndim != 1 and not (Y.ndim == 2 and Y.shape[1] == 1):
            _fail(f"{what}: integer targets are class indices and must have shape [N], got "
                  f"{Y.shape}")
        flat = Y.reshape(-1)
        if C == 1 and flat.size and np.all((flat == -1) | (flat == 1)):
            flat = (flat > 0).astype(np.intc)  # ±1 integer targets: the classes 0 and 1
        labels = _check.labels(flat, what, N, C)
        if C == 1:
            return np.where(labels == 1, 1.0, -1.0).reshape(N, 1), labels
        y = np.zeros((N, C))
        y[np.arange(N), labels] = 1.0
        return y, labels
    y = _check.floats(Y, what)
    if y.ndim == 1:
        y = y.reshape(N, 1)
    if y.ndim != 2 or y.shape != (N, C):
        _fail(f"{what}: shape {Y.shape}, expected [{N}, {C}] (the model has {C} outputs) or "
              "class indices [N]")
    if not np.all(np.isfinite(y)):
        _fail(f"{what}: the targets contain NaN or infinite values")
    if C == 1 and np.all(np.abs(y) == 1.0):
        return y, (y[:, 0] > 0).astype(np.intc)
    if C > 1 and np.all((y == 0.0) | (y == 1.0)) and np.all(y.sum(axis=1) == 1.0):
        return y, np.argmax(y, axis=1).astype(np.intc)
    return y, None


def _split(model, X, Y, center, penalty, what, prog):
    """One split: a C problem (not yet validated) owning its arrays."""
    t = _tan.tangent(model, X, f"atf.features: {what}", prog)
    _check.integer(t.M, f"atf.features: {what}: examples x outputs", 1)
    y, labels = targets(Y, t.N, t.C, "atf.features: " + ("Y" if what == "X" else "Y_test"))
    f0 = np.zeros((t.N, t.C)) if center else np.array(t.f)
    if not np.all(np.isfinite(t.f)):
        i, k = np.argwhere(~np.isfinite(t.f))[0]
        _fail(f"atf.features: {what}: the model's output {k} at example {i} is {t.f[i, k]!r}: NaN "
              "or infinite outputs")
    r = y - f0
    p = _c.atf_problem_new(t.N, t.C, len(t.blocks))
    if not p:
        raise MemoryError("atf.features: out of memory")
    try:
        P = p.contents
        ctypes.memmove(P.r, r.ctypes.data, r.nbytes)
        P.f0 = ctypes.cast(_put(f0, np.float64, t.M, "/f0"), _lib.P_D)
        P.y = ctypes.cast(_put(y, np.float64, t.M, "/y"), _lib.P_D)
        if labels is not None:
            P.labels = ctypes.cast(_put(labels, np.intc, t.N, "/labels"),
                                   ctypes.POINTER(ctypes.c_int))
        for j, b in enumerate(t.blocks):
            if b.factored and t.jac is not None:
                _move_factored(P.blocks[j], t.jac.c.blocks[b.index], penalty)
            elif b.factored:
                _fill_block(P.blocks[j], Block.factored(b.name, b.H, b.D, penalty), t.N, t.C,
                            t.M)
            else:
                _fill_block(P.blocks[j], Block.dense(b.name, b.dense(), b.rows, b.cols, penalty),
                            t.N, t.C, t.M)
    except BaseException:
        _c.atf_problem_free(p)
        raise
    return p


def _move_factored(B, jb, penalty):
    """Block B takes the H and D arrays of the C Jacobian block jb (no copy)."""
    B.name = jb.name
    B.rows, B.cols, B.kind, B.structure = jb.rows, jb.cols, FACTORED, 0
    err = _lib.errbuf()
    _errors.check(_c.atf_penalty_parse(penalty.encode(), ctypes.byref(B.penalty), err), err)
    B.penalty_spec = penalty.encode()
    B.H, B.D = jb.H, jb.D
    jb.H = jb.D = None


def features(model: Any, X: Any, Y: Any, X_test: Any = None, Y_test: Any = None,
             center: bool = False, penalty: str = "sq", *, trainable_only: bool = True,
             eval_mode: bool = False, progress: ProgressArg = None) -> Problem:
    """The problem (16) of `model` at its weights on (X, Y): an atf.Problem with r = y − f0
    (center: r = y, f0 = 0), /y, /f0, /labels when Y are class indices or one-hot (or ±1 with
    one output), and (X_test, Y_test) as its test split (Problem.test).

    model: an atf.MLP or a torch module. nn.Sequential MLPs (atf.from_torch) give factored
    blocks W1, b1, W2, ...; any other module dense per-parameter blocks named as its parameters
    (each tensor seen as a matrix: an nn.Linear weight as [in, out], a conv weight as
    [C_in·k·k, C_out], a bias as [1, out]). The problem remembers a float64 snapshot of the
    model, for Result.predict and Result.kernel.

    trainable_only (default True): parameters with requires_grad=False (an atf.MLP's frozen
    blocks) are left out of the blocks; False keeps them. eval_mode: modules whose output
    depends on the training mode (BatchNorm, Dropout, RReLU, InstanceNorm with running
    statistics) are refused while in training mode; eval_mode=True evaluates the model in eval
    mode instead. Otherwise the model runs in the mode it is in. progress: the long loops on
    Python's sys.stderr, throttled (a line every few seconds, in place on a terminal) — None
    (default) once the call has run 2 s, True from the start, False never, or a file-like object
    (docs/python.md, "Progress").

    X, X_test: numpy arrays or torch tensors (float32 and integers are converted: everything is
    computed in float64). Y, Y_test: class indices [N] (0 … C−1 for C outputs; 0/1 or ±1 for
    one output), or float targets [N, C].

    Refused with atf.InputError naming the item: NaN/infinite, complex, bool, object or string
    inputs and targets; class indices outside 0 … C−1; a parameter or buffer with NaN or
    infinite values ('2.weight'); a module that returns a tuple, list or dict, cannot be run on
    X or cannot be differentiated by functorch (e.g. nn.LSTM: named by its qualified name in the
    model, 'lstm'); modules in training mode as above; a model whose every parameter is frozen;
    NaN model outputs; a penalty spec with a NUL character."""
    m = _tan.resolve(model, "atf.features", trainable_only, eval_mode)
    if (X_test is None) != (Y_test is None):
        _fail("atf.features: X_test and Y_test go together (the test split needs its targets)")
    spec = _check.text(penalty, "atf.features: penalty").decode()
    if len(spec.encode()) >= _lib.SPECLEN:
        _fail("atf.features: penalty spec too long")
    prog = Progress("atf.features", progress)
    p = _split(m, X, Y, center, spec, "X", prog)
    try:
        if X_test is not None:
            p.contents.test = _split(m, X_test, Y_test, center, spec, "X_test", prog)
        prov = p.contents.prov
        shape = lambda a: "x".join(map(str, np.shape(a)))  # noqa: E731
        prov.command = (f"python: atf.features({type(model).__name__}, X [{shape(X)}], "
                        f"Y [{shape(Y)}]" + (f", X_test [{shape(X_test)}]" if X_test is not None
                                             else "") + (", center=True" if center else "") +
                        ")").encode()[:_lib.COMMANDLEN - 1]
        prov.data_source = b"python arrays"
        if isinstance(m, MLP):
            prov.mlp_fingerprint = m.fingerprint.encode()
        err = _lib.errbuf()
        _errors.check(_c.atf_problem_validate(p, b"atf.features", err), err)
    except BaseException:
        _c.atf_problem_free(p)
        raise
    prob = Problem._wrap(p)
    prob._model, prob._center = m, bool(center)
    P = p.contents
    prog.done(f"{P.N} examples" + (f" + {P.test.contents.N} test" if X_test is not None else "")
              + f", {P.nblocks} blocks")
    return prob
