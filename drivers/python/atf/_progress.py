"""The package's one progress convention (docs/python.md, "Progress"): every long call takes
`progress=`, and its lines go to Python's sys.stderr (looked up at each write, so notebooks and
contextlib.redirect_stderr see them), never the C stderr.

    progress=None   (the default) shown only once the call has run AUTO_AFTER seconds: a quick
                    call stays silent, a long one is never mistaken for a hung one
    progress=True   shown from the start, and always a final line
    progress=False  silent
    progress=f      a file-like object with write(): as True, into f

On a terminal (or a notebook's stream that says it is one) one line is rewritten in place at
most every TTY_INTERVAL seconds, as tqdm does; elsewhere a whole line every INTERVAL seconds and
one at the end, never a line per step into a log. A line says what is being done, how far it
is (k/total, or the residual against its tolerance), the rate and an estimate of the time left
where one can be made, and the time so far."""
import math
import sys
import time
from typing import IO, Optional, Union

INTERVAL = 5.0       # seconds between lines off a terminal
TTY_INTERVAL = 0.1   # seconds between in-place updates on a terminal
AUTO_AFTER = 2.0     # progress=None: seconds before the first line

ProgressArg = Union[bool, None, IO[str]]


def _check_arg(progress: ProgressArg, what: str) -> None:
    if progress is None or isinstance(progress, bool) or hasattr(progress, "write"):
        return
    from . import _errors
    raise _errors.InputError(f"{what}: progress must be True, False, None or a file-like "
                             f"object with write(), not {type(progress).__name__}",
                             "usage error")


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


class Progress:
    """Reports `what: phase k/total unit (rate/s, ETA …) [elapsed]` under the convention of
    the module's docstring."""

    def __init__(self, what: str, progress: ProgressArg):
        _check_arg(progress, what)
        self.what = what
        self.auto = progress is None
        self.enabled = progress is not False
        self._out = progress if hasattr(progress, "write") else None
        self.t0 = time.monotonic()
        self._last = None  # time of the last line (None: none written yet)
        self._inplace = False  # an in-place line is showing (it needs a newline at the end)
        self.phase, self.k, self.total, self.unit = "", 0, 0, ""
        self._phase_t0, self.detail = self.t0, ""

    def _stream(self) -> IO[str]:
        return self._out if self._out is not None else sys.stderr

    def _tty(self) -> bool:
        try:
            return bool(self._stream().isatty())
        except (AttributeError, ValueError, OSError):
            return False

    def start(self, phase: str, total: int, unit: str = "") -> None:
        """A new phase of `total` steps (shown as k/total unit; 0: no count)."""
        self.phase, self.k, self.total, self.unit = phase, 0, int(total), unit
        self._phase_t0, self.detail = time.monotonic(), ""
        self._show(force=self._last is None and self._tty() and not self.auto)

    def step(self, n: int = 1) -> None:
        self.k += n
        self._show(force=False)

    def update(self, phase: str, detail: str) -> None:
        """A step whose count is not k/total (a solver's iteration): phase and detail as given."""
        self.phase, self.detail, self.total = phase, detail, 0
        self._show(force=False)

    def _rate(self) -> str:
        """Steps per second and the time left in the phase (k/total phases only)."""
        if not self.total or self.k <= 0:
            return ""
        secs = time.monotonic() - self._phase_t0
        if secs <= 0:
            return ""
        rate = self.k / secs
        left = (self.total - self.k) / rate if rate > 0 else math.inf
        unit = self.unit or "steps"
        eta = f", ETA {_duration(left)}" if math.isfinite(left) and self.k < self.total else ""
        return f" ({rate:.3g} {unit}/s{eta})"

    def _line(self) -> str:
        secs = time.monotonic() - self.t0
        if self.total:
            count = f" {self.k}/{self.total}" + (f" {self.unit}" if self.unit else "")
            body = f"{self.phase}{count}{self._rate()}"
        else:
            body = f"{self.phase}{', ' + self.detail if self.detail else ''}"
        return f"{self.what}: {body} [{_duration(secs)}]"

    def _show(self, force: bool) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if self.auto and now - self.t0 < AUTO_AFTER:
            return
        tty = self._tty()
        interval = TTY_INTERVAL if tty else INTERVAL
        if not force and self._last is not None and now - self._last < interval:
            return
        if not force and self._last is None and not self.auto and now - self.t0 < interval:
            return
        self._last = now
        out = self._stream()
        if tty:
            out.write("\r\033[K" + self._line())
            self._inplace = True
        else:
            out.write(self._line() + "\n")
        out.flush()

    def done(self, summary: Optional[str] = None) -> None:
        """The final line: always with progress=True or a file, and with progress=None only
        when a line was shown before (a quick call stays silent)."""
        if not self.enabled or (self.auto and self._last is None):
            return
        secs = time.monotonic() - self.t0
        line = f"{self.what}: {summary or 'done'} [{_duration(secs)}]"
        out = self._stream()
        out.write(("\r\033[K" if self._inplace else "") + line + "\n")
        out.flush()
        self._inplace = False


class SolverProgress:
    """A solver's hooks.progress (atf_solve_progress) shown through a Progress: the method, its
    step against its limit, the residual against its tolerance, the passes over the data, and
    an estimate of the time left from the residual's fall so far (log-linear, as the CG
    table's ETA)."""

    def __init__(self, prog: Progress):
        self.prog = prog
        self._first = None  # (seconds, log measure) of the first report of the current method
        self._method = None

    def _eta(self, seconds: float, measure: float, tol: float) -> str:
        if not (measure > 0 and tol > 0 and math.isfinite(measure)):
            return ""
        if self._first is None:
            self._first = (seconds, math.log(measure))
            return ""
        t0, l0 = self._first
        fall = (l0 - math.log(measure)) / max(seconds - t0, 1e-9)
        if fall <= 0 or measure <= tol:
            return ""
        return f", ETA ~{_duration(math.log(measure / tol) / fall)}"

    def report(self, p) -> None:
        method = p.method.decode() if p.method else "solver"
        if method != self._method:
            self._method, self._first = method, None
        measure = p.measure
        res = (f", residual {measure:.2e} (tol {p.tolerance:.1e})"
               if math.isfinite(measure) else "")
        detail = (f"step {p.iteration}/{p.max_iterations}{res}, {p.passes} passes"
                  f"{self._eta(p.seconds, measure, p.tolerance)}")
        self.prog.update(method, detail)
