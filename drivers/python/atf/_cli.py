"""Running the `atf` program from Python: where it is (`program`), and `run` (exported as
`atf.cli`), which runs one command with `--json` as a child process and returns its JSON line.

The child's stderr (progress lines, iteration tables, in-place `\\r` updates) is copied as it
comes to Python's sys.stderr of the time of the call (or to `log`) by a reader thread, so
notebooks and contextlib.redirect_stderr see it. Exit codes become exceptions: 2 atf.InputError
with the program's one-line message, 3 atf.Infeasible, 4 an atf.IterationLimitWarning (the JSON
is returned), 130 KeyboardInterrupt, anything else atf.Error. Ctrl-C in Python while the child
runs sends it one SIGINT (the child runs in its own process group, so the terminal's SIGINT
reaches Python alone), waits for it to stop cleanly (it writes nothing half-written and exits
130) and re-raises KeyboardInterrupt; a second Ctrl-C sends a second SIGINT (the program then
gives up at once), a third kills it. The child never outlives the call."""
import codecs
import collections
import collections.abc
import json as _json
import os
import re
import signal
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, Union

from . import _check, _errors

Log = Union[None, Callable[[str], Any], IO[str]]
PathArg = Union[str, "os.PathLike[str]"]

_SEGMENT = re.compile(r"(?<=[\r\n])")  # split after every \n or \r, keeping them


def _candidates() -> List[Path]:
    env = os.environ.get("ATF")
    if env:
        return [Path(env)]
    here = Path(__file__)
    return [here.parent / "bin" / "atf",
            here.resolve().parents[3] / "build" / "drivers" / "atf"]


def program() -> str:
    """The path of the `atf` program: $ATF when set (and only then); else the installed
    package's own bin/atf beside these files (pip install . puts it there); else the source
    tree's build/drivers/atf. Raises atf.Error naming the places looked at when none is an
    executable file."""
    tried = _candidates()
    for p in tried:
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    where = ", ".join(str(p) for p in tried)
    hint = ("$ATF names no executable file" if os.environ.get("ATF") else
            "install the package with `pip install --no-build-isolation .` (docs/python.md), "
            "or build it with `bash scripts/build.sh` from the repository root, or set ATF to "
            "its path")
    raise _errors.Error(f"atf: the atf program was not found (looked at {where}); {hint}",
                        "i/o error")


def text_arg(value: Any, what: str) -> str:
    """A string (or os.PathLike) for the command line: NUL is refused (C would stop there)."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, bytes):
        raise _errors.InputError(f"{what}: {value!r} is bytes, not a str", "usage error")
    _check.text(value, what)
    return value


def _argv(args: Sequence[Any]) -> List[str]:
    if isinstance(args, (str, bytes)) or not isinstance(args, collections.abc.Sequence):
        raise _errors.InputError("atf.cli: args must be a list of strings, e.g. "
                                 "['features', '--data', 'synthetic', '-o', 'p.h5']",
                                 "usage error")
    out = []
    for i, a in enumerate(args):
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            a = repr(a)
        out.append(text_arg(a, f"atf.cli: args[{i}]"))
    return out


def _sink(log: Log) -> Callable[[str], None]:
    if callable(log):
        return log
    out = log if log is not None else sys.stderr  # the stderr of the time of the call

    def write(s: str) -> None:
        out.write(s)
        out.flush()
    return write


class _Reader(threading.Thread):
    """Copies the child's stderr to `sink` segment by segment (a segment ends with \\n or \\r)
    as it arrives, and keeps the last lines for the error message."""

    def __init__(self, stream, sink: Optional[Callable[[str], None]]):
        super().__init__(name="atf.cli stderr", daemon=True)
        self.stream, self.sink = stream, sink
        self.tail = collections.deque(maxlen=64)

    def emit(self, seg: str) -> None:
        line = seg.strip("\r\n")
        if line.strip():
            self.tail.append(line)
        if self.sink is not None:
            try:
                self.sink(seg)
            except Exception:  # a closed or failing sink: keep draining the pipe
                self.sink = None

    def run(self) -> None:
        dec = codecs.getincrementaldecoder("utf-8")("replace")
        fd = self.stream.fileno()
        pending = ""
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            parts = _SEGMENT.split(pending + dec.decode(chunk))
            pending = parts.pop()
            for p in parts:
                self.emit(p)
        pending += dec.decode(b"", final=True)
        if pending:
            self.emit(pending)

    def message(self, fallback: str) -> str:
        for line in reversed(self.tail):
            if line.startswith("atf"):
                return line
        return self.tail[-1] if self.tail else fallback


class _Collect(threading.Thread):
    def __init__(self, stream):
        super().__init__(name="atf.cli stdout", daemon=True)
        self.stream, self.data = stream, b""

    def run(self) -> None:
        self.data = self.stream.read()


def _json_line(text: str) -> Optional[Dict[str, Any]]:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return _json.loads(line)
            except ValueError:
                return None
    return None


def _with_json(argv: List[str]) -> List[str]:
    head = argv[:argv.index("--")] if "--" in argv else argv
    if "--json" in head:
        return argv
    return head + ["--json"] + argv[len(head):]


def run(args: Sequence[Union[str, "os.PathLike[str]", int, float]], *, progress: bool = True,
        log: Log = None, json: bool = True) -> Dict[str, Any]:
    """Run `atf ARGS... --json` (a list of arguments, never through a shell; numbers are
    written with repr) and return its JSON line as a dict; exported as `atf.cli`.

    progress: copy the program's stderr (progress, iteration tables, in-place \\r updates) as
    it comes to `log` (a callable taking a str, or a file-like object; default Python's
    sys.stderr at the time of the call), from a reader thread; progress=False keeps it only for
    error messages.
    json=False runs the arguments as given (no --json added: `--help`, `--version`,
    `atf penalty`) and returns {"stdout": the program's output}.

    Raises atf.InputError (exit 2: bad input or usage) with the program's one-line message (its
    last stderr line starting with "atf"), atf.Infeasible (exit 3), atf.Error (exit 1, or no
    JSON line, or killed by a signal); exit 4 (iteration limit, output written) returns the
    JSON with an atf.IterationLimitWarning; exit 130 (the program was interrupted) raises
    KeyboardInterrupt. Ctrl-C in Python while the program runs sends it SIGINT, waits for it to
    stop cleanly and re-raises KeyboardInterrupt; on any exception the child is killed and
    waited for. Arguments that are not strings, numbers or paths, or contain NUL, are refused
    with atf.InputError before anything runs."""
    argv = _argv(args)
    if json:
        argv = _with_json(argv)
    exe = program()
    what = "atf " + " ".join(argv[:2] if argv[:1] == ["experiment"] else argv[:1])
    kw: Dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE,
                          "stderr": subprocess.PIPE, "env": dict(os.environ)}
    if sys.version_info >= (3, 11):
        kw["process_group"] = 0   # the terminal's Ctrl-C reaches Python alone
    else:
        kw["start_new_session"] = True
    proc = subprocess.Popen([exe, *argv], **kw)
    interrupts = 0
    try:
        err = _Reader(proc.stderr, _sink(log) if progress else None)
        out = _Collect(proc.stdout)
        err.start()
        out.start()
        while True:
            try:
                rc = proc.wait()
                break
            except KeyboardInterrupt:
                interrupts += 1
                if proc.poll() is None:
                    if interrupts <= 2:
                        proc.send_signal(signal.SIGINT)
                    else:
                        proc.kill()
        err.join()
        out.join()
    except BaseException:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        raise
    finally:
        for s in (proc.stdout, proc.stderr):
            try:
                s.close()
            except Exception:
                pass
    stdout = out.data.decode("utf-8", "replace")
    if interrupts:
        raise KeyboardInterrupt
    message = err.message(f"{what}: exit {rc}")
    if rc == 130:
        e = KeyboardInterrupt(f"{what} was interrupted (exit 130): {message}")
        e.summary = _json_line(stdout) if json else None
        raise e
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = str(-rc)
        raise _errors.Error(f"{what}: killed by signal {name}", "error")
    if rc == 2:
        raise _errors.InputError(message, "bad input")
    if rc == 3:
        e = _errors.Infeasible(message, "infeasible")
        e.summary = _json_line(stdout) if json else None
        raise e
    if rc not in (0, 4):
        raise _errors.Error(message, "error")
    if not json:
        return {"stdout": stdout}
    summary = _json_line(stdout)
    if summary is None:
        raise _errors.Error(f"{what}: no JSON line on stdout (exit {rc})", "error")
    if rc == 4:
        warnings.warn(f"{message} (iteration limit: the last iterate was written)",
                      _errors.IterationLimitWarning, stacklevel=2)
    return summary
