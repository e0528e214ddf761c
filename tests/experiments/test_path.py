"""End-to-end tests of `atf path` (regularisation paths in λ) through the binary.

Usage: test_path.py CASE SCRATCH_DIR   (CASE: xent, validation, squared, resume, bad). The atf
binary comes from the ATF environment variable; the problems are 200 Fashion-MNIST training
images (the Debian package, scripts/setup.sh) with 300 test images on a narrow 784-32-10
network. Checked independently of the code under test: the scores against predictions
f0 + A vec B recomputed with numpy from the problem and result files, the validation examples
against the fitted problem's inputs (disjoint, complementary, seeded), the loss values against
the recomputed losses, the best λ against the argmin of its column, warm starts against cold
solves by `atf solve` (counted, not assumed), and an interrupted and resumed path against an
uninterrupted one.
"""
import csv
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_experiments import (ATF, check_figure, check_jsonl_matches,  # noqa: E402
                              combine_lsan_suppressions, read_rows, run)

import h5py  # noqa: E402

FASHION = "/usr/share/datasets/fashion-mnist"
LAMBDAS = "1,8,2,4"          # given out of order: solved as 8, 4, 2, 1
TOL = 1e-5
TIMING = ("seconds", "cpu_seconds", "setup_seconds")


def make_problem(scratch, name="fm.h5", n=200, seed=1):
    assert os.path.isdir(FASHION), "dataset-fashion-mnist is not installed (scripts/setup.sh)"
    path = os.path.join(scratch, name)
    run(["features", "--data", "fashion-mnist", "--split", "official", "--n-train", str(n),
         "--n-test", "300", "--widths", "784,32,10", "--seed", str(seed), "-o", path])
    return path


def path_cmd(prob, out, *extra, loss="xent", lambdas=LAMBDAS):
    return ["path", prob, "--loss", loss, "--lambdas", lambdas, "-o", out, "--tol", str(TOL),
            "--quiet"] + list(extra)


def no_leftovers(out):
    names = os.listdir(out)
    assert not [f for f in names if ".tmp." in f or f.endswith(".lock")], names


# ---- numpy references -----------------------------------------------------------------------

def predictions(group, res):
    """f0 + A vec B for the factored blocks of one split (row m = i·C + k)."""
    f = np.array(group["f0"]).reshape(-1)
    C = np.array(group["f0"]).shape[1]
    for name in group["blocks"]:
        H, D = np.array(group["blocks"][name]["H"]), np.array(group["blocks"][name]["D"])
        B = np.array(res["blocks"][name]["B"])
        f = f + np.sum(np.repeat(H @ B, C, axis=0) * D, axis=1)
    return f.reshape(-1, C)


def scores(F, labels):
    error = float(np.mean(np.argmax(F, axis=1) != labels))
    z = F - F.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return error, float(-np.mean(logp[np.arange(len(labels)), labels]))


def close(a, b, rel=1e-7):
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-12)


def check_rows(rows, keys, loss):
    """Descending λ, every row solved to the tolerance, objective = loss + penalty."""
    assert [r["key"] for r in rows] == keys, [r["key"] for r in rows]
    lam = [float(r["lambda"]) for r in rows]
    assert lam == sorted(lam, reverse=True), lam
    for r in rows:
        assert r["status"] == "solved", r
        assert r["method"] not in ("auto", "unknown"), r   # the method that ran
        assert r["loss"] == f"{loss}:lambda={r['key']}", r
        assert float(r["pg_residual"]) <= TOL, r
        assert close(float(r["objective"]), float(r["loss_value"]) + float(r["penalty_value"]),
                     1e-9), r
        assert int(r["iterations"]) > 0 and int(r["operator_passes"]) > 0, r
        assert int(r["erank_W1"]) >= 1 and int(r["erank_W2"]) >= 1, r
    assert [r["warm_from"] for r in rows] == ["none"] + keys[:-1], "warm starts"
    assert [r["result"] for r in rows] == [f"lambda-{i}.h5" for i in range(len(rows))]


def check_best(rows, summary, column, criterion):
    vals = [float(r[column]) for r in rows]
    k = int(np.argmin(vals))
    assert summary["criterion"] == criterion, summary
    assert close(summary["best_lambda"], float(rows[k]["lambda"])), (summary, vals)
    split = column.split("_")[0]
    assert close(summary["best_error"], float(rows[k][split + "_error"])), summary
    assert summary["best_result"].endswith(rows[k]["result"]), summary
    return rows[k]


def cold_and_warm(prob, out, rows):
    """Iterations of cold `atf solve` runs at the warm-started λ, and of `atf solve --warm` from
    the previous λ's result file, which must repeat the path's solve exactly."""
    cold, warm = [], []
    for prev, r in zip(rows, rows[1:]):
        base = ["solve", prob, "--loss", r["loss"], "--tol", str(TOL), "--quiet", "--json",
                "-o", os.path.join(out, "..", "solve.h5")]
        c = json.loads(run(base).stdout)
        w = json.loads(run(base + ["--warm", os.path.join(out, prev["result"])]).stdout)
        assert w["iterations"] == int(r["iterations"]), (w["iterations"], r["iterations"])
        assert close(w["objective"], r["objective"], 1e-9), (w["objective"], r["objective"])
        cold.append(c["iterations"])
        warm.append(int(r["iterations"]))
    return cold, warm


# ---- cases ----------------------------------------------------------------------------------

def case_xent(scratch):
    prob = make_problem(scratch)
    out = os.path.join(scratch, "xent")
    p = run(path_cmd(prob, out, "--json"))
    summary = json.loads(p.stdout)
    rows = check_jsonl_matches(os.path.join(out, "path.csv"), os.path.join(out, "path.jsonl"))
    check_rows(rows, ["8", "4", "2", "1"], "xent")
    assert summary["rows"] == 4 and summary["new_rows"] == 4 and summary["seconds"] > 0
    with h5py.File(prob, "r") as f:
        labels, test_labels = np.array(f["labels"]), np.array(f["test/labels"])
        N = len(labels)
        for r in rows:
            with h5py.File(os.path.join(out, r["result"]), "r") as res:
                tr = scores(predictions(f, res), labels)
                te = scores(predictions(f["test"], res), test_labels)
            assert close(r["train_error"], tr[0]) and close(r["train_xent"], tr[1]), (r, tr)
            assert close(r["test_error"], te[0]) and close(r["test_xent"], te[1]), (r, te)
            # the loss of xent:lambda=λ is the summed cross-entropy over λ
            assert close(float(r["loss_value"]) * float(r["lambda"]) / N, tr[1], 1e-6), r
            assert r["val_error"] == "nan" and r["split"] == "test", r
    best = check_best(rows, summary, "test_xent", "test cross-entropy")
    # the result files are atf predict's: same scores
    pr = json.loads(run(["predict", prob, os.path.join(out, best["result"]), "--json"]).stdout)
    assert close(pr["test"]["xent"], best["test_xent"]), pr
    cold, warm = cold_and_warm(prob, out, rows)
    print(f"warm-started iterations {warm} (total {sum(warm)}), cold {cold} (total {sum(cold)})")
    assert sum(warm) < sum(cold), (warm, cold)
    check_figure(os.path.join(out, "path"), ["best λ = " + best["key"], "cross-entropy", "test"])
    no_leftovers(out)
    # a second run has nothing to do; --opt=value works too
    p = run(["path", prob, "--loss=xent", "--lambdas=" + LAMBDAS, "--out=" + out,
             "--tol=" + str(TOL), "--quiet", "--json"])
    assert json.loads(p.stdout)["new_rows"] == 0
    assert "best lambda" in run(path_cmd(prob, out)).stdout   # the Markdown report


def fitted_examples(prob, fit):
    """Indices of the fitted problem's examples in the original, found by their inputs (the
    first layer's H holds each image)."""
    with h5py.File(prob, "r") as f, h5py.File(fit, "r") as g:
        X, Xf = np.array(f["blocks/W1/H"]), np.array(g["blocks/W1/H"])
    where = {row.tobytes(): i for i, row in enumerate(X)}
    assert len(where) == len(X), "the images are distinct"
    return [where[row.tobytes()] for row in Xf], len(X)


def case_validation(scratch):
    prob = make_problem(scratch)
    out = os.path.join(scratch, "val")
    p = run(path_cmd(prob, out, "--validation-fraction", "0.25", "--seed", "3", "--json"))
    summary = json.loads(p.stdout)
    rows = check_jsonl_matches(os.path.join(out, "path.csv"), os.path.join(out, "path.jsonl"))
    check_rows(rows, ["8", "4", "2", "1"], "xent")
    fit = os.path.join(out, "fit.h5")
    idx, N = fitted_examples(prob, fit)
    val = sorted(set(range(N)) - set(idx))
    assert len(idx) == 150 and len(set(idx)) == 150 and idx == sorted(idx), "fitted examples"
    assert len(val) == 50 and not set(val) & set(idx), "validation examples"
    assert rows[0]["split"] == "validation:fraction=0.25,seed=3,examples=50", rows[0]["split"]
    with h5py.File(prob, "r") as f:
        labels = np.array(f["labels"])
        for r in rows:   # scored on exactly the examples not fitted
            with h5py.File(os.path.join(out, r["result"]), "r") as res:
                F = predictions(f, res)
                v = scores(F[val], labels[val])
                t = scores(F[idx], labels[idx])
                te = scores(predictions(f["test"], res), np.array(f["test/labels"]))
            assert close(r["val_error"], v[0]) and close(r["val_xent"], v[1]), (r, v)
            assert close(r["train_error"], t[0]) and close(r["train_xent"], t[1]), (r, t)
            assert close(r["test_error"], te[0]) and close(r["test_xent"], te[1]), (r, te)
    check_best(rows, summary, "val_xent", "validation cross-entropy")
    run(["predict", fit, os.path.join(out, "lambda-0.h5")])   # the results' problem is fit.h5
    check_figure(os.path.join(out, "path"), ["validation", "test", "train"])
    no_leftovers(out)
    # seeded: the same seed gives the same rows, another seed other examples
    same = os.path.join(scratch, "val-same")
    run(path_cmd(prob, same, "--validation-fraction", "0.25", "--seed", "3"))
    for a, b in zip(rows, read_rows(os.path.join(same, "path.csv"))):
        assert {k: v for k, v in a.items() if k not in TIMING} == \
            {k: v for k, v in b.items() if k not in TIMING}, (a, b)
    other = os.path.join(scratch, "val-other")
    run(path_cmd(prob, other, "--validation-fraction", "0.25", "--seed", "4", lambdas="8"))
    idx4, _ = fitted_examples(prob, os.path.join(other, "fit.h5"))
    assert len(idx4) == 150 and idx4 != idx, "another seed, other validation examples"


def case_squared(scratch):
    prob = make_problem(scratch)
    out = os.path.join(scratch, "sq")
    p = run(path_cmd(prob, out, "--validation-fraction", "0.2", "--json", loss="squared",
                     lambdas="0.5,4,2,1"))
    summary = json.loads(p.stdout)
    rows = check_jsonl_matches(os.path.join(out, "path.csv"), os.path.join(out, "path.jsonl"))
    check_rows(rows, ["4", "2", "1", "0.5"], "squared")
    vals = [float(r["val_error"]) for r in rows]
    best = check_best(rows, summary, "val_error", "validation error")
    # ties go to the larger λ: the first of the minima in descending order
    assert float(best["lambda"]) == max(float(r["lambda"]) for r, v in zip(rows, vals)
                                        if v == min(vals)), (vals, best["key"])
    with h5py.File(os.path.join(out, "fit.h5"), "r") as g:
        rvec = np.array(g["r"])
        f0 = np.array(g["f0"])
        for r in rows:   # (1/2λ) ||A vec B - r||^2 from the fitted problem and the result
            with h5py.File(os.path.join(out, r["result"]), "r") as res:
                pred = (predictions(g, res) - f0).reshape(-1)
            ref = np.sum((pred - rvec) ** 2) / (2 * float(r["lambda"]))
            assert close(r["loss_value"], ref, 1e-8), (r["loss_value"], ref)
    check_figure(os.path.join(out, "path"), ["best λ", "validation"])
    no_leftovers(out)


def interrupted_run(cmd, csv_path, rows_before_signal):
    proc = subprocess.Popen([ATF] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if os.path.exists(csv_path) and \
                len(open(csv_path).read().splitlines()) >= 1 + rows_before_signal:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    return proc.returncode, err


def case_resume(scratch):
    prob = make_problem(scratch)
    ref = os.path.join(scratch, "ref")
    run(path_cmd(prob, ref, "--tol", "1e-6"))
    expected = read_rows(os.path.join(ref, "path.csv"))
    out = os.path.join(scratch, "resumed")
    csv_path = os.path.join(out, "path.csv")
    code, err = interrupted_run(path_cmd(prob, out, "--tol", "1e-6"), csv_path, 1)
    if code == 0:
        print("note: the path finished before the interrupt landed")
    else:
        assert code == 130, (code, err)
        assert "re-run the same command to resume" in err, err
        assert len(err.strip().splitlines()) == 1, err
    partial = read_rows(csv_path)
    assert 1 <= len(partial) <= 4
    no_leftovers(out)
    results = sorted(f for f in os.listdir(out) if f.startswith("lambda-"))
    assert results == [r["result"] for r in partial], (results, partial)   # nothing extra
    before = open(csv_path).read()
    # another loss, penalty, split, seed, tolerance or problem is refused, the table untouched
    other = make_problem(scratch, "other.h5", seed=2)
    for cmd in (path_cmd(prob, out, "--tol", "1e-6", loss="squared"),
                path_cmd(prob, out, "--tol", "1e-6", "--penalty", "zsq"),
                path_cmd(prob, out, "--tol", "1e-6", "--validation-fraction", "0.2"),
                path_cmd(prob, out, "--tol", "1e-7"),
                path_cmd(prob, out, "--tol", "1e-6", "--no-reduce"),
                path_cmd(other, out, "--tol", "1e-6")):
        p = run(cmd, expect=2)
        assert len(p.stderr.strip().splitlines()) == 1 and "another output directory" in \
            p.stderr, p.stderr
        assert open(csv_path).read() == before
    val = os.path.join(scratch, "resumed-val")
    run(path_cmd(prob, val, "--validation-fraction", "0.2", "--seed", "5", lambdas="8"))
    p = run(path_cmd(prob, val, "--validation-fraction", "0.2", "--seed", "6", lambdas="8"),
            expect=2)
    assert "seed=5" in p.stderr and "seed=6" in p.stderr, p.stderr
    # resumed: the same table as the uninterrupted run (timings aside)
    run(path_cmd(prob, out, "--tol", "1e-6"))
    rows = check_jsonl_matches(csv_path, os.path.join(out, "path.jsonl"))
    assert rows[:len(partial)] == partial, "recorded rows changed"
    assert [r["key"] for r in rows] == [r["key"] for r in expected]
    for a, b in zip(rows, expected):
        for k in a:
            if k in TIMING:
                continue
            try:
                x, y = float(a[k]), float(b[k])
            except ValueError:
                assert a[k] == b[k], (k, a[k], b[k])
                continue
            assert (math.isnan(x) and math.isnan(y)) or close(x, y, 1e-9), (k, a[k], b[k])
    no_leftovers(out)
    # --no-reduce: recorded in the solver column; the same minimiser as the reduced solve
    nr = os.path.join(scratch, "no-reduce")
    run(path_cmd(prob, nr, "--tol", "1e-6", "--no-reduce", lambdas="8"))
    (row,) = read_rows(os.path.join(nr, "path.csv"))
    assert row["solver"].endswith(",reduce=0"), row["solver"]
    assert not expected[0]["solver"].endswith("reduce=0"), expected[0]["solver"]
    assert close(row["objective"], expected[0]["objective"], 1e-5), (row, expected[0])


def case_bad(scratch):
    prob = make_problem(scratch, n=40)
    out = os.path.join(scratch, "bad")

    def refused(args, word):
        if os.path.isdir(out):
            shutil.rmtree(out)
        p = run(args, expect=2)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and word in lines[0], (args, p.stderr)
        assert not os.path.isdir(out) or not os.listdir(out), (args, os.listdir(out))
        return lines[0]

    base = ["path", prob, "--loss", "xent", "-o", out]
    refused(base + ["--lambdas", "1,0"], "--lambdas")
    refused(base + ["--lambdas", "1,-2"], "--lambdas")
    refused(base + ["--lambdas", "nan"], "--lambdas")
    refused(base + ["--lambdas", "inf"], "--lambdas")
    refused(base + ["--lambdas", ""], "--lambdas")
    refused(base + ["--lambdas", "1,,2"], "--lambdas")
    refused(base + ["--lambdas", "0.1,1e-1"], "given twice")
    refused(["path", prob, "--loss", "xent", "-o", out], "--lambdas")
    refused(["path", prob, "--lambdas", "1", "-o", out], "--loss")
    refused(["path", prob, "--loss", "xent", "--lambdas", "1"], "-o")
    refused(base + ["--lambdas", "1", "--loss", "xent:lambda=1"], "--loss")
    for f in ("0", "1", "-0.1", "1.5", "nan"):
        refused(base + ["--lambdas", "1", "--validation-fraction", f], "--validation-fraction")
    refused(base + ["--lambdas", "1", "--method", "bogus"], "--method")
    refused(base + ["--lambdas", "1", "--penalty", "cubic"], "cubic")
    refused(base + ["--lambdas", "1", "--bogus"], "--bogus")
    refused(["path", os.path.join(scratch, "missing.h5"), "--loss", "xent", "--lambdas", "1",
             "-o", out], "missing.h5")
    # a method the solver refuses for a loss: one line, no table left behind
    refused(base + ["--lambdas", "1", "--method", "admm"], "admm")
    # xent needs labels; scoring needs a test split or a validation fraction
    nolabels = os.path.join(scratch, "nolabels.h5")
    shutil.copy(prob, nolabels)
    with h5py.File(nolabels, "a") as f:
        del f["labels"]
    refused(["path", nolabels, "--loss", "xent", "--lambdas", "1", "-o", out], "/labels")
    notest = os.path.join(scratch, "notest.h5")
    run(["features", "--data", "fashion-mnist", "--split", "official", "--n-train", "30",
         "--n-test", "0", "--widths", "784,8,10", "-o", notest])
    refused(["path", notest, "--loss", "squared", "--lambdas", "1", "-o", out], "/test")
    # ... with a validation fraction it runs
    run(["path", notest, "--loss", "squared", "--lambdas", "1", "-o", out, "--quiet",
         "--validation-fraction", "0.3", "--max-iter", "50"])
    assert read_rows(os.path.join(out, "path.csv"))[0]["test_error"] == "nan"


CASES = {"xent": case_xent, "validation": case_validation, "squared": case_squared,
         "resume": case_resume, "bad": case_bad}

if __name__ == "__main__":
    case, scratch = sys.argv[1], sys.argv[2]
    scratch = os.path.join(scratch, "path-" + case)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    combine_lsan_suppressions(scratch)
    CASES[case](scratch)
    print(f"path {case}: ok")
