"""The long-running commands from Python: `atf.path`, `atf.sweep` and `atf.train` run the
`atf` program (atf._cli.run: `--json`, stderr copied to Python's sys.stderr as it comes, exit
codes as exceptions, Ctrl-C forwarded) and read the tables and files it writes. The program's
numbers are returned unchanged: the same command run from the shell gives the same bits.

Every argument is checked before anything runs: integers against the program's own ranges
(2**40 iterations is refused with atf.InputError naming the argument, never wrapped), numbers
must be finite, strings and paths must not contain NUL. The program checks the rest (penalty
specs, method names, ranges of real numbers) and its one-line message comes back as
atf.InputError."""
import json
import math
import numbers
import os
import tempfile
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from . import _check, _errors
from ._cli import Log, PathArg, run, text_arg
from ._progress import ProgressArg
from .figure import Figure
from .mlp import MLP
from .problem import Problem
from .result import Result

_U64 = 2**64 - 1
_COUNT = 2**30


def _fail(message: str):
    raise _errors.InputError(message, "usage error")


def _int(value: Any, what: str, lo: int, hi: int) -> str:
    return str(_check.integer(value, what, lo, hi))


def _num(value: Any, what: str) -> str:
    """A finite real number written so that the program reads back the same double."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        _fail(f"{what}: {value!r} is not a number")
    v = float(value)
    if not math.isfinite(v):
        _fail(f"{what}: {value!r} is not a finite number")
    if v.is_integer() and abs(v) < 2**53:
        return str(int(v))  # 1, not 1.0: penalty specs and table keys as the shell's
    return repr(v)


def _items(value: Any, what: str) -> List[Any]:
    if isinstance(value, (str, bytes)) or isinstance(value, numbers.Number):
        return [value]
    try:
        items = list(value)
    except TypeError:
        _fail(f"{what}: {value!r} is not a number or a list")
    if not items:
        _fail(f"{what}: the list is empty")
    return items


def _nums(value: Any, what: str, allow: Iterable[str] = ()) -> str:
    """A list of numbers (or one) as the comma-separated list of the command line; a string is
    passed through as such a list (e.g. "1e-3,auto")."""
    if isinstance(value, str):
        return text_arg(value, what)
    out = []
    for i, v in enumerate(_items(value, what)):
        out.append(v if isinstance(v, str) and v in allow else _num(v, f"{what}[{i}]"))
    return ",".join(out)


def _words(value: Any, what: str) -> str:
    """A list of names (or one comma-separated string) without NUL or commas inside a name."""
    if isinstance(value, str):
        return text_arg(value, what)
    out = []
    for i, v in enumerate(_items(value, what)):
        s = text_arg(v, f"{what}[{i}]")
        if "," in s:
            _fail(f"{what}[{i}]: {s!r} contains a comma")
        out.append(s)
    return ",".join(out)


def _ints(value: Any, what: str, lo: int, hi: int) -> str:
    if isinstance(value, str):
        return text_arg(value, what)
    return ",".join(_int(v, f"{what}[{i}]", lo, hi) for i, v in enumerate(_items(value, what)))


def _problem_file(problem: Union[Problem, PathArg], out_dir: str, what: str) -> str:
    """A problem given as a file is used as it is; an atf.Problem is written (atomically) to
    out_dir/problem.h5, so that the directory holds what its result files belong to."""
    if isinstance(problem, Problem):
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "problem.h5")
        problem.write(path)
        return path
    if isinstance(problem, (str, os.PathLike)):
        return text_arg(problem, f"{what}: problem")
    raise TypeError(f"{what}: problem must be an atf.Problem or the path of a problem file")


def _read_jsonl(path: str) -> List[Dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _column(rows: Sequence[Dict[str, Any]], key: str) -> np.ndarray:
    """A numeric column as float64 (null and missing as NaN)."""
    out = np.full(len(rows), np.nan)
    for i, row in enumerate(rows):
        v = row.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[i] = v
    return out


def _as_array(values: List[Any]) -> np.ndarray:
    """One column of JSON values as a numpy array: numbers as float64 with NaN for null or
    missing — always, since the tables write an integral float as an integer (an error rate
    0 reads as int 0), so an int64 column would depend on the data —, booleans as bool when
    every row has one, anything else (strings, mixed) as objects with None."""
    present = [v for v in values if v is not None]
    if present and len(present) == len(values) and all(isinstance(v, bool) for v in present):
        return np.array(values, dtype=bool)
    if all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in present):
        return np.array([np.nan if v is None else float(v) for v in values])
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):  # item by item: a JSON list stays one cell
        out[i] = v
    return out


def _columns(rows: Sequence[Dict[str, Any]]) -> Dict[str, np.ndarray]:
    """The rows as columns (keys in their order of first appearance) of numpy arrays."""
    keys = list(dict.fromkeys(k for row in rows for k in row))
    return {k: _as_array([row.get(k) for row in rows]) for k in keys}


def _frame(columns: Dict[str, np.ndarray], what: str) -> Any:
    """A pandas DataFrame of the columns; pandas is imported here only (it is no dependency)."""
    try:
        import pandas
    except ImportError as exc:
        raise _errors.Error(f"{what}: pandas is not installed (to_dict() gives the same columns "
                            "as numpy arrays)", "missing dependency") from exc
    return pandas.DataFrame(columns)


def _existing(path: str, what: str) -> str:
    """path, which a method needs on disk: a record kept (or unpickled) after its output
    directory went still has its rows and summary, but not the files."""
    if not os.path.exists(path):
        raise _errors.FileError(f"{what}: {path}: no such file (the output directory is gone? "
                                "the rows, columns and summary need none)", "i/o error")
    return path


def _abs(base: str, p: Optional[str]) -> Optional[str]:
    if p is None:
        return None
    return os.path.abspath(p if os.path.isabs(p) else os.path.join(base, p))


class PathResult:
    """What `atf.path` returns: the table of `atf path` (one row per lambda, from the largest
    down) and the files of its output directory.

    Attributes: `summary` (the program's JSON line), `rows` (DIR/path.jsonl as a list of dicts,
    the numbers exactly as written), `lambdas`, `error`, `xent` (numpy arrays: the error and the
    mean cross-entropy on the scored split, i.e. the validation examples with
    validation_fraction, else the problem's test split; NaN where there is none), `best_lambda`,
    `best_row` (its index in rows), `best_error`, `best_xent`, `criterion`, `out_dir`, `csv`,
    `jsonl`, `figure` (an atf.Figure: the .svg's path, shown as the image in a notebook; the .png beside it), `problem_file` (the problem the result
    files belong to: DIR/fit.h5 with validation_fraction, else the input problem), `to_dict()`
    and `to_frame()` (the table as numpy columns, or a pandas DataFrame).

    It pickles (rows, columns, summary and paths) and keeps working without its directory,
    except `result()` and `problem()`, which read files there (atf.FileError when they are
    gone)."""

    def __init__(self, summary: Dict[str, Any], out_dir: str, problem_file: str):
        self.summary = summary
        self.out_dir = os.path.abspath(out_dir)
        self.csv = _abs(".", summary.get("csv")) or os.path.join(self.out_dir, "path.csv")
        self.jsonl = _abs(".", summary.get("jsonl")) or os.path.join(self.out_dir, "path.jsonl")
        self.figure = Figure(os.path.join(self.out_dir, "path.svg"))
        self.rows = _read_jsonl(self.jsonl)
        self.lambdas = _column(self.rows, "lambda")
        validation = bool(self.rows) and str(self.rows[0].get("split", "")).startswith(
            "validation")
        self.validation = validation
        self.error = _column(self.rows, "val_error" if validation else "test_error")
        self.xent = _column(self.rows, "val_xent" if validation else "test_xent")
        self.best_lambda = summary.get("best_lambda")
        self.best_error = summary.get("best_error")
        self.best_xent = summary.get("best_xent")
        self.criterion = summary.get("criterion")
        fit = os.path.join(self.out_dir, "fit.h5")
        self.problem_file = fit if validation else os.path.abspath(problem_file)
        self.best_row = None
        best = os.path.basename(summary.get("best_result") or "")
        for i, row in enumerate(self.rows):
            if (row.get("result") == best) if best else (row.get("lambda") == self.best_lambda):
                self.best_row = i

    def column(self, key: str) -> np.ndarray:
        """Any numeric column of the table (e.g. "objective", "train_error", "erank_W1")."""
        if not any(key in row for row in self.rows):
            _fail(f"atf.PathResult.column: no column {key!r} "
                  f"(columns: {', '.join(self.rows[0]) if self.rows else 'none'})")
        return _column(self.rows, key)

    def result_file(self, row: int) -> str:
        """The path of row's result file, DIR/lambda-<row>.h5."""
        _check.integer(row, "atf.PathResult: row", -len(self.rows), len(self.rows) - 1)
        return os.path.join(self.out_dir, self.rows[row]["result"])

    def result(self, row: Optional[int] = None) -> Result:
        """The atf.Result of a row (default: the best lambda's), read from its file in the
        output directory; it belongs to `problem_file` (`problem()`)."""
        if row is None:
            if self.best_row is None:
                _fail("atf.PathResult.result: no best lambda in this table")
            row = self.best_row
        return Result.read(_existing(self.result_file(row), "atf.PathResult.result"))

    def problem(self) -> Problem:
        """The problem the result files belong to (atf.Problem.read of `problem_file`)."""
        return Problem.read(_existing(self.problem_file, "atf.PathResult.problem"))

    def to_dict(self) -> Dict[str, np.ndarray]:
        """The table as columns, key → numpy array with one entry per row: numbers as float64
        with NaN for null or missing (as `column`; counts too, since the table writes 0.0 as
        0), booleans as bool, strings and mixed columns as objects with None where missing."""
        return _columns(self.rows)

    def to_frame(self) -> Any:
        """The table as a pandas DataFrame (the columns of to_dict); atf.Error when pandas is
        not installed."""
        return _frame(self.to_dict(), "atf.PathResult.to_frame")

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return (f"<atf.PathResult {len(self.rows)} lambdas in {self.out_dir}, best lambda "
                f"{self.best_lambda} ({self.criterion})>")


def path(problem: Union[Problem, PathArg], loss: str, lambdas: Union[float, Sequence[float]],
         out_dir: PathArg, *, validation_fraction: Optional[float] = None, seed: int = 1,
         penalty: Optional[str] = None, tol: float = 1e-6, max_iter: int = 10000,
         method: str = "auto", verbose: bool = False, progress: ProgressArg = None,
         log: Log = None) -> PathResult:
    """The regularisation path of `atf path`: problem (16) with the loss `squared:lambda=L` or
    `xent:lambda=L` (loss "squared" or "xent") for every L of lambdas, from the largest down,
    each solve warm-started from the previous one, scored on validation examples (a seeded
    random fraction validation_fraction in (0, 1) of the training examples; DIR/fit.h5 is then
    the fitted problem) or on the problem's test split. Writes DIR/path.{csv,jsonl,svg,png} and
    DIR/lambda-<row>.h5 and returns an atf.PathResult (the table, the best lambda, the result
    files). Re-running the same call resumes (finished lambdas are skipped); a resumed run with
    other settings is refused by the program (atf.InputError).

    problem: an atf.Problem (written to out_dir/problem.h5 first) or a problem file. penalty
    overrides every block's penalty; tol, max_iter (1 … 10^9) and method go to the solver;
    verbose adds the solver's iteration table to the progress lines; progress as everywhere
    (docs/python.md, "Progress"): None (default) the command's lines once it has run 2 s, True
    from the start, a file-like object into it, False none (`--quiet`); they go to `log`
    (default Python's sys.stderr; see atf.cli).

    Refused with atf.InputError: a loss other than squared or xent, lambdas that are not
    finite positive numbers or repeat, max_iter or seed out of range or not integers, a
    fraction outside (0, 1), strings with NUL, and whatever the program refuses (its message).
    Ctrl-C stops the current solve and raises KeyboardInterrupt; the rows so far are kept."""
    if loss not in ("squared", "xent"):
        _fail(f"atf.path: loss {loss!r} is not one of squared, xent (the program adds "
              ":lambda=L for every lambda)")
    lam = [_num(v, "atf.path: lambdas") for v in _items(lambdas, "atf.path: lambdas")]
    if any(float(v) <= 0 for v in lam):
        _fail(f"atf.path: lambdas: every lambda must be > 0 (got {', '.join(lam)})")
    out = text_arg(out_dir, "atf.path: out_dir")
    argv = ["path", f"--loss={loss}", f"--lambdas={','.join(lam)}", f"--out={out}",
            f"--seed={_int(seed, 'atf.path: seed', 0, 2**63 - 1)}",
            f"--tol={_num(tol, 'atf.path: tol')}",
            f"--max-iter={_int(max_iter, 'atf.path: max_iter', 1, 10**9)}",
            f"--method={text_arg(method, 'atf.path: method')}"]
    if validation_fraction is not None:
        argv.append(f"--validation-fraction="
                    f"{_num(validation_fraction, 'atf.path: validation_fraction')}")
    if penalty is not None:
        argv.append(f"--penalty={text_arg(penalty, 'atf.path: penalty')}")
    if verbose:
        argv.append("--verbose")
    if progress is False:
        argv.append("--quiet")
    file = _problem_file(problem, out, "atf.path")
    shown = True if verbose and progress is False else progress
    summary = run(argv + ["--json", "--", file], progress=shown, log=log)
    return PathResult(summary, out, file)


class SweepResult:
    """What `atf.sweep` returns: `summary` (the program's JSON line), `rows` (DIR/sweep.jsonl as
    a list of dicts: the NTK baseline first, then one row per penalty × structure run),
    `out_dir`, `csv`, `jsonl`, `figure` (an atf.Figure: DIR/sweep.svg's path, shown as the image in a notebook; sweep.png beside it), `column(key)`
    for a numeric column as a numpy array (NaN where null), `to_dict()` and `to_frame()` (the
    table as numpy columns, or a pandas DataFrame). It pickles, and needs its directory for
    nothing once made (the paths are kept, the files may go)."""

    def __init__(self, summary: Dict[str, Any], out_dir: str):
        self.summary = summary
        self.out_dir = os.path.abspath(out_dir)
        self.csv = _abs(".", summary.get("csv")) or os.path.join(self.out_dir, "sweep.csv")
        self.jsonl = _abs(".", summary.get("jsonl")) or os.path.join(self.out_dir, "sweep.jsonl")
        self.figure = Figure(os.path.join(self.out_dir, "sweep.svg"))
        self.rows = _read_jsonl(self.jsonl)

    def column(self, key: str) -> np.ndarray:
        if not any(key in row for row in self.rows):
            _fail(f"atf.SweepResult.column: no column {key!r}")
        return _column(self.rows, key)

    def to_dict(self) -> Dict[str, np.ndarray]:
        """The table as columns, key → numpy array (as PathResult.to_dict)."""
        return _columns(self.rows)

    def to_frame(self) -> Any:
        """The table as a pandas DataFrame; atf.Error when pandas is not installed."""
        return _frame(self.to_dict(), "atf.SweepResult.to_frame")

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return f"<atf.SweepResult {len(self.rows)} rows in {self.out_dir}>"


def sweep(problem: Union[Problem, PathArg], out_dir: PathArg, *,
          families: Union[None, str, Sequence[str]] = None,
          p: Union[None, float, Sequence[float]] = None,
          scales: Union[None, float, str, Sequence[Union[float, str]]] = None,
          structures: Union[None, str, Sequence[str]] = None,
          penalties: Sequence[str] = (), loss: Optional[str] = None, tol: float = 1e-6,
          max_iter: int = 5000, auto_fraction: Optional[float] = None,
          alignment_max: Optional[int] = None, center: bool = False,
          progress: ProgressArg = None,
          log: Log = None) -> SweepResult:
    """The ablation of `atf sweep`: solve problem (16) for every penalty family × parameter ×
    structure (plus each spec of `penalties` as given), one row each in DIR/sweep.{csv,jsonl}
    after the NTK baseline's, and the figure DIR/sweep.{svg,png}. Re-running resumes.

    problem: an atf.Problem (written to out_dir/problem.h5 first) or a problem file.
    families: of sq, abs, pow, zsq, logsq, nuclear, fixed, balanced (default sq,abs,pow,zsq);
    p: exponents for pow; scales: numbers or "auto"; structures: of layer, diagonal, full; each
    a list or one comma-separated string; None keeps the program's default. loss: interpolate,
    squared:lambda=L or xent:lambda=L; max_iter 1 … 10^8 per run; alignment_max 0 … 10^6;
    center drops the initial function. progress as atf.path's (False is `--quiet`); the
    progress lines go to `log` (default sys.stderr).

    Refused with atf.InputError: integers out of range, non-finite numbers, strings with NUL or
    names with commas, and whatever the program refuses (its message)."""
    out = text_arg(out_dir, "atf.sweep: out_dir")
    argv = ["sweep", f"--out={out}", f"--tol={_num(tol, 'atf.sweep: tol')}",
            f"--max-iter={_int(max_iter, 'atf.sweep: max_iter', 1, 10**8)}"]
    if families is not None:
        argv.append(f"--families={_words(families, 'atf.sweep: families')}")
    if p is not None:
        argv.append(f"--p={_nums(p, 'atf.sweep: p')}")
    if scales is not None:
        argv.append(f"--scales={_nums(scales, 'atf.sweep: scales', allow=('auto',))}")
    if structures is not None:
        argv.append(f"--structures={_words(structures, 'atf.sweep: structures')}")
    if isinstance(penalties, str):
        penalties = [penalties]
    for i, spec in enumerate(penalties):
        argv.append(f"--penalty={text_arg(spec, f'atf.sweep: penalties[{i}]')}")
    if loss is not None:
        argv.append(f"--loss={text_arg(loss, 'atf.sweep: loss')}")
    if auto_fraction is not None:
        argv.append(f"--auto-fraction={_num(auto_fraction, 'atf.sweep: auto_fraction')}")
    if alignment_max is not None:
        argv.append(f"--alignment-max="
                    f"{_int(alignment_max, 'atf.sweep: alignment_max', 0, 10**6)}")
    if center:
        argv.append("--center")
    if progress is False:
        argv.append("--quiet")
    file = _problem_file(problem, out, "atf.sweep")
    summary = run(argv + ["--json", "--", file], progress=progress, log=log)
    return SweepResult(summary, out)


def _read_h5(path: str):
    """The datasets (by path, e.g. "B/W1") and the attributes (by object path, "" the root)
    of an HDF5 file, with h5py; None when h5py is not installed."""
    try:
        import h5py
    except ImportError:
        return None

    def value(v):
        if isinstance(v, bytes):
            return v.decode("utf-8", "replace")
        if isinstance(v, np.ndarray) and v.dtype.kind in "SO":
            return [x.decode("utf-8", "replace") if isinstance(x, bytes) else x
                    for x in v.tolist()]
        return v

    data: Dict[str, Any] = {}
    attrs: Dict[str, Dict[str, Any]] = {}
    with h5py.File(path, "r") as f:
        attrs[""] = {k: value(v) for k, v in f.attrs.items()}

        def visit(name, obj):
            if obj.attrs:
                attrs[name] = {k: value(v) for k, v in obj.attrs.items()}
            if isinstance(obj, h5py.Dataset):
                data[name] = value(obj[()])
        f.visititems(visit)
    return data, attrs


class TrainResult:
    """What `atf.train` returns: `summary` (the program's JSON report: errors, losses, the
    selected epoch, the protocol), `model` (network, linearized or factorized), `output` (the
    absolute path of OUT.h5), `data` and `attrs` (the file's datasets by path, e.g. "B/W1" or
    "history/val_error", and its attributes by object path, "" for the root; read with h5py,
    None when h5py is not installed), `mlp()` (the trained network as an atf.MLP, for
    model "network": OUT.h5 is then an MLP file), `to_dict()` and `to_frame()` (the per-epoch
    history of a training file as numpy columns, or a pandas DataFrame).

    It pickles (summary, data, attrs) and keeps working without OUT.h5, except `mlp()`, which
    reads it (atf.FileError when it is gone)."""

    def __init__(self, summary: Dict[str, Any], out: str, model: str):
        self.summary = summary
        self.model = model
        self.output = os.path.abspath(out)
        contents = _read_h5(self.output)
        self.data, self.attrs = contents if contents is not None else (None, None)

    def mlp(self) -> MLP:
        """The trained network (model "network" only; the others write a training file)."""
        if self.model != "network":
            _fail(f"atf.TrainResult.mlp: model {self.model!r} writes a training file, not a "
                  "network (see .data)")
        return MLP.read(_existing(self.output, "atf.TrainResult.mlp"))

    def to_dict(self) -> Dict[str, np.ndarray]:
        """The per-epoch history (/history of the training file) as columns: "epoch" (1 …
        epochs_run), then each history dataset (loss, lr, val_loss, ...); a per-layer one
        [epochs, L] (drift1, drift2) as one column per layer, e.g. "drift1_1" for layer 1.
        atf.Error without h5py (the file was not read); atf.InputError for model "network",
        whose MLP file has no history."""
        if self.data is None:
            raise _errors.Error("atf.TrainResult.to_dict: h5py is not installed, so the "
                                f"training file {self.output} was not read", "missing dependency")
        history = {k[len("history/"):]: np.asarray(v) for k, v in self.data.items()
                   if k.startswith("history/")}
        if not history:
            _fail(f"atf.TrainResult.to_dict: {self.output} has no per-epoch history (model "
                  f"{self.model!r}: an MLP file; the training file of record= has one)")
        epochs = len(next(iter(history.values())))
        columns: Dict[str, np.ndarray] = {"epoch": np.arange(1, epochs + 1)}
        for name, values in history.items():
            if values.ndim == 1:
                columns[name] = values
            else:
                columns.update((f"{name}_{l + 1}", values[:, l]) for l in range(values.shape[1]))
        return columns

    def to_frame(self) -> Any:
        """The per-epoch history as a pandas DataFrame (the columns of to_dict); atf.Error when
        pandas is not installed."""
        return _frame(self.to_dict(), "atf.TrainResult.to_frame")

    def __repr__(self) -> str:
        s = self.summary
        return (f"<atf.TrainResult {self.model}: {s.get('epochs_run')} epochs, selected "
                f"{s.get('selected_epoch')}, test error {s.get('test_error')} -> {self.output}>")


_TRAIN_MODELS = ("network", "linearized", "factorized")


def train(data: str, out: PathArg, *, model: str = "network",
          init: Union[None, str, PathArg, MLP] = None,
          widths: Union[None, str, Sequence[int]] = None, seed: Optional[int] = None,
          bias: Union[None, bool, str, Sequence[int]] = None,
          activation: Union[None, str, Sequence[str]] = None, param: Optional[str] = None,
          optimizer: Optional[str] = None, lr: Optional[float] = None,
          momentum: Optional[float] = None, beta1: Optional[float] = None,
          beta2: Optional[float] = None, adam_eps: Optional[float] = None,
          lr_schedule: Optional[str] = None, loss: Optional[str] = None,
          penalty: Optional[str] = None, penalty_weight: Optional[float] = None,
          no_output_m2: bool = False, epochs: Optional[int] = None,
          batch: Optional[int] = None, shuffle_seed: Optional[int] = None,
          stop: Optional[str] = None, val: Optional[int] = None,
          patience: Optional[int] = None, eval_every: Optional[int] = None,
          sampling: Optional[str] = None, pool: Union[None, int, str] = None,
          classes: Union[None, str, Sequence[int]] = None, n_train: Optional[int] = None,
          n_test: Optional[int] = None, data_seed: Optional[int] = None,
          standardize: Optional[bool] = None, split: Optional[str] = None,
          targets: Optional[str] = None, teacher_seed: Optional[int] = None,
          b16_problem: Optional[PathArg] = None, b16_result: Optional[PathArg] = None,
          record: Optional[PathArg] = None, checkpoint_every: Optional[int] = None,
          save_init: Optional[PathArg] = None, progress: ProgressArg = None,
          log: Log = None) -> TrainResult:
    """`atf train`: train one of three models from the same initial network θ0 on the data
    set `data` (synthetic[:d=16,r=2,noise=0], mnist[:DIR], fashion-mnist[:DIR] or an HDF5 file)
    and save it atomically to `out` — an MLP file for model "network", a training file (B per
    layer, factors, diagnostics, history) for "linearized" and "factorized". Returns an
    atf.TrainResult (the JSON report, the output's path and contents).

    Every keyword is the option of the same name (docs/cli.md, `atf train --help`); None keeps
    the program's default. init: "he", "torch" or "lecun" (the initialisation scheme), or the
    starting network — a file or an atf.MLP (written to a temporary file for the call).
    widths, classes: lists of integers (or one comma-separated string); bias: True (every
    layer), False (none) or a list of 1-based layers; activation: one spec or one per hidden
    layer; standardize: True/False for --standardize/--no-standardize; pool: a count or "all".
    progress as atf.path's (False is `--quiet`); the epoch lines go to `log` (default Python's
    sys.stderr).

    Refused with atf.InputError before anything runs: a model other than the three, integers
    out of the program's ranges (epochs 1 … 10^6, batch, n_train, n_test, val, pool
    ≤ 2^30, seeds ≥ 0, shuffle_seed < 2^31, patience, eval_every, checkpoint_every ≤ 10^6),
    non-finite numbers, strings with NUL; then whatever the program refuses (its message).
    Ctrl-C stops after the current minibatch; the program saves the model and
    KeyboardInterrupt is raised."""
    W = "atf.train"
    if model not in _TRAIN_MODELS:
        _fail(f"{W}: model {model!r} is not one of {', '.join(_TRAIN_MODELS)}")
    outp = text_arg(out, f"{W}: out")
    argv = ["train", f"--data={text_arg(data, f'{W}: data')}", f"--output={outp}",
            f"--model={model}"]

    def opt(name, value):
        argv.append(f"--{name}={value}")

    def txt(name, value):
        if value is not None:
            opt(name, text_arg(value, f"{W}: {name.replace('-', '_')}"))

    def num(name, value):
        if value is not None:
            opt(name, _num(value, f"{W}: {name.replace('-', '_')}"))

    def count(name, value, lo, hi):
        if value is not None:
            opt(name, _int(value, f"{W}: {name.replace('-', '_')}", lo, hi))

    tmp = None
    try:
        if isinstance(init, MLP):
            tmp = tempfile.TemporaryDirectory(prefix="atf-train-")
            mlp0 = os.path.join(tmp.name, "mlp0.h5")
            init.write(mlp0)
            opt("init", mlp0)
        else:
            txt("init", init)
        if widths is not None:
            opt("widths", _ints(widths, f"{W}: widths", 1, _COUNT))
        count("seed", seed, 0, _U64)
        if bias is True:
            argv.append("--bias")
        elif bias is False:
            opt("bias", "0")
        elif bias is not None:
            opt("bias", _ints(bias, f"{W}: bias", 0, 1000000))
        if activation is not None:
            acts = [activation] if isinstance(activation, str) else _items(activation,
                                                                           f"{W}: activation")
            opt("activation", ";".join(text_arg(a, f"{W}: activation") for a in acts))
        txt("param", param)
        txt("optimizer", optimizer)
        num("lr", lr)
        num("momentum", momentum)
        num("beta1", beta1)
        num("beta2", beta2)
        num("adam-eps", adam_eps)
        txt("lr-schedule", lr_schedule)
        txt("loss", loss)
        txt("penalty", penalty)
        num("penalty-weight", penalty_weight)
        if no_output_m2:
            argv.append("--no-output-m2")
        count("epochs", epochs, 1, 10**6)
        count("batch", batch, 1, _COUNT)
        count("shuffle-seed", shuffle_seed, 0, 2**31 - 1)
        txt("stop", stop)
        count("val", val, 0, _COUNT)
        count("patience", patience, 0, 10**6)
        count("eval-every", eval_every, 1, 10**6)
        txt("sampling", sampling)
        if isinstance(pool, str) and pool == "all":
            opt("pool", "all")
        else:
            count("pool", pool, 1, _COUNT)
        if classes is not None:
            opt("classes", _ints(classes, f"{W}: classes", 0, _COUNT))
        count("n-train", n_train, 0, _COUNT)
        count("n-test", n_test, 0, _COUNT)
        count("data-seed", data_seed, 0, _U64)
        if standardize is not None:
            argv.append("--standardize" if standardize else "--no-standardize")
        txt("split", split)
        txt("targets", targets)
        count("teacher-seed", teacher_seed, 0, _U64)
        txt("b16-problem", b16_problem)
        txt("b16-result", b16_result)
        txt("record", record)
        count("checkpoint-every", checkpoint_every, 1, 10**6)
        txt("save-init", save_init)
        if progress is False:
            argv.append("--quiet")
        summary = run(argv + ["--json"], progress=progress, log=log)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return TrainResult(summary, outp, model)
