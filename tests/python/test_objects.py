"""Python objects that behave (issue 46): Problem, Result, MLP, PathResult, SweepResult and
TrainResult pickle and come back bit for bit (pickle.dumps/loads, copy, and one object through a
multiprocessing 'spawn' child); what the wrappers carry beyond their files (a problem's model, a
result's model link, a test split's parent, an MLP's frozen blocks) survives; the records keep
working once their output directory is gone; atf.load reads any problem, result or MLP file by
its kind; enums are strings; each method's repr shows its own certificate; py.typed is there;
the tables convert to numpy columns and (with a stand-in pandas) to a DataFrame, and say so
when pandas is missing."""
import copy
import math
import multiprocessing
import os
import pickle
import shutil
import struct
import sys
import types
import warnings
from typing import Any

import numpy as np

import atf
import atf_env
import pyprob

check = atf_env.check


def bits(x: Any) -> Any:
    """x in a form whose == means bit for bit: arrays as (dtype, shape, bytes), floats as their
    8 bytes (so NaN equals NaN and 0.0 differs from -0.0), containers item by item."""
    if isinstance(x, np.ndarray) and x.dtype == object:
        return ("objects", x.shape, [bits(v) for v in x.tolist()])
    if isinstance(x, np.ndarray):
        return ("array", x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, float):
        return ("float", struct.pack("<d", x))
    if isinstance(x, dict):
        return {k: bits(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [bits(v) for v in x]
    if hasattr(x, "indptr"):  # a scipy CSR matrix
        return [bits(x.indptr), bits(x.indices), bits(x.data), x.shape]
    return x


def block_state(b: atf.Block) -> dict:
    return {"name": b.name, "kind": b.kind, "rows": b.rows, "cols": b.cols,
            "penalty": b.penalty, "structure": b.structure, "J": b.J, "H": b.H, "D": b.D,
            "csr": b.csr}


def problem_state(p: atf.Problem, prov: bool = True) -> dict:
    """Everything a Problem shows, with (prov) its provenance as the C struct holds it: a
    problem built in memory has not recorded the atf version yet, which its file (and so its
    pickle) records, so built problems are compared without it."""
    test = p.test
    state = {"samples": p.samples, "outputs": p.outputs, "M": p.M, "r": p.r, "f0": p.f0,
             "y": p.y, "labels": p.labels, "fingerprint": p.fingerprint,
             "blocks": [block_state(b) for b in p.blocks], "centered": p.centered,
             "test": None if test is None else problem_state(test, prov)}
    if prov:
        c = p._p.contents.prov
        state["prov"] = {name: getattr(c, name) for name, _ in type(c)._fields_}
    return bits(state)


def mlp_state(m: atf.MLP) -> dict:
    return bits({"widths": m.widths, "weights": m.weights, "biases": m.biases,
                 "activations": m.activations, "param": m.param, "frozen": m.frozen,
                 "fingerprint": m.fingerprint})


RESULT_FIELDS = ["status", "method", "linsys", "structure", "objective", "iterations",
                 "primal_residual", "dual_residual", "constraint_residual", "stationarity",
                 "ls_residual", "loss_value", "penalty_value", "pg_residual", "duality_gap",
                 "operator_passes", "inner_iterations", "method_note", "loss", "seconds",
                 "problem_fingerprint", "certificate"]


def result_state(r: atf.Result) -> dict:
    """Every attribute of a Result, its whole solver report (the C atf_info's bytes) and every
    block's arrays."""
    blocks = {n: {k: getattr(b, k) for k in ("rows", "cols", "k", "penalty", "layout", "B",
                                              "d", "s1", "sigma", "s2", "U", "V")}
              for n, b in r.blocks.items()}
    return bits({**{f: getattr(r, f) for f in RESULT_FIELDS},
                 "info": bytes(r._p.contents.info), "blocks": blocks})


def roundtrip(obj: Any) -> Any:
    return pickle.loads(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def state_in_child(obj: Any) -> Any:
    """Run in a spawned process: the state of the object it received."""
    return result_state(obj) if isinstance(obj, atf.Result) else problem_state(obj)


# ---- the C-backed objects -------------------------------------------------------------------

def test_problem(d: str) -> None:
    p = pyprob.build(penalty="sq+abs")           # factored, dense and sparse blocks, f0, y, labels
    path = os.path.join(d, "p.h5")
    p.write(path)
    want, filed = problem_state(p, prov=False), problem_state(atf.Problem.read(path))
    for proto in (2, pickle.HIGHEST_PROTOCOL):
        back = pickle.loads(pickle.dumps(p, protocol=proto))
        check(problem_state(back, prov=False) == want and problem_state(back) == filed,
              f"Problem pickled (protocol {proto}): not bit for bit")
    twin = copy.deepcopy(p)
    check(problem_state(twin) == filed and ctypes_address(twin) != ctypes_address(p),
          "copy.deepcopy(Problem): its own C problem")
    check(problem_state(copy.copy(p)) == filed, "copy.copy(Problem)")
    check(problem_state(roundtrip(atf.Problem.read(path))) == filed,
          "a Problem read from its file pickles bit for bit, provenance included")


def ctypes_address(p: atf.Problem) -> int:
    import ctypes
    return ctypes.addressof(p._p.contents)


def features_problem() -> tuple:
    """A problem of atf.features with a test split and its model (an atf.MLP with a frozen
    block), and the inputs for predictions."""
    rng = np.random.default_rng(3)
    mlp = atf.MLP([rng.standard_normal((5, 7)), rng.standard_normal((7, 2))],
                  [rng.standard_normal(7), None], activation="tanh", frozen=["b1"])
    X, Xt = rng.standard_normal((9, 5)), rng.standard_normal((6, 5))
    prob = atf.features(mlp, X, rng.integers(0, 2, 9), X_test=Xt, Y_test=rng.integers(0, 2, 6))
    return mlp, prob, Xt


def test_model_links() -> None:
    mlp, prob, Xt = features_problem()
    back = roundtrip(mlp)
    check(mlp_state(back) == mlp_state(mlp) and back.frozen == ("b1",),
          f"MLP pickled: not bit for bit, or frozen lost ({back.frozen})")
    check(np.array_equal(back(Xt), mlp(Xt)), "MLP pickled: the same forward pass")
    pb = roundtrip(prob)
    check(problem_state(pb, prov=False) == problem_state(prob, prov=False),
          "features problem pickled (with /test)")
    check(pb.centered is False and pb.test.model is pb.model, "centered and the split's model")
    check(isinstance(pb.model, atf.MLP) and mlp_state(pb.model) == mlp_state(prob.model),
          "Problem.model survives pickling")
    split = roundtrip(prob.test)
    check(split.parent is not None
          and problem_state(split, prov=False) == problem_state(prob.test, prov=False)
          and problem_state(split.parent, prov=False) == problem_state(prob, prov=False),
          "a test split pickles with its parent")
    res = atf.solve(prob, penalty="sq+sq")
    rb = roundtrip(res)
    check(result_state(rb) == result_state(res), "Result pickled: not bit for bit")
    check(isinstance(rb._model, atf.MLP) and np.array_equal(rb.predict(Xt), res.predict(Xt)),
          "Result's model link survives pickling: predict without model=")
    check(rb.problem_fingerprint == prob.fingerprint, "Result keeps its problem's fingerprint")


def test_torch_model() -> None:
    """A model on the general path (a torch snapshot, not an atf.MLP) travels with its problem
    and result too: torch pickles the module."""
    import torch
    torch.manual_seed(2)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.LayerNorm(6),
                              torch.nn.Linear(6, 1))
    rng = np.random.default_rng(2)
    X, Xt = rng.standard_normal((8, 4)), rng.standard_normal((5, 4))
    prob = atf.features(net, X, rng.standard_normal((8, 1)))
    res = atf.solve(prob)
    pb, rb = roundtrip(prob), roundtrip(res)
    check(type(pb.model) is type(prob.model) and not isinstance(pb.model, atf.MLP)
          and pb.model.names == prob.model.names, f"torch snapshot model pickled: {pb.model}")
    check(np.array_equal(rb.predict(Xt), res.predict(Xt)),
          "a result of a torch snapshot predicts the same after pickling")


def test_results(d: str) -> atf.Result:
    prob = pyprob.build()
    res = atf.solve(prob, loss="squared:lambda=0.1")
    want = result_state(res)
    check(result_state(roundtrip(res)) == want, "penalized Result pickled: not bit for bit")
    check(result_state(copy.deepcopy(res)) == want, "copy.deepcopy(Result)")
    path = os.path.join(d, "r.h5")
    res.write(path)
    read = atf.Result.read(path)
    back = roundtrip(read)
    check(result_state(back) == result_state(read) and back._model is None,
          "a Result read from a file pickles bit for bit, without a model")
    base = atf.baseline(prob, "cg")
    check(result_state(roundtrip(base)) == result_state(base), "cg baseline pickled")
    return res


def test_spawn(res: atf.Result) -> None:
    """One object through a process started with 'spawn': it arrives by pickle alone."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        got = pool.apply(state_in_child, (res,))
    check(got == result_state(res), "Result sent to a spawned process: not bit for bit")


def test_load(d: str) -> None:
    mlp, prob, _ = features_problem()
    res = atf.solve(prob)
    files = {name: os.path.join(d, f"load-{name}.h5") for name in ("p", "r", "m")}
    prob.write(files["p"])
    res.write(files["r"])
    mlp.write(files["m"])
    p, r, m = (atf.load(files[k]) for k in ("p", "r", "m"))
    check(isinstance(p, atf.Problem)
          and problem_state(p) == problem_state(atf.Problem.read(files["p"])),
          "atf.load of a problem file")
    check(isinstance(r, atf.Result)
          and result_state(r) == result_state(atf.Result.read(files["r"])),
          "atf.load of a result file")
    check(isinstance(m, atf.MLP) and mlp_state(m) == mlp_state(atf.MLP.read(files["m"])),
          "atf.load of an MLP file")
    check(isinstance(atf.load(os.fsencode(files["r"])), atf.Result), "atf.load of a bytes path")
    train = os.path.join(d, "train-load.h5")
    atf.train("synthetic", train, model="factorized", n_train=40, n_test=20, widths=[16, 8, 1],
              epochs=1, batch=8, progress=False)
    atf_env.raises(lambda: atf.load(train), atf.InputError, ["atf.load", "'atf-train'", train],
                   "atf.load of a training file")
    junk = os.path.join(d, "junk.h5")
    with open(junk, "w") as f:
        f.write("not hdf5")
    atf_env.raises(lambda: atf.load(junk), atf.InputError, [junk, "not an HDF5 file"],
                   "atf.load of a file that is not HDF5: the reader's message")


# ---- enums and reprs ------------------------------------------------------------------------

def test_enums() -> None:
    p = pyprob.build()
    check([b.kind for b in p.blocks] == ["factored", "dense", "sparse"],
          f"Problem.blocks kinds {[b.kind for b in p.blocks]}")
    H, D, J, S, *_ = pyprob.arrays()
    made = [atf.Block.factored("a", H, D).kind, atf.Block.dense("b", J, 2, 2).kind,
            atf.Block.sparse("c", S, 3, 2).kind]
    check(made == ["factored", "dense", "sparse"], f"Block.dense/factored/sparse kinds {made}")
    check("factored" in repr(p.blocks[0]), f"Block repr {p.blocks[0]!r}")
    direct = atf.Block("J", "dense", 2, 2, J=J)
    check(direct.kind == "dense", "Block(..., 'dense', ...) accepted")
    for bad in (0, 2, "Dense", None):
        atf_env.raises(lambda: atf.Block("J", bad, 2, 2, J=J), atf.InputError,
                       ["atf.Block", "kind", "dense, factored, sparse"], f"Block kind {bad!r}")
    res = atf.solve(p)
    names = {"status": res.status, "method": res.method, "structure": res.structure,
             "linsys": res.linsys, "loss": res.loss,
             "layout": res.blocks["W1"].layout, "penalty": res.blocks["W1"].penalty}
    check(all(isinstance(v, str) for v in names.values()), f"Result names are strings: {names}")
    check(isinstance(atf.MLP([np.ones((2, 1))]).param, str), "MLP.param is a string")
    check(all(isinstance(m["warm"], str) and isinstance(m["processes"], str)
              for m in atf.methods()), "atf.methods(): warm and processes are strings")


def certify(res: atf.Result, keys: list, what: str) -> None:
    """res.certificate has exactly these measures, with the result's own values, and the repr
    shows each of them and no other."""
    cert = res.certificate
    check(list(cert) == keys, f"{what}: certificate {list(cert)}, expected {keys}")
    attr = {"primal residual": res.primal_residual, "dual residual": res.dual_residual,
            "stationarity": res.stationarity, "constraint residual": res.constraint_residual,
            "least-squares residual": res.ls_residual, "pg residual": res.pg_residual,
            "duality gap": res.duality_gap}
    check(all(bits(cert[k]) == bits(attr[k]) for k in cert), f"{what}: certificate values")
    text = repr(res)
    shown = [f"{k} {cert[k]:.1e}" for k in keys]
    others = [k for k in attr if k not in keys and k in text.replace("least-squares", "")]
    check(all(s in text for s in shown) and not others and f", {res.method}," in text,
          f"{what}: repr {text} (expected {shown}, not {others})")


def test_reprs() -> None:
    prob = pyprob.build(penalty="sq+abs")
    certify(atf.baseline(prob), ["constraint residual"], "baseline (gram)")
    certify(atf.baseline(prob, "cg"), ["constraint residual"], "baseline (cg)")
    admm = atf.solve(prob, method="admm")
    certify(admm, ["primal residual", "dual residual", "stationarity"], "admm")
    for method in ("alm", "irls"):
        certify(atf.solve(prob, method=method), ["constraint residual", "stationarity"], method)
    certify(atf.solve(prob, "nuclear", method="lp", structure="diagonal"),
            ["constraint residual", "stationarity"], "lp")
    squared = "squared:lambda=0.1"
    convex = atf.solve(prob, "sq", loss=squared, method="newton")
    check(math.isfinite(convex.duality_gap), "newton, sq: a finite duality gap")
    certify(convex, ["pg residual", "duality gap"], "newton, convex penalty")
    check(f"newton, {squared}, pg residual" in repr(convex), f"penalized repr {convex!r}")
    nonconvex = atf.solve(prob, "sq+sq", loss=squared, method="fista")
    check(math.isnan(nonconvex.duality_gap), "fista, sq+sq: no duality gap")
    certify(nonconvex, ["pg residual"], "fista, nonconvex penalty (NaN gap not shown)")
    certify(atf.solve(prob, "nuclear", loss=squared, method="factored"),
            ["pg residual", "duality gap"], "factored")
    rng = np.random.default_rng(0)  # 12 rows, 4 unknowns: r is not in the range of A
    tall = atf.Problem(rng.standard_normal(12), [atf.Block.dense("W", rng.standard_normal(
        (12, 4)), 2, 2)], samples=12)
    for fn, what in ((lambda: atf.baseline(tall), "baseline"), (lambda: atf.solve(tall), "admm")):
        try:
            fn()
            check(False, f"infeasible {what}: nothing raised")
        except atf.Infeasible as e:
            certify(e.result, ["least-squares residual"], f"infeasible {what}")
            check(result_state(roundtrip(e.result)) == result_state(e.result),
                  f"infeasible {what}: its result pickles")


# ---- the records over an output directory ----------------------------------------------------

class FakePandas(types.ModuleType):
    """A stand-in `pandas` whose DataFrame records what it was given."""

    def __init__(self) -> None:
        super().__init__("pandas")
        self.calls = []
        fake = self

        class DataFrame:
            def __init__(self, data: Any) -> None:
                fake.calls.append(data)
                self.data = data
        self.DataFrame = DataFrame


def check_frame(record: Any, what: str) -> None:
    """to_frame hands to_dict's columns to pandas.DataFrame, and says when pandas is missing."""
    saved = sys.modules.get("pandas")
    try:
        fake = FakePandas()
        sys.modules["pandas"] = fake
        frame = record.to_frame()
        cols = record.to_dict()
        check(len(fake.calls) == 1 and isinstance(frame, fake.DataFrame)
              and list(frame.data) == list(cols) and bits(frame.data) == bits(cols),
              f"{what}.to_frame: DataFrame(to_dict()) expected, got {fake.calls!r:.200}")
        sys.modules["pandas"] = None  # `import pandas` now raises ImportError
        atf_env.raises(record.to_frame, atf.Error, [f"{what}.to_frame", "pandas is not installed"],
                       f"{what}.to_frame without pandas")
    finally:
        if saved is None:
            sys.modules.pop("pandas", None)
        else:
            sys.modules["pandas"] = saved


def record_state(rec: Any) -> Any:
    """Everything a record holds (rows, summary, columns, paths, data)."""
    return bits(vars(rec))


def test_path(d: str) -> None:
    out = os.path.join(d, "path")
    pr = atf.path(pyprob.build(), "xent", [1, 0.1], out, validation_fraction=0.34,
                  progress=False)
    back = roundtrip(pr)
    check(record_state(back) == record_state(pr), "PathResult pickled")
    check(result_state(back.result()) == result_state(pr.result()),
          "unpickled PathResult.result() while the directory exists")
    cols = pr.to_dict()
    check(list(cols)[:2] == ["key", "lambda"] and np.array_equal(cols["lambda"], pr.lambdas)
          and cols["lambda"].dtype == np.float64 and cols["iterations"].dtype == np.float64,
          f"PathResult.to_dict numbers: {[(k, v.dtype) for k, v in cols.items()][:12]}")
    check(cols["status"].dtype == object and list(cols["status"]) == ["solved", "solved"],
          "PathResult.to_dict strings as objects")
    check(np.all(np.isnan(cols["test_error"])), "PathResult.to_dict: null as NaN")
    check(all(len(v) == len(pr) for v in cols.values()), "PathResult.to_dict: one entry a row")
    check_frame(pr, "atf.PathResult")
    data = pickle.dumps(pr)
    shutil.rmtree(out)
    gone = pickle.loads(data)
    check(np.array_equal(gone.column("objective"), pr.column("objective"))
          and gone.best_lambda == pr.best_lambda and bits(gone.to_dict()) == bits(cols)
          and "PathResult" in repr(gone), "PathResult without its directory: table and summary")
    check_frame(gone, "atf.PathResult")
    for fn, name in ((gone.result, "result"), (gone.problem, "problem")):
        atf_env.raises(fn, atf.FileError, [f"atf.PathResult.{name}", out, "no such file"],
                       f"PathResult.{name}() without its directory")


def test_sweep(d: str) -> None:
    out = os.path.join(d, "sweep")
    sw = atf.sweep(pyprob.build(), out, families=["sq", "abs"], scales=[1],
                   structures="layer", progress=False)
    data = pickle.dumps(sw)
    cols = sw.to_dict()
    check(list(cols["key"]) == [r["key"] for r in sw.rows] and cols["key"].dtype == object
          and np.isnan(cols["p"]).all(), f"SweepResult.to_dict {list(cols)[:8]}")
    check_frame(sw, "atf.SweepResult")
    shutil.rmtree(out)
    gone = pickle.loads(data)
    check(record_state(gone) == record_state(sw) and bits(gone.to_dict()) == bits(cols)
          and len(gone) == 3, "SweepResult pickled, used without its directory")


def test_train(d: str) -> None:
    kw = dict(n_train=40, n_test=20, widths=[16, 8, 1], epochs=3, batch=8, progress=False)
    fac = atf.train("synthetic", os.path.join(d, "fac.h5"), model="factorized", **kw)
    net = atf.train("synthetic", os.path.join(d, "net.h5"), model="network", **kw)
    cols = fac.to_dict()
    hist = fac.data["history/drift1"]
    check(list(cols["epoch"]) == [1, 2, 3] and np.array_equal(cols["loss"],
                                                             fac.data["history/loss"])
          and np.array_equal(cols["drift1_2"], hist[:, 1]) and "drift1_3" not in cols,
          f"TrainResult.to_dict: {list(cols)}")
    check_frame(fac, "atf.TrainResult")
    atf_env.raises(net.to_dict, atf.InputError, ["no per-epoch history", "network"],
                   "TrainResult.to_dict of an MLP file")
    mlp = net.mlp()
    data = pickle.dumps((fac, net))
    os.remove(fac.output)
    os.remove(net.output)
    fac2, net2 = pickle.loads(data)
    check(record_state(fac2) == record_state(fac) and bits(fac2.to_dict()) == bits(cols),
          "TrainResult pickled, used without its file")
    check(record_state(net2) == record_state(net) and "network" in repr(net2),
          "TrainResult (network) pickled")
    atf_env.raises(net2.mlp, atf.FileError, ["atf.TrainResult.mlp", net.output],
                   "TrainResult.mlp() without its file")
    check(mlp_state(roundtrip(mlp)) == mlp_state(mlp), "the trained MLP pickles")


def test_py_typed() -> None:
    pkg = os.path.dirname(atf.__file__)
    check(os.path.isfile(os.path.join(pkg, "py.typed")), f"py.typed in {pkg}")
    root = os.environ["ATF_SOURCE_ROOT"]
    with open(os.path.join(root, "drivers", "python", "meson.build")) as f:
        build = f.read()
    # the whole folder is installed (so py.typed goes along), nothing but caches excluded
    check("install_subdir('atf'" in build and "exclude_files" not in build,
          "drivers/python/meson.build installs the package folder whole")


def main() -> None:
    d = atf_env.scratch()
    warnings.simplefilter("error", atf.IterationLimitWarning)
    test_problem(d)
    test_model_links()
    test_torch_model()
    res = test_results(d)
    test_spawn(res)
    test_load(d)
    test_enums()
    test_reprs()
    test_path(d)
    test_sweep(d)
    test_train(d)
    test_py_typed()
    atf_env.finish("test_objects")


if __name__ == "__main__":  # the spawned child imports this file without running the tests
    main()
