"""The `atf` commands from Python: `run` (exported as `atf.cli`) runs one command in this
process through libatf_cli.so (drivers/cli/atf_cli_host.h: the program's own code, so its files,
tables and JSON are the program's bit for bit) and returns its JSON line; `program` is where the
`atf` program itself is (for the console script).

The command's stderr (progress lines, iteration tables, in-place `\\r` updates) is copied as it
comes to Python's sys.stderr of the time of the call (or to `log`), so notebooks and
contextlib.redirect_stderr see it. Exit codes become exceptions: 2 atf.InputError with the
command's one-line message, 3 atf.Infeasible, 4 an atf.IterationLimitWarning (the JSON is
returned), 130 KeyboardInterrupt, anything else atf.Error. Ctrl-C while a command runs raises
its stop flag, never a signal of its own: it stops as the program does after Ctrl-C."""
import codecs
import collections
import collections.abc
import json as _json
import os
import re
import ctypes
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _check, _errors, _progress

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


class _Segments:
    """The command's stderr text as it comes (from the thread that runs it, or its progress
    ticker): copied to `sink` segment by segment (a segment ends with \\n or \\r), the last lines
    kept for the error message. With `hold` (progress=None) nothing is copied until the command
    has run _progress.AUTO_AFTER seconds; then what was held is copied and the rest as it
    comes, and a command that ends sooner shows nothing."""

    def __init__(self, sink: Optional[Callable[[str], None]], hold: bool = False):
        self.sink = sink
        self.held: Optional[List[str]] = [] if hold else None
        self.t0 = time.monotonic()
        self.tail: collections.deque = collections.deque(maxlen=64)
        self._dec = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""
        self._lock = threading.Lock()

    def emit(self, seg: str) -> None:
        line = seg.strip("\r\n")
        if line.strip():
            self.tail.append(line)
        if self.sink is None:
            return
        if self.held is not None:
            if time.monotonic() - self.t0 < _progress.AUTO_AFTER:
                self.held.append(seg)
                return
            seg, self.held = "".join(self.held) + seg, None
        try:
            self.sink(seg)
        except Exception:  # a closed or failing sink: keep the text for the message
            self.sink = None

    def feed(self, data: bytes, final: bool = False) -> None:
        with self._lock:
            parts = _SEGMENT.split(self._pending + self._dec.decode(data, final=final))
            self._pending = parts.pop()
            if final and self._pending:
                parts.append(self._pending)
                self._pending = ""
            for p in parts:
                self.emit(p)

    def message(self, fallback: str) -> str:
        for line in reversed(self.tail):
            if line.startswith("atf"):
                return line
        return self.tail[-1] if self.tail else fallback


_WRITE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char),
                             ctypes.c_size_t)


class _HostC(ctypes.Structure):  # atf_cli_host (drivers/cli/atf_cli_host.h)
    _fields_ = [("out", _WRITE_FN), ("err", _WRITE_FN), ("ctx", ctypes.c_void_p),
                ("interrupt", ctypes.POINTER(ctypes.c_int))]


_host_lib = None
_host_lock = threading.Lock()  # the commands keep static configurations: one at a time


def _library_candidates() -> List[Path]:
    env = os.environ.get("ATF_CLI_LIBRARY")
    if env:
        return [Path(env)]
    from . import _lib
    beside = Path(_lib.lib._name).resolve().parent
    return [beside / "libatf_cli.so", beside / "drivers" / "libatf_cli.so"]


def _host():
    """libatf_cli.so (the commands, atf_cli_host.h), loaded once: $ATF_CLI_LIBRARY when set;
    else beside the libatf.so the package loaded (the installed package), or in its build
    directory's drivers/."""
    global _host_lib
    if _host_lib is None:
        tried = _library_candidates()
        for path in tried:
            if path.is_file():
                lib = ctypes.CDLL(str(path))
                lib.atf_cli_host_run.restype = ctypes.c_int
                lib.atf_cli_host_run.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                                 ctypes.POINTER(_HostC)]
                _host_lib = lib
                break
        else:
            where = ", ".join(str(p) for p in tried)
            raise _errors.Error(f"atf: libatf_cli.so was not found (looked at {where}); build "
                                "it with `bash scripts/build.sh`, or set ATF_CLI_LIBRARY to its "
                                "path", "i/o error")
    return _host_lib


def _run_in_process(argv: List[str], err: _Segments) -> Tuple[int, bytes, int]:
    """`atf ARGV...` through libatf_cli.so in a worker thread while this thread waits; Ctrl-C
    raises the command's stop flag (it stops as the program does after Ctrl-C, writing what
    it keeps), a second one returns at once while the command finishes stopping in the
    background. (exit code, stdout bytes, Ctrl-Cs seen)."""
    lib = _host()
    out: List[bytes] = []
    flag = ctypes.c_int(0)
    host = _HostC(out=_WRITE_FN(lambda _c, b, n: out.append(ctypes.string_at(b, n))),
                  err=_WRITE_FN(lambda _c, b, n: err.feed(ctypes.string_at(b, n))),
                  interrupt=ctypes.pointer(flag))
    args = (ctypes.c_char_p * (len(argv) + 2))(b"atf", *[a.encode() for a in argv], None)
    box: Dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            with _host_lock:
                box["rc"] = lib.atf_cli_host_run(len(argv) + 1, args, ctypes.byref(host))
        finally:
            box["keep"] = (host, args, out, err)  # alive until the command has returned
            done.set()

    threading.Thread(target=work, name="atf.cli", daemon=True).start()
    interrupts = 0
    while not done.is_set():
        try:
            done.wait(0.05)  # (an Event: a KeyboardInterrupt here leaves nothing inconsistent)
        except KeyboardInterrupt:
            interrupts += 1
            flag.value = 1
            if interrupts >= 2:
                return 130, b"".join(out), interrupts
    err.feed(b"", final=True)
    return box["rc"], b"".join(out), interrupts


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


def run(args: Sequence[Union[str, "os.PathLike[str]", int, float]], *,
        progress: _progress.ProgressArg = True, log: Log = None,
        json: bool = True) -> Dict[str, Any]:
    """Run `atf ARGS... --json` (a list of arguments, never through a shell; numbers are
    written with repr) and return its JSON line as a dict; exported as `atf.cli`.

    The command runs in this process, through libatf_cli.so (the program's own code: its files,
    tables and JSON are the program's bit for bit), in a worker thread while the calling thread
    waits. progress: copy its stderr (progress, iteration tables, in-place \\r updates) as it
    comes to `log` (a callable taking a str, or a file-like object; default Python's sys.stderr
    at the time of the call); None: the same once the command has run 2 s (a quick one shows
    nothing); a file-like object: into it (when `log` is None); False keeps it only for error
    messages.
    json=False runs the arguments as given (no --json added: `--help`, `--version`,
    `atf penalty`) and returns {"stdout": the program's output}.

    Raises atf.InputError (exit 2: bad input or usage) with the command's one-line message (its
    last stderr line starting with "atf"), atf.Infeasible (exit 3), atf.Error (exit 1, or no
    JSON line); exit 4 (iteration limit, output written) returns the JSON with an
    atf.IterationLimitWarning; exit 130 (interrupted) raises KeyboardInterrupt. Ctrl-C while
    the command runs raises its stop flag: it stops as the program does after Ctrl-C (what it
    keeps is written, nothing half-written) and KeyboardInterrupt is raised; a second Ctrl-C
    raises at once while the command finishes stopping in the background (the next call waits
    for it). Arguments that are not strings, numbers or paths, or contain NUL, are refused with
    atf.InputError before anything runs."""
    argv = _argv(args)
    if json:
        argv = _with_json(argv)
    what = "atf " + " ".join(argv[:2] if argv[:1] == ["experiment"] else argv[:1])
    _progress._check_arg(progress, "atf.cli")
    if hasattr(progress, "write") and log is None:
        log = progress
    err = _Segments(_sink(log) if progress is not False else None, hold=progress is None)
    rc, out, interrupts = _run_in_process(argv, err)
    stdout = out.decode("utf-8", "replace")
    if interrupts:
        raise KeyboardInterrupt
    message = err.message(f"{what}: exit {rc}")
    if rc == 130:
        e = KeyboardInterrupt(f"{what} was interrupted (exit 130): {message}")
        e.summary = _json_line(stdout) if json else None
        raise e
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
        _errors.warn_iteration_limit(f"{message} (iteration limit: the last iterate was "
                                     f"written)")
    return summary
