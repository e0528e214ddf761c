"""atf.data against `atf features`: the same arguments give the command's examples bit for bit
(inputs = the W1 block's H of the problem file, /y, /labels, both splits), and with the
command's network (--save-mlp, read back by atf.MLP.read) atf.features gives the file's
fingerprint and arrays. Cases: MNIST digits (data/mnist, when fetched), Fashion-MNIST (when
dataset-fashion-mnist is installed), a small IDX data set written here (always: plain and gzip,
the official split, --data mnist:DIR, ATF_DATA), the synthetic multi-index task, teacher
targets; then the data roots and the refusals of bad arguments (atf errors naming the item,
never a crash)."""
import contextlib
import gzip
import json
import os
import struct
from typing import Optional

import numpy as np

import atf
import atf_env

check = atf_env.check
scratch = atf_env.scratch()
FASHION_HINT = "dataset-fashion-mnist not installed (scripts/setup.sh)?"
MNIST_HINT = "data/mnist not fetched (scripts/fetch_mnist.sh)?"


def skipped(what: str, why: str) -> None:
    print(f"skipped: {what}: not in the data roots {atf.data.data_roots()}: {why}")


def features_cli(label: str, data_args: list, net_args: list) -> tuple:
    """`atf features` with these options: (the problem file read back, its network, the JSON
    summary)."""
    name = "".join(c if c.isalnum() else "-" for c in label)
    problem = os.path.join(scratch, f"{name}.h5")
    network = os.path.join(scratch, f"{name}-mlp.h5")
    out = atf_env.run("features", *data_args, *net_args, "-o", problem, "--save-mlp", network,
                      "--json")
    return atf.Problem.read(problem), atf.MLP.read(network), json.loads(out.stdout)


def same_split(label: str, X: np.ndarray, y: np.ndarray, labels, split) -> None:
    """The loaded arrays are the command's: the inputs are W1's H (the first layer's input,
    standard parameterisation), the targets /y, the class indices /labels."""
    H = split.blocks[0].H
    check(X.dtype == np.float64 and X.shape == H.shape and np.array_equal(X, H),
          f"{label}: X {X.shape} equals the file's W1 H {H.shape} bit for bit")
    check(y.dtype == np.float64 and np.array_equal(y, split.y),
          f"{label}: y {y.shape} equals the file's /y {split.y.shape} bit for bit")
    theirs = split.labels
    check((labels is None) == (theirs is None) and
          (labels is None or np.array_equal(labels, theirs)),
          f"{label}: labels equal the file's /labels ({'none' if labels is None else len(labels)})")


def same_data(label: str, ds: atf.data.Dataset, cli: atf.Problem, summary: dict) -> None:
    same_split(f"{label}: train", ds.X_train, ds.y_train, ds.labels_train, cli)
    if ds.n_test:
        same_split(f"{label}: test", ds.X_test, ds.y_test, ds.labels_test, cli.test)
    else:
        check(cli.test is None and ds.X_test.shape == (0, ds.inputs),
              f"{label}: no test split in either")
    check(list(ds.classes) == summary["classes"] and ds.source == summary["source"] and
          ds.targets == summary["targets"],
          f"{label}: classes {ds.classes}, source {ds.source!r} and targets {ds.targets!r} as "
          f"the command's summary {summary['classes']}, {summary['source']!r}, "
          f"{summary['targets']!r}")


def same_problem(label: str, py: atf.Problem, cli: atf.Problem, with_labels: bool = True) -> None:
    """Bitwise the same problem: r, f0, y, (labels), every block's H and D, both splits."""
    def equal(a, b):
        return (a is None and b is None) or (a is not None and b is not None and
                                             np.array_equal(a, b))
    for which, p, c in (("train", py, cli), ("test", py.test, cli.test)):
        if c is None:
            check(p is None, f"{label}: {which}: no split in either")
            continue
        same = (equal(p.r, c.r) and equal(p.f0, c.f0) and equal(p.y, c.y) and
                len(p.blocks) == len(c.blocks) and
                all(a.name == b.name and equal(a.H, b.H) and equal(a.D, b.D)
                    for a, b in zip(p.blocks, c.blocks)))
        check(same, f"{label}: {which}: r, f0, y and every block's H and D bitwise equal")
        if with_labels:
            check(equal(p.labels, c.labels), f"{label}: {which}: labels equal")


def with_network(label: str, ds: atf.data.Dataset, mlp: atf.MLP, cli: atf.Problem) -> None:
    """atf.features on the loaded data and the command's network: the command's file."""
    test = (ds.X_test, ds.y_test) if ds.n_test else ()
    py = atf.features(mlp, ds.X_train, ds.y_train, *test)
    check(py.fingerprint == cli.fingerprint,
          f"{label}: atf.features(data) fingerprint {py.fingerprint} == `atf features` "
          f"{cli.fingerprint}")
    same_problem(label, py, cli)
    if ds.targets == "labels":  # class indices give the same targets and labels
        test = (ds.X_test, ds.labels_test) if ds.n_test else ()
        by_class = atf.features(mlp, ds.X_train, ds.labels_train, *test)
        check(by_class.fingerprint == cli.fingerprint,
              f"{label}: atf.features with the class indices: the same fingerprint")


def compare(label: str, ds: atf.data.Dataset, data_args: list, net_args: list) -> None:
    cli, mlp, summary = features_cli(label, data_args, net_args)
    same_data(label, ds, cli, summary)
    with_network(label, ds, mlp, cli)
    # the options the data set names load the same examples
    again, _, _ = features_cli(label + " again", list(ds.cli_options), net_args)
    check(again.fingerprint == cli.fingerprint,
          f"{label}: `atf features {' '.join(ds.cli_options)}` gives the same file")


@contextlib.contextmanager
def atf_data(value: Optional[str]):
    """$ATF_DATA set to value (None: unset) for the block, then as it was."""
    saved = os.environ.pop("ATF_DATA", None)
    if value is not None:
        os.environ["ATF_DATA"] = value
    try:
        yield
    finally:
        os.environ.pop("ATF_DATA", None)
        if saved is not None:
            os.environ["ATF_DATA"] = saved


# ---- an IDX data set of our own: 5×5 images, three classes, train-* plain and t10k-* gzip ----

def write_idx(directory: str, prefix: str, images: np.ndarray, labels: np.ndarray,
              gz: bool) -> None:
    os.makedirs(directory, exist_ok=True)
    opener, suffix = (gzip.open, ".gz") if gz else (open, "")
    n, rows, cols = images.shape
    with opener(os.path.join(directory, f"{prefix}-images-idx3-ubyte{suffix}"), "wb") as f:
        f.write(struct.pack(">BBBBIII", 0, 0, 8, 3, n, rows, cols) + images.tobytes())
    with opener(os.path.join(directory, f"{prefix}-labels-idx1-ubyte{suffix}"), "wb") as f:
        f.write(struct.pack(">BBBBI", 0, 0, 8, 1, n) + labels.tobytes())


def own_idx_root() -> str:
    rng = np.random.default_rng(3)
    root = os.path.join(scratch, "root")
    directory = os.path.join(root, "mnist")
    write_idx(directory, "train", rng.integers(0, 256, (90, 5, 5), dtype=np.uint8),
              (np.arange(90) % 3).astype(np.uint8), gz=False)
    write_idx(directory, "t10k", rng.integers(0, 256, (30, 5, 5), dtype=np.uint8),
              (np.arange(30) % 3).astype(np.uint8), gz=True)
    return root


def test_own_idx(root: str) -> None:
    directory = os.path.join(root, "mnist")
    net = ["--widths", "25,6,3", "--bias", "--activation", "tanh", "--seed", "4"]
    ds = atf.data.mnist(directory=directory, split="official", n_train=40, n_test=12, seed=9,
                        standardize=False)
    check(ds.data_dir == directory and ds.split == "official" and not ds.standardized and
          ds.classes == (0, 1, 2) and ds.outputs == 3,
          f"own IDX: {ds!r} from {ds.data_dir}, official split, pixels kept in [0, 1]")
    check(ds.X_train.min() >= 0 and ds.X_train.max() <= 1 and
          np.array_equal(ds.X_train * 255, np.round(ds.X_train * 255)),
          "own IDX, not standardised: pixels are bytes / 255")
    compare("own IDX official", ds, ["--data", f"mnist:{directory}", "--split", "official",
                                     "--n-train", "40", "--n-test", "12", "--data-seed", "9",
                                     "--no-standardize"], net)
    # pooled, two classes in the order given (class 2 is −1, class 0 is +1), found in ATF_DATA
    with atf_data(f"{os.path.join(scratch, 'nothing')}:{root}"):
        ds = atf.data.mnist(classes=[2, 0], n_train=30, n_test=10, seed=2)
        check(ds.data_dir == directory, f"ATF_DATA: the second root's mnist/ is used "
              f"({ds.data_dir})")
        check(np.array_equal(ds.y_train[:, 0], np.where(ds.labels_train == 1, 1.0, -1.0)) and
              set(ds.labels_train.tolist()) == {0, 1},
              "two classes: ±1 targets, class index 1 (the second listed) is +1")
        compare("own IDX classes 2,0", ds, ["--data", "mnist", "--classes", "2,0", "--n-train",
                                            "30", "--n-test", "10", "--data-seed", "2"],
                ["--widths", "25,5,1"])


# ---- the real data sets ----

def image_dir(name: str) -> str:
    """ROOT/name of the first data root holding its train-* files, or ""."""
    for root in atf.data.data_roots():
        directory = os.path.join(root, name)
        if any(os.path.exists(os.path.join(directory, f"train-labels-idx1-ubyte{s}"))
               for s in ("", ".gz")):
            return directory
    return ""


def test_mnist() -> None:
    if not image_dir("mnist"):
        skipped("MNIST against `atf features --data mnist`", MNIST_HINT)
        return
    ds = atf.data.mnist(n_train=60, n_test=20)
    check(ds.X_train.shape == (60, 784) and ds.y_train.shape == (60, 10) and
          ds.standardized and ds.split == "pooled",
          f"mnist: {ds!r}: 60 × 784 inputs, one-hot over 10 classes, standardised")
    row_mean, row_std = ds.X_train.mean(axis=1), ds.X_train.std(axis=1)
    check(np.allclose(row_mean, 0, atol=1e-12) and np.allclose(row_std, 1, atol=1e-12),
          "mnist: every image standardised to mean 0, variance 1")
    compare("mnist", ds, ["--data", "mnist", "--n-train", "60", "--n-test", "20"],
            ["--widths", "784,16,10"])
    test_mlp_create(ds)
    other = atf.data.mnist(n_train=60, n_test=20, seed=2)
    check(not np.array_equal(other.X_train, ds.X_train), "mnist: another seed, other images")
    test_teacher()


def test_mlp_create(ds: atf.data.Dataset) -> None:
    """atf.MLP.create draws the commands' network from the seed: with atf.data, a problem made
    in Python alone is `atf features`' file."""
    data_args = ["--data", "mnist", "--n-train", "60", "--n-test", "20"]
    for kw, net_args in [({}, ["--widths", "784,16,10"]),
                         (dict(seed=7, bias=True, activation="gelu"),
                          ["--widths", "784,16,16,10", "--seed", "7", "--bias=all",
                           "--activation", "gelu"])]:
        widths = [int(w) for w in net_args[1].split(",")]
        cli, mlp, _ = features_cli("create " + " ".join(net_args), data_args, net_args)
        made = atf.MLP.create(widths, **kw)
        check(made.fingerprint == mlp.fingerprint,
              f"MLP.create({widths}, {kw}): the command's network ({made!r})")
        py = atf.features(made, ds.X_train, ds.labels_train, ds.X_test, ds.labels_test)
        check(py.fingerprint == cli.fingerprint,
              f"MLP.create({widths}, {kw}) + atf.data + atf.features: the command's file")
    other = atf.MLP.create([784, 16, 10], seed=2)
    check(other.fingerprint != atf.MLP.create([784, 16, 10]).fingerprint,
          "MLP.create: another seed, other weights")


def teacher_args(n_test: int) -> list:
    return ["--data", "mnist", "--classes", "2,3", "--n-train", "50", "--n-test", str(n_test),
            "--data-seed", "7", "--targets", "teacher"]


def test_teacher() -> None:
    """Teacher targets: the network options the teacher shares with the student."""
    net = {"widths": [784, 16, 1], "bias": [1]}
    net_args = ["--widths", "784,16,1", "--bias=layers:1"]  # a bare "1" would be every layer
    ds = atf.data.mnist(classes=[2, 3], n_train=50, n_test=20, seed=7, targets="teacher",
                        network=net)
    cli, mlp, summary = features_cli("teacher", teacher_args(20), net_args)
    same_data("teacher", ds, cli, summary)
    check(ds.teacher_accuracy == summary["teacher_accuracy"],
          f"teacher: accuracy {ds.teacher_accuracy!r} == the command's "
          f"{summary['teacher_accuracy']!r}")
    check(not np.all(np.abs(ds.y_train) == 1), "teacher: real-valued targets, not ±1")
    # atf.features takes targets or class indices, not both: with real-valued targets its
    # problem has no labels, so the test split's (which the fingerprint covers) are missing;
    # everything else is the command's, bit for bit
    py = atf.features(mlp, ds.X_train, ds.y_train, ds.X_test, ds.y_test)
    same_problem("teacher", py, cli, with_labels=False)
    check(py.labels is None and py.test.labels is None and cli.test.labels is not None,
          "teacher: atf.features leaves out the labels of real-valued targets")
    no_test = atf.data.mnist(classes=[2, 3], n_train=50, n_test=0, seed=7, targets="teacher",
                             network=net)
    cli0, _, _ = features_cli("teacher-0", teacher_args(0), net_args)
    py0 = atf.features(mlp, no_test.X_train, no_test.y_train)
    check(py0.fingerprint == cli0.fingerprint,
          "teacher, no test split (training labels are not fingerprinted): same fingerprint")


def test_fashion() -> None:
    if not image_dir("fashion-mnist"):
        skipped("Fashion-MNIST against `atf features --data fashion-mnist`", FASHION_HINT)
        return
    ds = atf.data.fashion_mnist(split="official", n_train=50, n_test=30, seed=3,
                                classes=[0, 7, 9])
    compare("fashion official", ds, ["--data", "fashion-mnist", "--split", "official",
                                     "--n-train", "50", "--n-test", "30", "--data-seed", "3",
                                     "--classes", "0,7,9"], ["--widths", "784,8,3"])
    ds = atf.data.fashion_mnist(n_train=40, n_test=10, classes=[5, 1], standardize=False)
    compare("fashion pooled", ds, ["--data", "fashion-mnist", "--n-train", "40", "--n-test",
                                   "10", "--classes", "5,1", "--no-standardize"],
            ["--widths", "784,4,1", "--seed", "11"])


def test_multi_index() -> None:
    ds = atf.data.multi_index(d=8, r=3, noise=0.1, n_train=40, n_test=15, seed=5)
    check(ds.labels_train is None and ds.classes == () and ds.targets == "given" and
          ds.outputs == 1 and ds.split is None and ds.data_dir is None,
          f"multi_index: {ds!r}: given targets, no labels")
    compare("multi_index", ds, ["--data", "synthetic:d=8,r=3,noise=0.1", "--n-train", "40",
                                "--n-test", "15", "--data-seed", "5"], ["--widths", "8,12,1"])
    longer = atf.data.multi_index(d=8, r=3, noise=0.1, n_train=40, n_test=30, seed=5)
    check(np.array_equal(longer.X_train, ds.X_train) and
          np.array_equal(longer.X_test[:15], ds.X_test),
          "multi_index: one stream: more test examples leave the first ones as they are")
    # noise given to the library exactly: a value without a short decimal
    noise = 1 / 3
    ds = atf.data.multi_index(d=5, r=2, noise=noise, n_train=20, n_test=0, seed=8,
                              standardize=True)
    compare("multi_index noise 1/3", ds, ["--data", f"synthetic:d=5,r=2,noise={noise!r}",
                                          "--n-train", "20", "--n-test", "0", "--data-seed",
                                          "8", "--standardize"],
            ["--widths", "5,7,1", "--activation", "gelu"])
    default = atf.data.multi_index(n_train=12, n_test=3)
    compare("multi_index defaults", default, ["--data", "synthetic", "--n-train", "12",
                                              "--n-test", "3"], ["--widths", "16,4,1"])


# ---- the data roots and the refusals ----

def test_roots() -> None:
    a, b = os.path.join(scratch, "a"), os.path.join(scratch, "b")
    os.makedirs(a)
    os.symlink(a, os.path.join(scratch, "a-link"))
    with atf_data(None):
        roots = atf.data.data_roots()
    repo = os.path.realpath(os.path.join(os.environ["ATF_SOURCE_ROOT"], "data"))
    check(roots[-1] == "/usr/share/datasets" and
          any(os.path.realpath(r) == repo for r in roots),
          f"default roots: the repository's data/ and /usr/share/datasets ({roots})")
    with atf_data(""):
        check(atf.data.data_roots() == roots, "ATF_DATA empty: as if unset")
    with atf_data(f"{a}::{b}:{a}:{os.path.join(scratch, 'a-link')}"):
        check(atf.data.data_roots() == [a, b],
              f"ATF_DATA: empty entries skipped, a directory named twice searched once "
              f"({atf.data.data_roots()})")
    with atf_data(f"{a}:{b}"):
        p = atf_env.run("features", "--data", "mnist", "-o", os.path.join(scratch, "x.h5"),
                        ok=(2,))
        cli_message = p.stderr.strip().split("atf features: ", 1)[-1]
        try:
            atf.data.mnist()
            check(False, "no data: nothing raised")
        except atf.InputError as e:
            ours = e.message.split("atf.data.mnist: ", 1)[-1]
            check("\n" not in e.message and e.message.startswith("atf.data.mnist: ") and
                  ours == cli_message and os.path.join(a, "mnist") in ours and
                  os.path.join(b, "mnist") in ours,
                  f"no data: one line naming every directory searched, the command's words: "
                  f"{e.message!r} vs {cli_message!r}")


def refused(call, cls, needles, what) -> None:
    atf_env.raises(call, cls, needles, what)
    try:
        call()
    except atf.Error as e:
        check("\n" not in e.message, f"{what}: one line")
    except Exception:  # noqa: BLE001 — reported by raises above
        pass


def test_refusals(root: str) -> None:
    own = os.path.join(root, "mnist")
    mnist = lambda **kw: (lambda: atf.data.mnist(directory=own, **kw))  # noqa: E731
    bad = atf.InputError
    for value in (-1, 2**30 + 1, 2**40, 1.5, True, "10", None):
        refused(mnist(n_train=value), bad, ["atf.data.mnist: n_train", repr(value)[:3]],
                f"n_train={value!r}")
    refused(mnist(n_test=-3), bad, ["n_test", "-3"], "n_test=-3")
    for value in (-1, 2**64, 0.5, np.nan):
        refused(mnist(seed=value), bad, ["seed"], f"seed={value!r}")
    refused(mnist(teacher_seed=-1, targets="teacher"), bad, ["teacher_seed"], "teacher_seed=-1")
    refused(mnist(classes=[2, 2]), bad, ["classes", "class 2 listed twice"], "classes twice")
    refused(mnist(classes="2,3"), bad, ["classes", "a list of class labels"], "classes string")
    refused(mnist(classes=[2.0]), bad, ["classes", "integers are expected"], "float classes")
    refused(mnist(classes=[]), bad, ["classes", "0 classes"], "no classes")
    refused(mnist(classes=[-1]), bad, ["classes", "-1"], "negative class")
    refused(mnist(classes=list(range(65))), bad, ["classes", "65 classes"], "65 classes")
    refused(mnist(classes=[1, 7]), bad, ["class 7 absent"], "a class the data lacks")
    refused(mnist(split="halves"), bad, ["split", "'halves'", "pooled, official"], "split")
    refused(mnist(standardize="yes"), bad, ["standardize", "True or False"], "standardize")
    refused(mnist(targets="given"), bad, ["targets", "'given'"], "given targets of images")
    refused(mnist(network={"widths": [25, 4, 3]}), bad,
            ["network: only teacher targets use a network"], "a network without a teacher")
    refused(mnist(targets="teacher", network={"depth": 3}), bad, ["unknown option 'depth'"],
            "an unknown network option")
    refused(mnist(targets="teacher", network={"widths": [25, 0, 3]}), bad,
            ["network['widths']", "0"], "a zero width")
    refused(mnist(targets="teacher", network={"activation": "swish"}), bad,
            ["atf.data.mnist", "activation", "swish"], "an unknown activation (the library's)")
    small = {"n_train": 20, "n_test": 10}
    refused(mnist(targets="teacher", network={"widths": [25, 3]}, **small), bad,
            ["teacher targets need at least one hidden layer"], "a teacher without hidden layer")
    refused(mnist(targets="teacher", network={"widths": [784, 8, 3]}, **small), bad,
            ["input width 784"], "a teacher of another input width")
    refused(mnist(n_train=90, n_test=40), bad, ["90 training + 40 test", "available"],
            "more examples than the data has")
    refused(lambda: atf.data.mnist(directory=os.path.join(scratch, "none")), bad,
            [os.path.join(scratch, "none"), "train-images-idx3-ubyte"], "a missing directory")
    refused(lambda: atf.data.mnist(directory="a\0b"), bad, ["directory", "NUL"], "NUL in a path")
    corrupt = os.path.join(scratch, "corrupt")
    write_idx(corrupt, "train", np.zeros((4, 2, 2), np.uint8), np.zeros(4, np.uint8), gz=False)
    with open(os.path.join(corrupt, "train-images-idx3-ubyte"), "r+b") as f:
        f.truncate(20)
    refused(lambda: atf.data.mnist(directory=corrupt), atf.Error,
            ["train-images-idx3-ubyte"], "a truncated IDX file")
    refused(lambda: atf.data.mnist(directory=own, split="official", n_train=10, n_test=31),
            bad, ["official split has", "+ 30"], "the official split's limits")
    refused(lambda: atf.MLP.create([784]), bad, ["atf.MLP.create: widths"], "one width")
    refused(lambda: atf.MLP.create([784, 0, 10]), bad, ["atf.MLP.create: widths"], "width 0")
    refused(lambda: atf.MLP.create([4, 3, 2], activation="swish"), atf.Error, ["swish"],
            "an unknown activation")
    refused(lambda: atf.MLP.create([4, 3, 2], param="wide"), atf.Error, ["wide"],
            "an unknown parameterisation")
    multi = atf.data.multi_index
    refused(lambda: multi(d=0), bad, ["multi_index: d", "0"], "d=0")
    refused(lambda: multi(d=2**40), bad, ["multi_index: d"], "d=2**40")
    refused(lambda: multi(d=3, r=4), bad, ["r = 4 exceeds d = 3"], "r > d")
    for noise in (-0.5, float("nan"), float("inf"), "0.1"):
        refused(lambda: multi(noise=noise), bad, ["multi_index: noise"], f"noise={noise!r}")
    refused(lambda: multi(standardize=None), bad, ["standardize"], "standardize=None")
    refused(lambda: multi(n_train=0, n_test=5), bad, ["multi_index: n_train", "0 is outside 1"],
            "no training examples")


def main() -> None:
    root = own_idx_root()
    test_own_idx(root)
    test_mnist()
    test_fashion()
    test_multi_index()
    test_roots()
    test_refusals(root)
    atf_env.finish("test_data")


main()
