"""atf.path, atf.sweep, atf.train and atf.cli (the `atf` program run from Python) against the
same commands run directly on the same files: the same program runs, so the tables, the result
files and the trained models must be equal bit for bit (timings aside). Also: the program's
stderr reaches a redirected sys.stderr (and a log callback) as it comes, with in-place \\r
updates passed through; exit codes become exceptions carrying the program's message; bad
arguments are refused before anything runs, naming the argument; Ctrl-C stops the child cleanly
and raises KeyboardInterrupt with no child left; `python -m atf` runs the program."""
import contextlib
import io
import json
import os
import pickle
import signal
import subprocess
import sys
import time
import warnings

import h5py
import numpy as np

import atf
import atf_env
import pyprob
from atf import _cli, _progress

d = atf_env.scratch()
check = atf_env.check
TIMING = {"seconds", "cpu_seconds", "setup_seconds"}


def cli_json(*args, quiet=True):
    p = atf_env.run(*args, "--json", *(["--quiet"] if quiet else []))
    return json.loads(p.stdout.strip().splitlines()[-1])


def rows_of(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def untimed(rows):
    return [{k: v for k, v in row.items() if k not in TIMING} for row in rows]


def same_blocks(file_a, file_b, what):
    a, b = atf.Result.read(file_a), atf.Result.read(file_b)
    check(list(a.blocks) == list(b.blocks), f"{what}: block names")
    for name in a.blocks:
        x, y = a.blocks[name].B, b.blocks[name].B
        check(x.shape == y.shape and np.array_equal(x, y), f"{what}: block {name} differs")


def raises(cls, fn, what):
    try:
        fn()
    except cls as e:
        return e
    except Exception as e:  # noqa: BLE001
        check(False, f"{what}: raised {type(e).__name__}: {e}")
        return None
    check(False, f"{what}: nothing raised")
    return None


# a small problem with labels and two outputs (no test split: scored on validation examples)
prob_file = os.path.join(d, "p.h5")
pyprob.build().write(prob_file)
prob = atf.Problem.read(prob_file)

# a tangent-feature problem with a /test split
feat_file = os.path.join(d, "f.h5")
cli_feat = cli_json("features", "--data", "synthetic", "--n-train", "30", "--n-test", "20",
                    "--widths", "16,8,1", "-o", feat_file, quiet=False)
py_feat = atf.cli(["features", "--data", "synthetic", "--n-train", 30, "--n-test", 20,
                   "--widths", "16,8,1", "-o", os.path.join(d, "f2.h5")], progress=False)
check(py_feat["fingerprint"] == cli_feat["fingerprint"] and py_feat["rows"] == 30,
      f"atf.cli(features): {py_feat} vs {cli_feat}")

# ---- atf.path: xent on validation examples, from a file and from an atf.Problem
lambdas = [1, 0.1, 0.01]
cli_dir = os.path.join(d, "path-cli")
cli_sum = cli_json("path", prob_file, "--loss", "xent", "--lambdas", "1,0.1,0.01", "-o", cli_dir,
                   "--validation-fraction", "0.34")
cli_rows = rows_of(os.path.join(cli_dir, "path.jsonl"))
for label, source in [("file", prob_file), ("atf.Problem", prob)]:
    out = os.path.join(d, f"path-py-{label.replace('.', '')}")
    res = atf.path(source, "xent", lambdas, out, validation_fraction=0.34, progress=False)
    what = f"atf.path from a {label}"
    check(isinstance(res, atf.PathResult) and len(res) == 3, f"{what}: {res}")
    check(untimed(res.rows) == untimed(cli_rows), f"{what}: rows differ from atf path's")
    check(res.best_lambda == cli_sum["best_lambda"] and res.best_xent == cli_sum["best_xent"]
          and res.criterion == cli_sum["criterion"] == "validation cross-entropy",
          f"{what}: best {res.best_lambda} {res.best_xent} vs {cli_sum}")
    check(np.array_equal(res.lambdas, [1, 0.1, 0.01]), f"{what}: lambdas {res.lambdas}")
    check(np.array_equal(res.error, [r["val_error"] for r in cli_rows])
          and np.array_equal(res.xent, [r["val_xent"] for r in cli_rows])
          and np.array_equal(res.column("objective"), [r["objective"] for r in cli_rows]),
          f"{what}: columns")
    check(res.problem_file == os.path.join(res.out_dir, "fit.h5")
          and res.problem().fingerprint == atf.Problem.read(
              os.path.join(cli_dir, "fit.h5")).fingerprint, f"{what}: fitted problem")
    for row in range(3):
        same_blocks(res.result_file(row), os.path.join(cli_dir, f"lambda-{row}.h5"),
                    f"{what}: row {row}")
    best = res.result()
    check(best.status == "solved" and res.rows[res.best_row]["lambda"] == res.best_lambda
          and os.path.basename(cli_sum["best_result"]) == f"lambda-{res.best_row}.h5",
          f"{what}: best row {res.best_row}")
    check(os.path.isfile(res.csv) and os.path.isfile(res.figure), f"{what}: files")
check(os.path.isfile(os.path.join(d, "path-py-atfProblem", "problem.h5")),
      "atf.path(atf.Problem) writes DIR/problem.h5")

# squared loss on the /test split; stderr through a redirected sys.stderr, verbose and quiet
cli_dir = os.path.join(d, "path-sq-cli")
cli_json("path", feat_file, "--loss", "squared", "--lambdas", "0.5,0.05", "-o", cli_dir)
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    res = atf.path(feat_file, "squared", [0.05, 0.5], os.path.join(d, "path-sq-py"),
                   verbose=True, progress=True)
text = buf.getvalue()
check(untimed(res.rows) == untimed(rows_of(os.path.join(cli_dir, "path.jsonl"))),
      "atf.path squared: rows differ from atf path's")
check(not res.validation and np.array_equal(res.error, [r["test_error"] for r in res.rows])
      and res.problem_file == os.path.abspath(feat_file), "atf.path squared: the test split")
check("lambda=0.5: solved" in text and "lambda=0.05: solved" in text,
      f"progress lines not seen through a redirected sys.stderr: {text[:300]!r}")
check("newton" in text and len(text.splitlines()) > 4,
      f"verbose: no iteration table on sys.stderr: {text[:300]!r}")
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    atf.path(feat_file, "squared", [0.5], os.path.join(d, "path-quiet"), progress=False)
check(buf.getvalue() == "", f"progress=False wrote {buf.getvalue()[:200]!r}")
lines = []
atf.path(feat_file, "squared", [0.5], os.path.join(d, "path-log"), log=lines.append,
         progress=True)
# the default (progress=None): a command that ends within 2 s shows nothing; past that, as True
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    atf.path(feat_file, "squared", [0.5], os.path.join(d, "path-auto"))
check(buf.getvalue() == "", f"progress=None, a quick path: nothing, got {buf.getvalue()[:200]!r}")
_progress.AUTO_AFTER = 0.0
with contextlib.redirect_stderr(buf):
    atf.path(feat_file, "squared", [0.5], os.path.join(d, "path-auto2"))
_progress.AUTO_AFTER = 2.0
check("lambda=0.5: solved" in buf.getvalue(),
      f"progress=None past AUTO_AFTER: the lines, got {buf.getvalue()[:200]!r}")
out = io.StringIO()
atf.path(feat_file, "squared", [0.5], os.path.join(d, "path-file"), progress=out)
check("lambda=0.5: solved" in out.getvalue(), "progress=a file: the lines go there")
check(any("lambda=0.5: solved" in s for s in lines), f"log callback saw {lines[:3]}")

# ---- atf.sweep
cli_dir = os.path.join(d, "sweep-cli")
cli_sum = cli_json("sweep", prob_file, "--out", cli_dir, "--families", "sq,abs", "--scales",
                   "0.1,1", "--structures", "layer", "--penalty", "sq+abs")
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    sw = atf.sweep(prob_file, os.path.join(d, "sweep-py"), families=["sq", "abs"],
                   scales=[0.1, 1], structures="layer", penalties=["sq+abs"], progress=True)
cli_rows = rows_of(os.path.join(cli_dir, "sweep.jsonl"))
check(isinstance(sw, atf.SweepResult) and len(sw) == len(cli_rows) == 6
      and sw.summary["rows"] == cli_sum["rows"], f"atf.sweep: {sw} vs {cli_sum}")
check(untimed(sw.rows) == untimed(cli_rows), "atf.sweep: rows differ from atf sweep's")
check(np.array_equal(sw.column("objective"), [r["objective"] for r in cli_rows])
      and os.path.isfile(sw.csv) and os.path.isfile(sw.figure), "atf.sweep: columns, files")
# off a terminal the progress is throttled (a line every few seconds, and the last one)
check("layer|" in buf.getvalue() and "done" in buf.getvalue(),
      f"atf.sweep progress: {buf.getvalue()[:200]!r}")

# the same call again resumes in process: no row is solved again, the table is the same
again = atf.sweep(prob_file, os.path.join(d, "sweep-py"), families=["sq", "abs"],
                  scales=[0.1, 1], structures="layer", penalties=["sq+abs"], progress=False)
check(again.summary.get("new_rows") == 0 and again.rows == sw.rows,
      f"atf.sweep resumed: {again.summary}")

# the figures are atf.Figure: the SVG's path, displayed as the image by IPython
fig = sw.figure
check(isinstance(fig, atf.Figure) and isinstance(fig, str) and os.path.isfile(fig) and
      fig._repr_svg_().lstrip().startswith(("<?xml", "<svg")) and
      fig._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n" and fig.png.endswith("sweep.png"),
      f"sweep figure: an atf.Figure with SVG and PNG reprs, got {fig!r}")
check(pickle.loads(pickle.dumps(fig)) == fig and isinstance(pickle.loads(pickle.dumps(fig)),
                                                              atf.Figure), "a Figure pickles")
gone = atf.Figure(os.path.join(d, "nowhere.svg"))
check(gone._repr_svg_() is None and gone._repr_png_() is None and gone.png is None,
      "a Figure whose files are gone shows as its path")

# a sweep with the cross-entropy fills test_xent beside test_error from the test split's labels
import torch  # noqa: E402 (only this check needs it)
rng = np.random.default_rng(5)
torch.manual_seed(5)
net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
xent_prob = atf.features(net, rng.standard_normal((24, 5)), rng.integers(0, 3, 24),
                         X_test=rng.standard_normal((12, 5)), Y_test=rng.integers(0, 3, 12))
sx = atf.sweep(xent_prob, os.path.join(d, "sweep-xent"), families=["sq"], scales=[1],
               structures="layer", loss="xent:lambda=0.5", progress=False)
check(len(sx) == 2 and np.all(np.isfinite(sx.column("test_xent"))) and
      np.all(np.isfinite(sx.column("test_error"))),
      f"atf.sweep with xent: test_xent and test_error filled, got {sx.rows}")

# ---- atf.train: the three models, and a starting network given as an atf.MLP
TRAIN = ["--data", "synthetic", "--n-train", "40", "--n-test", "20", "--widths", "16,8,1",
         "--epochs", "3", "--batch", "8"]
KW = dict(n_train=40, n_test=20, widths=[16, 8, 1], epochs=3, batch=8)


def h5_data(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset)
                     else None)
    return out


def same_training(tr, cli_file, cli_sum, what):
    check({k: v for k, v in tr.summary.items() if k != "output"}
          == {k: v for k, v in cli_sum.items() if k != "output"},
          f"{what}: report {tr.summary} vs {cli_sum}")
    ref = h5_data(cli_file)
    check(tr.data is not None and sorted(tr.data) == sorted(ref), f"{what}: datasets")
    for k in ref:
        check(k in tr.data and np.array_equal(np.asarray(tr.data[k]), ref[k]),
              f"{what}: dataset {k} differs")


for model in ["network", "linearized", "factorized"]:
    cli_file = os.path.join(d, f"train-cli-{model}.h5")
    extra = ["--save-init", os.path.join(d, "mlp0.h5")] if model == "network" else []
    cli_sum = cli_json("train", *TRAIN, "--model", model, "-o", cli_file, *extra)
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        tr = atf.train("synthetic", os.path.join(d, f"train-py-{model}.h5"), model=model,
                       progress=True, **KW)
    what = f"atf.train {model}"
    same_training(tr, cli_file, cli_sum, what)
    check("epoch    3/3" in buf.getvalue(), f"{what}: epochs not on sys.stderr")
    check(tr.attrs is not None and tr.attrs[""].get("model", model) in (model, "network"),
          f"{what}: attributes")
    if model == "network":
        m = tr.mlp()
        check(m.widths == [16, 8, 1] and np.array_equal(m.weights[0], tr.data["W0"]),
              f"{what}: mlp() {m}")
    else:
        raises(atf.InputError, tr.mlp, f"{what}: mlp() of a training file")

mlp0 = atf.MLP.read(os.path.join(d, "mlp0.h5"))
cli_file = os.path.join(d, "train-cli-init.h5")
cli_sum = cli_json("train", "--data", "synthetic", "--n-train", "40", "--n-test", "20",
                   "--epochs", "2", "--batch", "8", "--model", "factorized", "--init",
                   os.path.join(d, "mlp0.h5"), "-o", cli_file)
tr = atf.train("synthetic", os.path.join(d, "train-py-init.h5"), model="factorized",
               init=mlp0, n_train=40, n_test=20, epochs=2, batch=8, progress=False)
same_training(tr, cli_file, cli_sum, "atf.train from an atf.MLP")

# ---- refusals: before anything runs (naming the argument), or with the program's message
for fn, word in [
        (lambda: atf.path(prob_file, "xent", [1], d, max_iter=2**40), "max_iter"),
        (lambda: atf.path(prob_file, "xent", [1], d, seed=-1), "seed"),
        (lambda: atf.path(prob_file, "hinge", [1], d), "loss"),
        (lambda: atf.path(prob_file, "xent", [1, float("nan")], d), "lambdas"),
        (lambda: atf.path(prob_file, "xent", [], d), "lambdas"),
        (lambda: atf.path(prob_file, "xent", [-1], d), "lambdas"),
        (lambda: atf.path(prob_file, "xent", [1], d, penalty="sq\0abs"), "penalty"),
        (lambda: atf.path(prob_file + "\0x", "xent", [1], d), "problem"),
        (lambda: atf.sweep(prob_file, d, max_iter=True), "max_iter"),
        (lambda: atf.sweep(prob_file, d, alignment_max=10**7), "alignment_max"),
        (lambda: atf.sweep(prob_file, d, families=["sq,abs"]), "families"),
        (lambda: atf.train("synthetic", "x.h5", epochs=0), "epochs"),
        (lambda: atf.train("synthetic", "x.h5", batch=2**40), "batch"),
        (lambda: atf.train("synthetic", "x.h5", data_seed=2**64), "data_seed"),
        (lambda: atf.train("synthetic", "x.h5", widths=[16, 2.5, 1]), "widths"),
        (lambda: atf.train("synthetic", "x.h5", lr=float("inf")), "lr"),
        (lambda: atf.train("synthetic", "x.h5", model="cnn"), "model"),
        (lambda: atf.cli(["features", "--data", "a\0b"]), "args[2]"),
        (lambda: atf.cli("features --help"), "list")]:
    e = raises(atf.InputError, fn, f"refusal naming {word}")
    check(e is None or word in str(e), f"refusal: {e} does not name {word}")
check(not os.path.exists("x.h5"), "a refused atf.train wrote a file")

# the program's own refusals: its one-line message, as on its stderr (and, past AUTO_AFTER —
# here 0 —, on sys.stderr: what progress=None held is shown)
_progress.AUTO_AFTER = 0.0
for py, args in [
        (lambda: atf.path(prob_file, "xent", [1], os.path.join(d, "m"), method="nonsense"),
         ["path", prob_file, "--loss", "xent", "--lambdas", "1", "-o", os.path.join(d, "m"),
          "--method", "nonsense"]),
        (lambda: atf.path(prob_file, "xent", [1, 1], os.path.join(d, "m")),
         ["path", prob_file, "--loss", "xent", "--lambdas", "1,1", "-o", os.path.join(d, "m")]),
        (lambda: atf.train("synthetic", os.path.join(d, "t.h5"), optimizer="lbfgs"),
         ["train", "--data", "synthetic", "-o", os.path.join(d, "t.h5"), "--optimizer",
          "lbfgs"]),
        (lambda: atf.cli(["path", "--bogus"]), ["path", "--bogus"])]:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        e = raises(atf.InputError, py, f"program refusal {args[0]} {args[-1]}")
    p = atf_env.run(*args, ok=(2,))
    message = p.stderr.strip().splitlines()[-1]
    check(e is not None and e.message == message and message.startswith("atf "),
          f"InputError {e} is not the program's message {message!r}")
    check(message in buf.getvalue(), "the program's message reaches sys.stderr too")
_progress.AUTO_AFTER = 2.0

# exit 3: atf.Infeasible; exit 4: the JSON with an IterationLimitWarning
H, D, J, S, r, f0, labels = pyprob.arrays()
rinf = r.copy()
rinf[1] = rinf[0] + 1.0
inf_file = os.path.join(d, "inf.h5")
atf.Problem(rinf, [atf.Block.dense("W", np.vstack([J[:1], J[:1], J[2:]]), 2, 2)], pyprob.N,
            pyprob.C).write(inf_file)
e = raises(atf.Infeasible, lambda: atf.cli(["solve", inf_file, "-o", os.path.join(d, "i.h5"),
                                            "--quiet"]), "exit 3")
check(e is not None and e.summary is not None and e.summary.get("status") == "infeasible",
      f"Infeasible carries the JSON: {getattr(e, 'summary', None)}")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = atf.cli(["solve", prob_file, "-o", os.path.join(d, "lim.h5"), "--max-iter", 2,
                   "--penalty", "pow:p=1.5", "--quiet"])
check(out.get("status") == "max_iterations"
      and any(issubclass(w.category, atf.IterationLimitWarning) for w in caught),
      f"exit 4: {out}, warnings {[str(w.message) for w in caught]}")
check(atf.cli(["--version"], json=False)["stdout"].strip() == f"atf {atf.__version__}",
      "atf.cli --version")

# program() (the console script's): $ATF first; a missing one is atf.Error naming it
check(_cli.program() == os.environ["ATF"], "program() is $ATF")
saved = os.environ["ATF"]
os.environ["ATF"] = os.path.join(d, "no-such-atf")
e = raises(atf.Error, _cli.program, "program() without a program")
check(e is not None and "no-such-atf" in str(e), f"program(): {e}")
# the commands' library: $ATF_CLI_LIBRARY names it; a missing one is atf.Error naming it
os.environ["ATF_CLI_LIBRARY"] = os.path.join(d, "no-such-lib.so")
saved_host, _cli._host_lib = _cli._host_lib, None
e = raises(atf.Error, lambda: atf.cli(["--version"], json=False), "no libatf_cli.so")
check(e is not None and "no-such-lib.so" in str(e), f"a missing libatf_cli.so: {e}")
del os.environ["ATF_CLI_LIBRARY"]
_cli._host_lib = saved_host

# the commands run in this process (libatf_cli.so), their stderr streamed as it comes: a
# training's first lines arrive long before its end
os.environ["ATF"] = saved
seen = []
t0 = time.monotonic()
atf.train("synthetic", os.path.join(d, "stream.h5"), n_train=400, n_test=50, widths=[16, 64, 1],
          epochs=2000, batch=8, lr=0.01, init="lecun", progress=True,
          log=lambda s: seen.append((s, time.monotonic() - t0)))
elapsed = time.monotonic() - t0
check(seen and seen[0][0].startswith("train:") and seen[0][1] < elapsed - 0.3,
      f"stderr not streamed: first {seen[:1]}, total {elapsed:.2f} s")
try:  # the command ran here: no child process is left (none running, none unreaped)
    kids = os.waitpid(-1, os.WNOHANG)
except ChildProcessError:
    kids = None
check(kids is None, f"a child process is left: {kids}")
check(_cli._with_json(["go", "--", "-x"]) == ["go", "--json", "--", "-x"] and
      _cli._with_json(["go", "--json"]) == ["go", "--json"], "--json goes before --")
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    e = raises(atf.InputError, lambda: atf.cli(["solve", "--no-such-option"]), "exit 2")
check(e is not None and e.message.startswith("atf solve: unknown option '--no-such-option'")
      and "unknown option" in buf.getvalue(), f"exit 2: the command's message, got {e}")

# Ctrl-C: a child Python trains for a long time; SIGINT to it stops the program, which saves
# the model; KeyboardInterrupt is raised and no child process is left
KI = os.path.join(d, "ki.h5")
CHILD = r"""
import os, sys, atf
started = []
def log(s):
    if not started and "epoch" in s:
        started.append(1)
        print("started", flush=True)
try:
    atf.train("synthetic", sys.argv[1], n_train=400, n_test=50, widths=[16, 64, 1],
              epochs=1000000, batch=8, lr=0.01, init="lecun", log=log)
    print("finished")
except KeyboardInterrupt:
    try:  # a child left (running or not waited for) would be found here
        kids = str(os.waitpid(-1, os.WNOHANG))
    except ChildProcessError:
        kids = ""
    print("interrupted", repr(kids), os.path.exists(sys.argv[1]), flush=True)
"""
child = subprocess.Popen([sys.executable, "-c", CHILD, KI], stdout=subprocess.PIPE, text=True)
line = child.stdout.readline()
time.sleep(0.5)
child.send_signal(signal.SIGINT)
try:
    rest, _ = child.communicate(timeout=60)
except subprocess.TimeoutExpired:
    child.kill()
    rest = "hung"
check(line.strip() == "started" and rest.strip() == "interrupted '' True"
      and child.returncode == 0, f"Ctrl-C: child said {line!r} {rest!r}, exit {child.returncode}")

# python -m atf runs the program (atf/__main__.py)
env = dict(os.environ)
for args, want in [(["--version"], f"atf {atf.__version__}"),
                   (["path", "--help"], "usage: atf path")]:
    p = subprocess.run([sys.executable, "-m", "atf", *args], capture_output=True, text=True,
                       env=env, timeout=60)
    check(p.returncode == 0 and p.stdout.startswith(want),
          f"python -m atf {' '.join(args)}: exit {p.returncode}, {p.stdout[:80]!r}")

atf_env.finish("test_cli_entry")
