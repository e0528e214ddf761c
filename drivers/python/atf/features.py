"""atf.features: the problem (16) of a model at its weights on (X, Y), as `atf features` builds
it (docs/tangent.md §4): r = y − f0, /y, /f0, /labels, the test split, provenance.

An MLP (atf.MLP, or a torch nn.Sequential MLP) gives factored blocks W1, b1, ... whose H and D are
moved from the C Jacobian into the problem without a copy; any other torch module gives one dense
block per parameter tensor (functorch). The problem remembers the model (and whether it was
centered), so that results solved from it predict and give kernels at new inputs."""
import ctypes

import numpy as np

from . import _errors, _lib, _torch, tangent as _tan
from .mlp import MLP
from .problem import FACTORED, Block, Problem, _fill_block, _put

_c = _lib.lib


_fail = _errors.fail


def _classes(Ys):
    """The class list of integer labels: every label present, in increasing order (as
    `atf features` on a data set with labels)."""
    ints = [y for y in Ys if y is not None and (np.issubdtype(y.dtype, np.integer) or
                                                 y.dtype == np.bool_)]
    return np.unique(np.concatenate([y.reshape(-1) for y in ints])) if ints else None


def targets(Y, N, C, classes, what):
    """(y [N, C], labels [N] or None). Class indices become ±1 (two classes, one output: the
    first class −1, the second +1) or one-hot targets (one output per class), labels the index
    into the class list; one-hot float targets and ±1 targets of one output keep their labels."""
    Y = _torch.to_numpy(Y)
    if Y.shape[0] != N:
        _fail(f"{what}: {Y.shape[0]} rows but there are {N} inputs")
    if np.issubdtype(Y.dtype, np.integer) or Y.dtype == np.bool_:
        if Y.ndim != 1 and not (Y.ndim == 2 and Y.shape[1] == 1):
            _fail(f"{what}: integer targets are class indices and must have shape [N], got "
                  f"{Y.shape}")
        labels = np.searchsorted(classes, Y.reshape(-1)).astype(np.intc)
        K = len(classes)
        if C == 1 and K <= 2:
            return np.where(labels == 1, 1.0, -1.0).reshape(N, 1), labels
        if C == K:
            y = np.zeros((N, C))
            y[np.arange(N), labels] = 1.0
            return y, labels
        _fail(f"{what}: {K} classes but the model has {C} outputs (two classes need 1 output "
              "(±1 targets) or 2 (one-hot), more classes one output per class)")
    y = np.asarray(Y, dtype=np.float64)
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


def _split(model, X, Y, classes, center, penalty, what):
    """One split: a C problem (not yet validated) owning its arrays."""
    t = _tan.tangent(model, X, what)
    y, labels = targets(Y, t.N, t.C, classes, "Y" if what == "X" else "Y_test")
    f0 = np.zeros((t.N, t.C)) if center else np.array(t.f)
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
                _move_factored(P.blocks[j], t.jac.c.blocks[j], penalty)
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


def features(model, X, Y, X_test=None, Y_test=None, center=False, penalty="sq"):
    """The problem (16) of `model` at its weights on (X, Y): an atf.Problem with r = y − f0
    (center: r = y, f0 = 0), /y, /f0, /labels when Y are class indices or one-hot (or ±1 with
    one output), and (X_test, Y_test) as its test split.

    model: an atf.MLP or a torch module. nn.Sequential MLPs (atf.from_torch) give factored
    blocks W1, b1, W2, ...; any other module dense per-parameter blocks named as its parameters
    (each tensor seen as a matrix: an nn.Linear weight as [in, out], a conv weight as
    [C_in·k·k, C_out], a bias as [1, out]). The problem remembers a float64 snapshot of the
    model, for Result.predict and Result.kernel."""
    m = _tan.resolve(model)
    if (X_test is None) != (Y_test is None):
        _fail("atf.features: X_test and Y_test go together (the test split needs its targets)")
    if len(str(penalty).encode()) >= _lib.SPECLEN:
        _fail("atf.features: penalty spec too long")
    Ys = [_torch.to_numpy(Y)] + ([_torch.to_numpy(Y_test)] if Y_test is not None else [])
    classes = _classes(Ys)
    p = _split(m, X, Y, classes, center, str(penalty), "X")
    try:
        if X_test is not None:
            p.contents.test = _split(m, X_test, Y_test, classes, center, str(penalty), "X_test")
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
    return prob
