"""atf.data: the data sets of `atf features` and `atf train`, loaded in process
(docs/tangent.md §1).

mnist(), fashion_mnist() and multi_index() fill the library's own data options
(atf_data_options, with the same option strings the command line passes) and load the task
with atf_task_load, the function the commands call. So the same arguments give the same
examples, inputs, targets and labels as the command, to the last bit, and a problem built from
them with atf.features has the fingerprint of the one `atf features` writes (for the same
network).

Image data is found as the `atf` command finds it (data_roots()): in the ':'-separated
directories of $ATF_DATA when it is set, else in the repository's data/ and in
/usr/share/datasets, or in the directory given as `directory`."""
import ctypes
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from . import _check, _errors, _lib
from . import _data_lib as _d

U64_MAX = 2**64 - 1
MAX_COUNT = 2**30        # the library's limit on n-train and n-test
MAX_CLASS_LABEL = 2**30  # and on a class label
MAX_SYNTHETIC_DIM = 10**6
IMAGE_TARGETS = ("labels", "teacher", "teacher-sign")
NETWORK_KEYS = ("widths", "bias", "activation", "param", "init")


@dataclass(frozen=True, eq=False)
class Dataset:
    """A task as the `atf` command loads it: a training and a test split with targets.

    Arrays are float64 (labels int64) copies owned by this object; row i of X_*, y_* and
    labels_* is one example.

    - X_train [n_train, D], X_test [n_test, D]: the inputs (images flattened row by row, pixels
      scaled to [0, 1], then standardised per image when `standardized`).
    - y_train [n_train, C], y_test [n_test, C]: the targets the problem fits: ±1 for two
      classes (class index 0 → −1, 1 → +1), one-hot rows for more, the synthetic g(z) + noise,
      or the teacher's fit (docs/tangent.md §1, "Targets").
    - labels_train [n_train], labels_test [n_test]: class indices into `classes`; None when the
      data has no labels (synthetic data).
    - classes: the original label of class index j (e.g. (2, 3)); () without labels.
    - source: "mnist", "fashion-mnist" or "synthetic".
    - data: the data source as the command's --data takes it ("mnist", "mnist:DIR",
      "synthetic:d=16,r=2,noise=0.0").
    - data_dir: the IDX directory the images were read from; None for synthetic data.
    - seed: the data seed (image sampling, synthetic generation).
    - split: "pooled" (train and test drawn from every image) or "official" (train from
      train-*, test from t10k-*); None for synthetic data.
    - standardized: whether every input row was standardised to zero mean and unit variance.
    - targets: the targets used: "labels", "given", "teacher" or "teacher-sign".
    - teacher_accuracy: the training accuracy of the thresholded teacher targets against the
      labels; None without a teacher.
    - cli_options: the data options of `atf features` / `atf train` that load these same
      examples (with the teacher's network options for teacher targets)."""

    X_train: np.ndarray
    y_train: np.ndarray
    labels_train: Optional[np.ndarray]
    X_test: np.ndarray
    y_test: np.ndarray
    labels_test: Optional[np.ndarray]
    classes: Tuple[int, ...]
    source: str
    data: str
    data_dir: Optional[str]
    seed: int
    split: Optional[str]
    standardized: bool
    targets: str
    teacher_accuracy: Optional[float]
    cli_options: Tuple[str, ...]

    @property
    def n_train(self) -> int:
        """The number of training examples."""
        return self.X_train.shape[0]

    @property
    def n_test(self) -> int:
        """The number of test examples (0: no test split)."""
        return self.X_test.shape[0]

    @property
    def inputs(self) -> int:
        """The input dimension D (784 for the images)."""
        return self.X_train.shape[1]

    @property
    def outputs(self) -> int:
        """The number of targets per example C (the network's output width)."""
        return self.y_train.shape[1]

    def __repr__(self) -> str:
        classes = f", classes {list(self.classes)}" if self.classes else ""
        return (f"atf.data.Dataset({self.source}{classes}: {self.n_train} train + {self.n_test} "
                f"test examples, {self.inputs} inputs, {self.outputs} output"
                f"{'' if self.outputs == 1 else 's'}, targets {self.targets}"
                f"{', standardized' if self.standardized else ''})")


# ---- where the image data sets are looked for ----

def _add_root(roots: List[str], directory: str) -> None:
    """Append a directory unless it is there already, under its name or another one (as the
    command's list: the same directory is searched once)."""
    for known in roots:
        if known == directory or _same_directory(known, directory):
            return
    if len(roots) < _d.MAX_DATA_DIRS and len(os.fsencode(directory)) < _d.PATHLEN:
        roots.append(directory)


def _same_directory(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def _repository_data() -> List[str]:
    """data/ of the repository the library was built in (BUILD/../data when BUILD holds the
    `atf` program beside libatf.so: the command's own rule, from its binary) and of the source
    tree this package sits in (drivers/python/atf → the repository root). An installed package
    has neither."""
    found = []
    library = Path(_lib.lib._name).resolve()
    if (library.parent / "drivers" / "atf").is_file():
        found.append(str(library.parent.parent / "data"))
    package = Path(__file__).resolve().parent
    if package.parent.name == "python" and package.parents[1].name == "drivers":
        found.append(str(package.parents[2] / "data"))
    return found


def data_roots() -> List[str]:
    """The data roots searched, in order, for mnist and fashion-mnist without a directory: the
    first ROOT/mnist (ROOT/fashion-mnist) holding the train-* files is used. As the `atf`
    command: the ':'-separated directories of $ATF_DATA when it is set and not empty (and only
    those), else the repository's data/ and /usr/share/datasets; a directory named twice is
    searched once, and at most 8 are kept."""
    roots: List[str] = []
    env = os.environ.get("ATF_DATA", "")
    if env:
        for directory in env.split(":"):
            if directory:
                _add_root(roots, directory)
        return roots
    for directory in _repository_data() + ["/usr/share/datasets"]:
        _add_root(roots, directory)
    return roots


# ---- checks of the arguments, before anything becomes a C option ----

def _choice(value: Any, allowed: Sequence[str], what: str) -> str:
    if not isinstance(value, str) or value not in allowed:
        _errors.fail(f"{what}: {value!r} is not one of {', '.join(allowed)}")
    return value


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        _errors.fail(f"{what}: {value!r} is not True or False")
    return bool(value)


def _classes(value: Any, what: str) -> str:
    """A list of distinct class labels as the classes option ("2,3")."""
    array = None if isinstance(value, (str, bytes)) else _check.to_numpy(value, what)
    if array is None or array.ndim != 1:
        _errors.fail(f"{what}: {value!r}: a list of class labels is expected, e.g. [2, 3]")
    if not 1 <= array.size <= _d.MAX_CLASSES:
        _errors.fail(f"{what}: {array.size} classes: 1 to {_d.MAX_CLASSES} are expected")
    labels = _check.ints(array, what, 0, MAX_CLASS_LABEL).tolist()
    repeated = sorted({c for c in labels if labels.count(c) > 1})
    if repeated:
        _errors.fail(f"{what}: class {repeated[0]} listed twice")
    return ",".join(map(str, labels))


def _network_options(network: Mapping[str, Any], what: str) -> Dict[str, str]:
    """The teacher's network options as the command's strings: widths [784, 128, 1] →
    "784,128,1", bias True/False → "1"/"0" and a list of 1-based layers → "layers:1,3" (the
    library reads a bare "1" as every layer), activation a spec or one per hidden layer."""
    if not isinstance(network, Mapping):
        _errors.fail(f"{what}: {network!r} is not a dict of network options "
                     f"({', '.join(NETWORK_KEYS)})")
    unknown = [k for k in network if k not in NETWORK_KEYS]
    if unknown:
        _errors.fail(f"{what}: unknown option {unknown[0]!r} (expected {', '.join(NETWORK_KEYS)})")
    out = {}
    for key, value in network.items():
        item = f"{what}[{key!r}]"
        if key == "widths":
            out[key] = ",".join(str(_check.integer(w, item, 1)) for w in _sequence(value, item))
        elif key == "bias" and isinstance(value, (bool, np.bool_)):
            out[key] = "1" if value else "0"
        elif key == "bias":
            layers = [_check.integer(l, item, 1, _d.MAX_LAYERS) for l in _sequence(value, item)]
            out[key] = "layers:" + ",".join(map(str, layers)) if layers else "0"
        elif key == "activation" and not isinstance(value, str):
            out[key] = ";".join(_check.text(a, item).decode() for a in _sequence(value, item))
        else:
            out[key] = _check.text(value, item).decode()
    return out


def _sequence(value: Any, what: str) -> list:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        _errors.fail(f"{what}: {value!r} is not a list")
    return list(value)


# ---- the library's options, the load and the copy out of C ----

def _raise(code: int, err: ctypes.Array, where: str) -> None:
    """The atf.Error of a failed library call, its message prefixed with the function."""
    try:
        _errors.check(code, err)
    except _errors.Error as e:
        raise type(e)(f"{where}: {e.message}", e.code) from None


def _data_options(options: Dict[str, str], where: str) -> _d.DataOptionsC:
    """The library's data options: its defaults, each option set by name exactly as the
    command line sets it, and the data roots the command searches."""
    opts = _d.atf_data_options_default()
    err = _lib.errbuf()
    for name, value in options.items():
        _raise(_d.atf_data_option(ctypes.byref(opts), name.encode(), value.encode(), err), err,
               where)
    for root in data_roots():
        _raise(_d.atf_data_add_dir(ctypes.byref(opts), os.fsencode(root), err), err, where)
    return opts


def _teacher_arch(network: Dict[str, str], where: str) -> _d.ArchC:
    """The architecture the teacher is drawn with: the network options' defaults (hidden widths
    128, 128; relu; no bias; standard; he) with the given ones set, as atf_net_arch gives the
    command's."""
    net = _d.atf_net_options_default()
    err = _lib.errbuf()
    for name, value in network.items():
        _raise(_d.atf_net_option(ctypes.byref(net), name.encode(), value.encode(), err), err,
               where)
    arch = _d.ArchC()
    _raise(_d.atf_net_arch(ctypes.byref(net), ctypes.byref(arch), err), err, where)
    return arch


def _copy(pointer: Any, rows: int, cols: int, dtype: type) -> np.ndarray:
    """rows × cols values of a C array as an owned numpy array (none for an empty split)."""
    if rows == 0 or cols == 0:
        return np.zeros((rows, cols), dtype=dtype)
    view = np.ctypeslib.as_array(pointer, shape=(rows * cols,))
    return view.reshape(rows, cols).astype(dtype, copy=True)


def _split_arrays(ds: _d.DatasetC, C: int) -> Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
    X = _copy(ds.X, ds.N, ds.D, np.float64)
    y = _copy(ds.Y, ds.N, C, np.float64)
    labels = _copy(ds.labels, ds.N, 1, np.int64).reshape(-1) if ds.labels else None
    return X, y, labels


def _load(options: Dict[str, str], network: Optional[Dict[str, str]], where: str,
          split: Optional[str]) -> Dataset:
    opts = _data_options(options, where)
    arch = _teacher_arch(network, where) if network is not None else None
    task = _d.TaskC()
    err = _lib.errbuf()
    code = _d.atf_task_load(ctypes.byref(opts), ctypes.byref(arch) if arch else None,
                            ctypes.byref(task), err)
    _raise(code, err, where)  # a failed load has freed what it had
    try:
        return _dataset(task, options, network or {}, split)
    finally:
        _d.atf_task_free(ctypes.byref(task))


def _dataset(task: _d.TaskC, options: Dict[str, str], network: Dict[str, str],
             split: Optional[str]) -> Dataset:
    C = task.train.C
    X_train, y_train, labels_train = _split_arrays(task.train, C)
    X_test, y_test, labels_test = _split_arrays(task.test, C)
    data_dir = _lib.text(task.data_dir) or None
    targets = _lib.text(_d.atf_targets_name(task.targets))
    accuracy = None if math.isnan(task.teacher_accuracy) else float(task.teacher_accuracy)
    return Dataset(
        X_train=X_train, y_train=y_train, labels_train=labels_train,
        X_test=X_test, y_test=y_test, labels_test=labels_test,
        classes=tuple(task.classes[:task.nclasses]), source=_lib.text(task.source_name),
        data=options["data"], data_dir=data_dir, seed=int(options["data-seed"]), split=split,
        standardized=bool(task.standardized), targets=targets, teacher_accuracy=accuracy,
        cli_options=_cli_options(task, options, network, data_dir, targets))


def _cli_options(task: _d.TaskC, options: Dict[str, str], network: Dict[str, str],
                 data_dir: Optional[str], targets: str) -> Tuple[str, ...]:
    """The command-line options that load the same task: the directory found is named, so
    that the command reads the same files wherever it looks for data."""
    data = f"{_lib.text(task.source_name)}:{data_dir}" if data_dir else options["data"]
    out = ["--data", data]
    for name in ("classes", "n-train", "n-test", "data-seed", "split", "teacher-seed"):
        if name in options and (name != "teacher-seed" or targets.startswith("teacher")):
            out += [f"--{name}", options[name]]
    out.append("--standardize" if task.standardized else "--no-standardize")
    out += ["--targets", targets]
    for name, value in network.items():
        out.append(f"--bias={value}" if name == "bias" else f"--{name}")
        if name != "bias":
            out.append(value)
    return tuple(out)


# ---- the data sets ----

def _common(where: str, n_train: Any, n_test: Any, seed: Any, standardize: Any,
            least_train: int = 0) -> Dict[str, str]:
    """The options every source takes, checked: counts within the library's 0 … 2**30 (n_train
    from least_train), the seed a 64-bit unsigned integer, standardize None (the source's
    default) or a bool."""
    options = {"n-train": str(_check.integer(n_train, f"{where}: n_train", least_train,
                                             MAX_COUNT)),
               "n-test": str(_check.integer(n_test, f"{where}: n_test", 0, MAX_COUNT)),
               "data-seed": str(_check.integer(seed, f"{where}: seed", 0, U64_MAX))}
    if standardize is not None:
        options["standardize"] = "1" if _flag(standardize, f"{where}: standardize") else "0"
    return options


def _images(name: str, directory: Any, split: Any, n_train: Any, n_test: Any, seed: Any,
            classes: Any, standardize: Any, targets: Any, teacher_seed: Any,
            network: Any) -> Dataset:
    where = f"atf.data.{name.replace('-', '_')}"
    options = {"data": name}
    if directory is not None:
        options["data"] = f"{name}:{os.fsdecode(_check.path(directory, f'{where}: directory'))}"
        if len(os.fsencode(options["data"])) >= _d.PATHLEN:
            _errors.fail(f"{where}: directory: longer than {_d.PATHLEN - len(name) - 2} bytes")
    options.update(_common(where, n_train, n_test, seed, standardize))
    options["split"] = _choice(split, ("pooled", "official"), f"{where}: split")
    if classes is not None:
        options["classes"] = _classes(classes, f"{where}: classes")
    options["targets"] = _choice(targets, IMAGE_TARGETS, f"{where}: targets")
    teacher = targets.startswith("teacher")
    options["teacher-seed"] = str(_check.integer(teacher_seed, f"{where}: teacher_seed", 0,
                                                 U64_MAX))
    if network is not None and not teacher:
        _errors.fail(f"{where}: network: only teacher targets use a network (targets is "
                     f"{targets!r})")
    net = _network_options(network or {}, f"{where}: network") if teacher else None
    return _load(options, net, where, split)


def mnist(*, n_train: int = 500, n_test: int = 500, seed: int = 1,
          classes: Optional[Sequence[int]] = None, standardize: Optional[bool] = None,
          split: str = "pooled", targets: str = "labels", teacher_seed: int = 99991,
          network: Optional[Mapping[str, Any]] = None, directory: Any = None) -> Dataset:
    """MNIST digits as `atf features --data mnist` loads them (the defaults are the command's).

    n_train, n_test: examples per split (0 … 2**30); n_train=0 takes every example the test
    split leaves. seed: the data seed (--data-seed): a seeded permutation of the examples of the
    selected classes, the first n_train for training and the next n_test for testing.
    classes: the labels kept, in this order (class index j is classes[j]; with two, the first
    is −1 and the second +1); None keeps every label present, in increasing order.
    standardize: None is the command's default for images (on: every image to zero mean and
    unit variance); False keeps the pixels in [0, 1]. split: "pooled" (train and test drawn
    from every image) or "official" (train from train-*, test from t10k-*; the files from
    scripts/fetch_mnist.sh have no t10k-*). targets: "labels" (±1 or one-hot), "teacher" or
    "teacher-sign" (the fit of an independent random network's last-layer features, drawn
    with teacher_seed; docs/tangent.md §1). network: for teacher targets, the architecture the
    teacher shares with the student, as the command's network options: widths (list; default
    D, 128, 128, C), bias (True, False or a list of 1-based layers), activation (a spec or one
    per hidden layer), param ("standard" | "ntk"), init ("he" | "torch" | "lecun"); the
    command refuses a student network drawn with the teacher's seed, so draw yours with another.
    directory: read the IDX files of this directory (--data mnist:DIR) instead of searching
    data_roots().

    Refused with atf.InputError naming the argument: counts, seeds and labels that are not
    integers in range, classes listed twice, unknown split, targets or network options, a
    network without teacher targets; by the library (atf.InputError or atf.FileError with its
    message): files not found (naming every directory searched), corrupt IDX files, a class
    absent from the data, more examples than the data has."""
    return _images("mnist", directory, split, n_train, n_test, seed, classes, standardize,
                   targets, teacher_seed, network)


def fashion_mnist(*, n_train: int = 500, n_test: int = 500, seed: int = 1,
                  classes: Optional[Sequence[int]] = None, standardize: Optional[bool] = None,
                  split: str = "pooled", targets: str = "labels", teacher_seed: int = 99991,
                  network: Optional[Mapping[str, Any]] = None,
                  directory: Any = None) -> Dataset:
    """Fashion-MNIST as `atf features --data fashion-mnist` loads it: the 60 000 train-* and
    10 000 t10k-* images of the Debian package dataset-fashion-mnist (/usr/share/datasets) or
    of ROOT/fashion-mnist in another data root. split="official" draws the training examples
    from train-* and the test examples from t10k-*; the default "pooled" draws both from all
    70 000 (the command's default). Every other argument as mnist()."""
    return _images("fashion-mnist", directory, split, n_train, n_test, seed, classes,
                   standardize, targets, teacher_seed, network)


def multi_index(*, d: int = 16, r: int = 2, noise: float = 0.0, n_train: int = 500,
                n_test: int = 500, seed: int = 1, standardize: bool = False) -> Dataset:
    """The synthetic multi-index regression of `atf features --data synthetic:d=D,r=R,noise=S`
    (docs/tangent.md §1): x ~ N(0, I_d), z = U x with U ∈ R^{r×d} of orthonormal rows drawn
    from the seed, y = g(z) + noise·ε with Var g = 1; one output, no labels, targets "given".
    Train and test examples are the first n_train and the next n_test of one stream, so a
    larger n_test leaves the training examples as they are.

    n_train ≥ 1 (one stream has no examples "left" by the test split), n_test ≥ 0.
    d, r: 1 … 10**6 with r ≤ d. noise: a finite number ≥ 0 (passed to the library as its
    shortest round-trip decimal, so the library reads the same double). standardize: True
    standardises every input row (the command's --standardize; off by default)."""
    where = "atf.data.multi_index"
    d = _check.integer(d, f"{where}: d", 1, MAX_SYNTHETIC_DIM)
    r = _check.integer(r, f"{where}: r", 1, MAX_SYNTHETIC_DIM)
    if r > d:
        _errors.fail(f"{where}: r = {r} exceeds d = {d} (z = U x has at most d directions)")
    noise = _check.nonnegative(noise, f"{where}: noise")
    options = {"data": f"synthetic:d={d},r={r},noise={noise!r}"}
    # n_train 0 ("every example the test split leaves") means none in one synthetic stream
    options.update(_common(where, n_train, n_test, seed,
                           _flag(standardize, f"{where}: standardize"), least_train=1))
    return _load(options, None, where, None)


__all__ = ["Dataset", "mnist", "fashion_mnist", "multi_index", "data_roots"]
