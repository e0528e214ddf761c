"""atf.Result, atf.solve and atf.baseline over libatf's solver (solver/atf_solver.h).

A solve runs in a worker thread (ctypes releases the GIL during the call) while the calling
thread waits; a SIGINT handler installed for the duration of the call raises the solver's
interrupt flag, so Ctrl-C ends the solve with status `interrupted` and the last iterate."""
import ctypes
import math
import os
import signal
import sys
import threading
from typing import IO, TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _check, _errors, _lib
from ._progress import Progress, ProgressArg, SolverProgress
from .problem import Problem, _file_bytes, _from_file_bytes

if TYPE_CHECKING:  # the kernels' types (tangent imports this module)
    from . import tangent

_c = _lib.lib
SOLVED, MAX_ITERATIONS, INFEASIBLE, INTERRUPTED, NUMERICAL_ERROR = range(5)  # atf_status
_LAYOUTS = {0: "spectral", 1: "entrywise", 2: "vector"}


def _view(ptr, shape, owner):
    """A numpy view of a C array that keeps its owner (the Result) alive; None for NULL."""
    if not ptr:
        return None
    n = int(np.prod(shape))
    buf = (ctypes.c_double * n).from_address(ctypes.addressof(ptr.contents))
    buf._atf_owner = owner
    return np.frombuffer(buf, dtype=np.float64).reshape(shape)


class ResultBlock:
    """One block of a result: B [rows, cols], its singular values d and the factors s1, sigma,
    s2 (eq. 15), U and V when present; arrays are views into the result."""

    def __init__(self, b, owner):
        self.name = _lib.text(b.name)
        self.rows, self.cols, self.k = b.rows, b.cols, b.k
        self.penalty = _lib.text(b.penalty_spec)
        self.layout = _LAYOUTS.get(b.layout, "unknown")
        self.B = _view(b.B, (b.rows, b.cols), owner)
        self.d = _view(b.d, (b.k,), owner)
        self.s1 = _view(b.s1, (b.k,), owner)
        self.sigma = _view(b.sigma, (b.k,), owner)
        self.s2 = _view(b.s2, (b.k,), owner)
        self.U = _view(b.U, (b.rows, b.k), owner)
        self.V = _view(b.V, (b.cols, b.k), owner)

    def __repr__(self):
        return f"<atf block {self.name} {self.rows}x{self.cols}>"


class Result:
    """A solution of problem (16) (atf_result.h): status and certificates as attributes,
    `.blocks[name]` the per-block solution and factors, `.certificate` the measures that
    certify it for its method (what its repr shows). It pickles (see __reduce__)."""

    def __init__(self):
        raise TypeError("atf.Result comes from atf.solve, atf.baseline or atf.Result.read")

    @classmethod
    def _wrap(cls, p):
        self = cls.__new__(cls)
        self._p = p
        R = p.contents
        self.blocks = {}
        for l in range(R.nblocks):
            blk = ResultBlock(R.blocks[l], self)
            self.blocks[blk.name] = blk
        return self

    @classmethod
    def read(cls, path: Any) -> "Result":
        """Read and validate a result file (path: str, bytes or os.PathLike, as Problem.read)."""
        p = _lib.P_RES()
        err = _lib.errbuf()
        _errors.check(_c.atf_result_read(_check.path(path, "atf.Result.read"), ctypes.byref(p),
                                         err), err)
        return cls._wrap(p)

    def write(self, path: Any) -> None:
        """Write the result file atomically."""
        err = _lib.errbuf()
        _errors.check(_c.atf_result_write(_check.path(path, "atf.Result.write"), self._p, err),
                      err)

    def __del__(self):
        p, self._p = getattr(self, "_p", None), None
        if p:
            _c.atf_result_free(p)

    def __reduce__(self) -> Tuple[Any, ...]:
        """Pickling (and copy.copy / copy.deepcopy): the exact bytes of the result file `write`
        produces — B and its factors bit for bit, status, method, every residual, certificate,
        count and time, provenance — read back by `read`, plus the model link that the file
        does not hold (the model atf.features remembered, so that predict and kernel still
        work: an atf.MLP always pickles, a torch snapshot when torch can pickle its module)."""
        return (_result_from_bytes, (_file_bytes(self.write),),
                {"model": getattr(self, "_model", None),
                 "centered": getattr(self, "_center", False)})

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self._model, self._center = state["model"], state["centered"]

    status = property(lambda self: _lib.text(_c.atf_status_name(self._p.contents.info.status)))
    method = property(lambda self: _lib.text(self._p.contents.info.method))
    linsys = property(lambda self: _lib.text(self._p.contents.info.linsys))
    structure = property(lambda self: _lib.text(_c.atf_structure_name(self._p.contents.structure)))
    objective = property(lambda self: self._p.contents.info.objective)
    iterations = property(lambda self: self._p.contents.info.iterations)
    primal_residual = property(lambda self: self._p.contents.info.primal_residual)
    dual_residual = property(lambda self: self._p.contents.info.dual_residual)
    constraint_residual = property(lambda self: self._p.contents.info.constraint_residual)
    stationarity = property(lambda self: self._p.contents.info.stationarity)
    ls_residual = property(lambda self: self._p.contents.info.ls_residual)
    loss_value = property(lambda self: self._p.contents.info.loss_value)
    penalty_value = property(lambda self: self._p.contents.info.penalty_value)
    pg_residual = property(lambda self: self._p.contents.info.pg_residual)
    duality_gap = property(lambda self: self._p.contents.info.duality_gap)
    operator_passes = property(lambda self: self._p.contents.info.operator_passes)
    inner_iterations = property(lambda self: self._p.contents.info.inner_iterations)
    method_note = property(lambda self: _lib.text(self._p.contents.info.method_note))
    loss = property(lambda self: _lib.text(self._p.contents.loss))
    seconds = property(lambda self: self._p.contents.info.solve_seconds)
    problem_fingerprint = property(lambda self: _lib.text(self._p.contents.problem_fingerprint))

    def _model_for(self, model, what):
        from . import tangent
        if model is not None:
            return tangent.resolve(model), getattr(self, "_center", False)
        if getattr(self, "_model", None) is None:
            raise _errors.InputError(
                f"Result.{what}: this result does not know its model (its problem was not built "
                f"by atf.features in this session): pass model=", "usage error")
        return self._model, self._center

    def predict(self, X_new, model=None):
        """The linearised model at new inputs, f0(X_new) + Σ_ℓ ⟨∇_ℓ f(X_new), B_ℓ⟩ [N, C]
        (without f0 when the problem was centered). model: the network the problem was built
        from; by default the one remembered by atf.features."""
        from . import tangent
        m, center = self._model_for(model, "predict")
        return tangent.predict(m, center, self, X_new)

    def kernel(self, X1: Any, X2: Any = None, model: Any = None, per_layer: bool = False, *,
               trace_axes: "tangent.Axes" = (), diagonal_axes: "tangent.Axes" = (),
               batch_size: Optional[int] = None,
               progress: ProgressArg = None) -> "tangent.Kernel":
        """The adapted kernel of eq. 7, K(x, x') = ∇f(x) M̂² ∇f(x')ᵀ with M̂ from this
        result's factors (the kernel of `atf kernel`'s /adapted), between X1 and X2 (default
        X1), in neural-tangents' layout [N1, N2, C, C].

        per_layer: a dict block name -> ∇_ℓ f(x) M̂_ℓ² ∇_ℓ f(x')ᵀ (atf_kernel_adapted_block,
        the parts of `atf kernel`'s per-layer tables), which sum to the kernel; refused
        (atf.InputError) for vector factors (structure full), whose blocks share one M̂.
        trace_axes, diagonal_axes (default (): the full kernel, not neural-tangents' default
        trace_axes=(-1,)), batch_size and progress: as for atf.ntk."""
        from . import tangent
        m, _ = self._model_for(model, "kernel")
        return tangent.adapted_kernel(m, self, X1, X2, per_layer, trace_axes=trace_axes,
                                      diagonal_axes=diagonal_axes, batch_size=batch_size,
                                      progress=progress)

    @property
    def penalized(self) -> bool:
        """Whether it solves a penalized loss (squared or xent) rather than interpolation."""
        return self.loss not in ("", "interpolate")

    @property
    def certificate(self) -> Dict[str, float]:
        """The measures that certify this result for the method that computed it, by name, in
        the order the repr shows them (a secondary measure only where it is finite):

        - infeasible: "least-squares residual" (the returned least-squares point's);
        - a penalized loss (fista, newton, factored): "pg residual", "duality gap";
        - a baseline (the NTK min-norm interpolant: baseline, cg): "constraint residual" —
          not a stationarity, which would measure it against a penalty it did not minimise;
        - interpolation by admm: "primal residual", "dual residual" (its stopping test) and
          "stationarity";
        - other interpolation (alm, irls, lp): "constraint residual", "stationarity"."""
        return {name: value for name, value, always in _certificate_items(self)
                if always or math.isfinite(value)}

    def __repr__(self):
        what = f"{self.method}, {self.loss}" if self.penalized else self.method
        cert = ", ".join(f"{name} {value:.1e}" for name, value in self.certificate.items())
        return (f"<atf.Result {self.status}: objective {self.objective:.6g}, "
                f"{self.iterations} iterations, {what}, {cert}>")


def _certificate_items(res: Result) -> List[Tuple[str, float, bool]]:
    """(name, value, shown even when NaN) of the measures that certify res for its method: the
    stopping test and certificate of what it solved (docs/solver.md, "Methods")."""
    info = res._p.contents.info
    if res.status == "infeasible":
        return [("least-squares residual", info.ls_residual, True)]
    if res.penalized:
        return [("pg residual", info.pg_residual, True),
                ("duality gap", info.duality_gap, False)]
    if res.method in BASELINE_METHODS:
        return [("constraint residual", info.constraint_residual, True)]
    if res.method == "admm":
        return [("primal residual", info.primal_residual, True),
                ("dual residual", info.dual_residual, True),
                ("stationarity", info.stationarity, False)]
    return [("constraint residual", info.constraint_residual, True),
            ("stationarity", info.stationarity, True)]


def _result_from_bytes(data: bytes) -> Result:
    """An unpickled Result: its file's bytes read back by Result.read."""
    return _from_file_bytes(data, Result.read)


def _parse(fn, value, what, choices):
    out = ctypes.c_int()
    if fn(str(value).encode(), ctypes.byref(out)) != _errors.OK:
        raise _errors.InputError(f"atf.solve: {what}: '{value}' is not one of {choices}",
                                 "usage error")
    return out.value


def _run_solver(solver, out, err, flag):
    """atf_solver_solve in a worker thread; the calling thread waits and, when it is the main
    thread, turns SIGINT into the solver's interrupt flag."""
    box = {}

    def work():
        box["e"] = _c.atf_solver_solve(solver, ctypes.byref(out), err)

    t = threading.Thread(target=work, name="atf.solve", daemon=True)
    main = threading.current_thread() is threading.main_thread()
    old = None
    if main:
        def on_sigint(signum, frame):
            flag.value = 1
        old = signal.signal(signal.SIGINT, on_sigint)
    try:
        t.start()
        while t.is_alive():
            t.join(0.05)  # wake regularly so that the handler runs in this thread
    finally:
        if main:
            signal.signal(signal.SIGINT, old)
    return box["e"]


def _log_writer(log):
    """The solver's log hook: text to `log` (a callable taking a str, or a file-like object
    with write; None: Python's sys.stderr at the time of each write, so that notebooks and
    contextlib.redirect_stderr see it)."""
    def write(_ctx, text):
        s = text.decode("utf-8", "replace")
        if callable(log):
            log(s)
        else:
            out = log if log is not None else sys.stderr
            out.write(s)
            out.flush()
    return _lib.LOG_FN(write)


def _remove_when_answered(path, status):
    """A file that serves a resume (a checkpoint, a kept factor) goes once the answer is in
    hand, unless the solve stopped short of it."""
    if status not in ("interrupted", "max_iterations") and os.path.exists(path):
        os.remove(path)


class _Checkpoints:
    """atf.solve's checkpoint file (hooks.checkpoint and hooks.resume, docs/record/solver.md
    §15): its state read back when the file exists, every state written to it while the solve
    runs."""

    def __init__(self, path, every, hooks, err):
        self.path = path
        self.sink = _lib.CheckpointFileC(path=path)
        self.state = None
        hooks.checkpoint = ctypes.cast(_c.atf_checkpoint_to_file, _lib.CHECKPOINT_FN)
        hooks.checkpoint_ctx = ctypes.cast(ctypes.pointer(self.sink), ctypes.c_void_p)
        hooks.checkpoint_seconds = every
        if os.path.exists(path):
            self.state = _lib.CheckpointC()
            e = _c.atf_checkpoint_read(path, ctypes.byref(self.state), err)
            if e:
                self.state = None
                _errors.check(e, err)
            hooks.resume = ctypes.pointer(self.state)

    def explain(self, e, err):
        """A failure's message (atf_checkpoint_explain): the file's own reason when it could
        not be written, the file named when its state was refused."""
        _c.atf_checkpoint_explain(ctypes.byref(self.sink), int(self.state is not None), e, err)

    def done(self, status):
        """The answer is in hand: the file goes, unless the solve stopped short of it."""
        _remove_when_answered(self.path, status)

    def free(self):
        if self.state is not None:
            _c.atf_checkpoint_free(ctypes.byref(self.state))
            self.state = None


def _progress_hook(hooks, prog):
    """hooks.progress shown through prog; the callback object is returned to be kept alive
    while the solver runs."""
    display = SolverProgress(prog)
    fn = _lib.PROGRESS_FN(lambda _ctx, p: display.report(p.contents))
    hooks.progress = fn
    return fn


def _summary(res: "Result") -> str:
    """The final progress line: the status, the method and its work."""
    passes = f", {res.operator_passes} passes" if res.operator_passes > 0 else ""
    return f"{res.status} by {res.method} after {res.iterations} iterations{passes}"


def _solve(problem, set_, penalty_override, warm, log=None, checkpoint=None, every=600.0,
           precond_file=None, progress=None, what="atf.solve"):
    if not isinstance(problem, Problem):
        raise TypeError(f"{what}: problem must be an atf.Problem")
    prog = Progress(what, progress)
    err = _lib.errbuf()
    prob = problem._p
    if penalty_override is not None:
        # the override applies to this solve only (as `atf solve --penalty`): set it on the
        # blocks and restore their own penalties afterwards, so that no copy of the operator
        # data is made (the problem is therefore not to be solved from two threads at once)
        spec = _check.text(penalty_override, "atf.solve: penalty")
        blocks = [prob.contents.blocks[l] for l in range(prob.contents.nblocks)]
        saved = [(_lib.PenaltyC.from_buffer_copy(b.penalty), bytes(b.penalty_spec))
                 for b in blocks]
        _errors.check(_c.atf_problem_set_penalty(prob, spec, err), err)
    else:
        saved = None
    try:
        hooks = _lib.HooksC()
        if warm is not None:
            if not isinstance(warm, Result):
                raise TypeError("atf.solve: warm must be an atf.Result")
            _errors.check(_c.atf_result_check(warm._p, prob, b"warm", b"the problem", err), err)
            hooks.warm = warm._p
        flag = ctypes.c_int(0)
        hooks.interrupt = ctypes.pointer(flag)
        writer = _log_writer(log) if set_.verbose else None
        if writer is not None:
            hooks.log = writer
        cps = _Checkpoints(checkpoint, every, hooks, err) if checkpoint is not None else None
        if precond_file is not None:
            hooks.precond_file = precond_file
        progress_fn = _progress_hook(hooks, prog)  # alive while the solver runs (below)
        prog.start("setting up", 0)
        try:
            solver = ctypes.c_void_p()
            e = _c.atf_solver_init(prob, ctypes.byref(set_), ctypes.byref(hooks),
                                   ctypes.byref(solver), err)
            if e and cps:
                cps.explain(e, err)
            _errors.check(e, err)
            out = _lib.P_RES()
            try:
                e = _run_solver(solver, out, err, flag)
            finally:
                _c.atf_solver_free(solver)
            if e and cps:
                cps.explain(e, err)
            _errors.check(e, err)
            status = _lib.text(_c.atf_status_name(out.contents.info.status))
            if cps:
                cps.done(status)
            if precond_file is not None:
                _remove_when_answered(precond_file, status)
        finally:
            if cps:
                cps.free()
        pen = str(penalty_override).encode() if penalty_override is not None else None
        _c.atf_result_record_run(out, ctypes.byref(set_), pen, b"python: atf.solve")
        del progress_fn  # the solver is freed: its hook may go
        res = Result._wrap(out)
        res._model, res._center = problem._model, problem._center
        prog.done(_summary(res))
    finally:
        if saved is not None:
            for l, (p, s) in enumerate(saved):
                prob.contents.blocks[l].penalty = p
                prob.contents.blocks[l].penalty_spec = s
    message = _lib.text(err.value)
    status = res._p.contents.info.status
    if status == INFEASIBLE:
        raise _errors.Infeasible(message or "infeasible", "infeasible", res)
    if status == NUMERICAL_ERROR:
        raise _errors.NumericalError(message or "numerical error", "numerical error", res)
    if status == MAX_ITERATIONS:
        _errors.warn_iteration_limit(message or "atf.solve: iteration limit reached")
    return res


_PROCESSES = {0: "no", 1: "always", 2: "gram"}
_WARM = {0: "ignored", 1: "taken", 2: "refused"}


def methods() -> List[Dict[str, Any]]:
    """The solver's methods, one dict per row of its method table (as `atf methods --json`):
    name, summary, and what it solves and may do — interpolation, penalized (the losses squared
    and xent), baseline (the NTK min-norm interpolant), resumable (checkpoints), matrix_free,
    linsys (solves linear systems with A Aᵀ; Result.linsys names the backend that ran), warm
    ("taken", "ignored" or "refused") and processes ("always", "gram": where the Gram can be
    spread, or "no")."""
    rows = []
    for m in range(_c.atf_method_count()):
        row = _c.atf_method_info_of(m).contents
        rows.append({"name": _lib.text(row.name), "summary": _lib.text(row.summary),
                     "interpolation": bool(row.interpolation), "penalized": bool(row.penalized),
                     "baseline": bool(row.baseline), "resumable": bool(row.resumable),
                     "matrix_free": bool(row.matrix_free), "linsys": bool(row.linsys),
                     "warm": _WARM.get(row.warm, "?"),
                     "processes": _PROCESSES.get(row.processes, "?")})
    return rows


# The methods atf.solve takes by name (atf.baseline names the baseline's own: auto, gram, cg).
SOLVE_METHODS = ("auto",) + tuple(m["name"] for m in methods() if not m["baseline"])
# The methods that compute the NTK min-norm interpolant (their certificate: Result.certificate).
BASELINE_METHODS = frozenset(m["name"] for m in methods() if m["baseline"])


def _linear_systems(s: "_lib.SettingsC", where: str, linsys: str, precond: str,
                    memory_fraction: float, gram_max_rows: int) -> None:
    """The settings of the linear systems with A Aᵀ (docs/solver.md, "Linear systems")."""
    s.linsys = _parse(_c.atf_linsys_kind_parse, linsys, "linsys", "auto, direct, pcg")
    s.precond = _parse(_c.atf_precond_parse, precond, "precond",
                       "auto, none, jacobi, nystrom, nystrom-block, gram32")
    s.memory_fraction = _check.positive(memory_fraction, f"{where}: memory_fraction")
    if s.memory_fraction > 1.0:
        raise _errors.InputError(f"{where}: memory_fraction = {memory_fraction!r} is not in "
                                 "(0, 1]", "usage error")
    s.gram_max_rows = _check.integer(gram_max_rows, f"{where}: gram_max_rows", 0)


def _settings(structure: str, tol: float, max_iter: int, verbose: bool) -> "_lib.SettingsC":
    s = _c.atf_settings_default()
    s.structure = _parse(_c.atf_structure_parse, structure, "structure", "layer, diagonal, full")
    s.eps_rel = _check.positive(tol, "atf.solve: tol")
    s.max_iter = _check.integer(max_iter, "atf.solve: max_iter", 1)
    s.verbose = 1 if verbose else 0
    return s


def solve(problem: Problem, penalty: Optional[str] = None, *, loss: str = "interpolate",
          method: str = "auto", structure: str = "layer", tol: float = 1e-6,
          max_iter: int = 10000, newton_rank: int = -1, continuation: float = 2.0,
          warm: Optional["Result"] = None, verbose: bool = False,
          log: Union[None, Callable[[str], Any], IO[str]] = None,
          checkpoint: Union[None, str, "os.PathLike[str]"] = None,
          checkpoint_every: float = 600.0,
          precond_file: Union[None, str, "os.PathLike[str]"] = None,
          linsys: str = "auto", precond: str = "auto", memory_fraction: float = 0.75,
          gram_max_rows: int = 10000, progress: ProgressArg = None) -> Result:
    """Solve problem (16) for `problem` (an atf.Problem), as `atf solve`.

    penalty overrides every block's penalty for this solve (the problem keeps its own);
    loss: "interpolate" (the constraints A vec B = r exactly), or a penalized loss
    "squared:lambda=λ" or "xent:lambda=λ" (cross-entropy needs the problem's labels), as
    `--loss`; method: auto (the library picks: factored for a penalized loss where every block is
    nuclear, else newton; for interpolation ADMM
    where the Gram fits in memory — in double, or on one process in single precision for ADMM's
    projection by PCG — else the augmented Lagrangian alm; the choice and its reason are in
    Result.method and Result.method_note) or the name of a method (atf.methods() lists them with
    what each solves and may do); structure: layer, diagonal or full; tol is the relative tolerance
    eps_rel; newton_rank the Nyström preconditioner's rank (-1 auto, 0 none); warm an earlier
    atf.Result of the same problem; continuation (newton, nonconvex penalties, warm solved at
    another λ of the same loss) the largest ratio of the λ solved on the way there, each to pg
    residual 1e-3 (0: none), as `atf solve --continuation`; verbose writes the solver's iteration
    table to `log` (a callable taking a str, or a file-like object; default Python's sys.stderr);
    checkpoint (methods newton, factored, alm, admm) a file that keeps the solve's state every
    checkpoint_every seconds: when it exists the solve goes on from it, to the answer the
    uninterrupted solve gives, bit for bit; it is removed once the answer is returned (kept after
    Ctrl-C, with the step it stopped in, and the iteration limit), as `atf solve --checkpoint`;
    precond_file a file for the single-precision Gram's factor that admm's projection by PCG builds
    (2·M² bytes; most of an hour at M = 80 000): written once built, read instead of built when it
    exists (a resumed solve), removed as the checkpoint is, as `atf solve --precond-file`; linsys
    ("auto", "direct", "pcg"), precond ("auto", "none", "jacobi", "nystrom", "nystrom-block",
    "gram32"), memory_fraction and gram_max_rows say how the linear systems with A Aᵀ are solved, as
    `atf solve --linsys --precond --memory-fraction --gram-max-rows` (Result.linsys names the
    backend that ran); progress: where the solve stands on Python's sys.stderr — the method, its
    step, the residual against the tolerance, the passes over the data and an estimate of the
    time left — None (default) once it has run 2 s, True from the start, False never, or a
    file-like object (docs/python.md, "Progress").
    Returns an atf.Result (status solved, or interrupted after Ctrl-C, or max_iterations with
    an atf.IterationLimitWarning); raises atf.Infeasible (with `.result`, the least-squares point),
    atf.InputError for refused settings and inputs, atf.NumericalError when an iteration broke
    down."""
    s = _settings(structure, tol, max_iter, verbose)
    if method not in SOLVE_METHODS:
        raise _errors.InputError(f"atf.solve: method {method!r} is not one of "
                                 f"{', '.join(SOLVE_METHODS)}", "usage error")
    s.method = _parse(_c.atf_method_parse, method, "method", ", ".join(SOLVE_METHODS))
    err = _lib.errbuf()
    if _c.atf_loss_parse(_check.text(loss, "atf.solve: loss"), ctypes.byref(s.loss), err):
        raise _errors.InputError(f"atf.solve: loss: {_lib.text(err.value)}", "usage error")
    s.newton_rank = _check.integer(newton_rank, "atf.solve: newton_rank", -1, 2000)
    s.continuation = _check.nonnegative(continuation, "atf.solve: continuation")
    _linear_systems(s, "atf.solve", linsys, precond, memory_fraction, gram_max_rows)
    every = _check.nonnegative(checkpoint_every, "atf.solve: checkpoint_every")
    path = (_check.output_path(checkpoint, "atf.solve: checkpoint") if checkpoint is not None
            else None)
    pc = (_check.output_path(precond_file, "atf.solve: precond_file")
          if precond_file is not None else None)
    return _solve(problem, s, penalty, warm, log, path, every, pc, progress)


def baseline(problem: Problem, method: str = "auto", *, tol: float = 1e-6,
             max_iter: int = 10000, verbose: bool = False,
             log: Union[None, Callable[[str], Any], IO[str]] = None,
             checkpoint: Union[None, str, "os.PathLike[str]"] = None,
             checkpoint_every: float = 600.0, precond: str = "auto",
             memory_fraction: float = 0.75, gram_max_rows: int = 10000,
             progress: ProgressArg = None) -> Result:
    """The NTK min-norm interpolant B = Aᵀ(AAᵀ)⁻¹r (Theorem 1), as `atf baseline`: method
    auto (the Gram where it fits memory_fraction of the available memory and M ≤ gram_max_rows,
    else CG), gram or cg; tol, max_iter and precond are CG's.
    checkpoint (CG): a file that keeps the solve's state every checkpoint_every seconds; when it
    exists the solve goes on from it to the uninterrupted answer, bit for bit, and it is removed
    once the solve has ended other than interrupted or at max_iter, as with atf.solve;
    progress as atf.solve's (CG's steps and relative residual)."""
    names = {"auto": "auto", "gram": "baseline", "cg": "cg"}
    if method not in names:
        raise _errors.InputError(f"atf.baseline: method {method!r} is not one of auto, gram, cg",
                                 "usage error")
    s = _settings("layer", tol, max_iter, verbose)
    s.baseline = 1
    s.method = _parse(_c.atf_method_parse, names[method], "method", "auto, gram, cg")
    _linear_systems(s, "atf.baseline", "auto", precond, memory_fraction, gram_max_rows)
    every = _check.nonnegative(checkpoint_every, "atf.baseline: checkpoint_every")
    path = (_check.output_path(checkpoint, "atf.baseline: checkpoint") if checkpoint is not None
            else None)
    return _solve(problem, s, None, None, log, path, every, progress=progress,
                  what="atf.baseline")
