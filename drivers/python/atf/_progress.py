"""Progress of long Python-side loops (atf.features, atf.ntk): one line on Python's sys.stderr
(looked up at each write, so notebooks and contextlib.redirect_stderr see it), never the C
stderr. Throttled: on a terminal an in-place line (carriage return) at most every TTY_INTERVAL
seconds; elsewhere a line every INTERVAL seconds and one at the end."""
import sys
import time
from typing import IO, Optional, Union

INTERVAL = 5.0       # seconds between lines off a terminal
TTY_INTERVAL = 0.1   # seconds between in-place updates on a terminal

ProgressArg = Union[bool, None, IO[str]]


class Progress:
    """Reports `what: phase k/total [elapsed]`. `progress` is False/None (silent), True
    (sys.stderr at the time of each write) or a file-like object with write()."""

    def __init__(self, what: str, progress: ProgressArg):
        self.what = what
        self.enabled = bool(progress)
        self._out = progress if (progress is not None and not isinstance(progress, bool)
                                 and hasattr(progress, "write")) else None
        self.t0 = time.monotonic()
        self._last = None  # time of the last line (None: none written yet)
        self._inplace = False  # an in-place line is showing (it needs a newline at the end)
        self.phase, self.k, self.total, self.unit = "", 0, 0, ""

    def _stream(self) -> IO[str]:
        return self._out if self._out is not None else sys.stderr

    def _tty(self) -> bool:
        try:
            return bool(self._stream().isatty())
        except (AttributeError, ValueError, OSError):
            return False

    def start(self, phase: str, total: int, unit: str = "") -> None:
        """A new phase of `total` steps (shown as k/total unit)."""
        self.phase, self.k, self.total, self.unit = phase, 0, int(total), unit
        self._show(force=self._last is None and self._tty())

    def step(self, n: int = 1) -> None:
        self.k += n
        self._show(force=False)

    def _line(self) -> str:
        secs = time.monotonic() - self.t0
        count = f" {self.k}/{self.total}" + (f" {self.unit}" if self.unit else "")
        return f"{self.what}: {self.phase}{count if self.total else ''} [{secs:.1f} s]"

    def _show(self, force: bool) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        tty = self._tty()
        interval = TTY_INTERVAL if tty else INTERVAL
        if not force and self._last is not None and now - self._last < interval:
            return
        if not force and self._last is None and now - self.t0 < interval:
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
        """The final line (always written when enabled)."""
        if not self.enabled:
            return
        secs = time.monotonic() - self.t0
        line = f"{self.what}: {summary or 'done'} [{secs:.1f} s]"
        out = self._stream()
        out.write(("\r\033[K" if self._inplace else "") + line + "\n")
        out.flush()
        self._inplace = False
