"""End-to-end tests of `atf experiment`, `atf sweep` and `atf demo` at tiny sizes.

Usage: test_experiments.py CASE SCRATCH_DIR   (CASE: penalties, sweep, resume, samples,
samples_models, samples_ridge, samples_ridge_resume, demo, alignment, …). The atf binary comes from the ATF environment variable. Each case checks that the
figures are valid SVG/PNG files with content, that the CSV rows are complete and agree with the
JSON lines, and properties that can fail independently of the code under test (Theorem 1 for
the `full` structure, K̄ = K0 for a one-point path, resuming without loss or duplication).
"""
import csv
import json
import math
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
import zlib

import numpy as np

ATF = os.environ["ATF"]


def combine_lsan_suppressions(scratch):
    """Under LeakSanitizer, add this folder's suppressions (PLplot's driver loader and the
    cairo driver's fontconfig, which never free their one-time allocations) to the project's."""
    here = os.path.dirname(os.path.abspath(__file__))
    parts = [os.path.join(here, "lsan_plot.supp")]
    opts = os.environ.get("LSAN_OPTIONS", "")
    kept = []
    for o in filter(None, opts.split(":")):
        if o.startswith("suppressions="):
            parts.insert(0, o.split("=", 1)[1])
        else:
            kept.append(o)
    path = os.path.join(scratch, "lsan.supp")
    with open(path, "w") as out:
        for p in parts:
            if os.path.exists(p):
                out.write(open(p).read() + "\n")
    os.environ["LSAN_OPTIONS"] = ":".join(kept + ["suppressions=" + path])


def run(args, expect=0, **kw):
    p = subprocess.run([ATF] + args, capture_output=True, text=True, **kw)
    if p.returncode != expect:
        raise AssertionError(f"atf {' '.join(args)}: exit {p.returncode}, expected {expect}\n"
                             f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def check_png(path, min_width=300):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, f"{path}: bad CRC in {kind}"
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert width >= min_width and height >= 100, f"{path}: {width}x{height}"
    raw = zlib.decompress(idat)
    # a drawn figure has many distinct byte values; a blank page has one or two
    assert len(set(raw[:: max(1, len(raw) // 200000)])) > 20, f"{path}: looks blank"


NUMBER = re.compile(r"^[-+.e]*[0-9][-+0-9.e]*$")


def svg_texts(root):
    """(x, y, anchor, font size, text) of every text element, in the page's coordinates."""
    out = []
    for e in root.iter():
        if not e.tag.endswith("text"):
            continue
        m = re.search(r"matrix\(([^)]*)\)", e.get("transform", ""))
        if not m:
            continue
        a = [float(v) for v in m.group(1).split()]
        out.append((a[4], a[5], e.get("text-anchor", "start"), float(e.get("font-size", "0")),
                    "".join(e.itertext())))
    return out


def check_layout(path, root):
    """Tick labels along an x axis must not run together (each a digit's width apart, at the
    0.636 em of DejaVu Sans's digits), and no legend box may cover a tick label (the svg
    device's legends once ran over the y labels)."""
    texts = svg_texts(root)
    rows = {}
    for x, y, anchor, size, t in texts:
        if anchor == "middle" and NUMBER.match(t):
            rows.setdefault(round(y, 1), []).append((x, size, t))
    def width(t, size):
        return sum(0.636 if c.isdigit() else 0.35 for c in t) * size
    for y, labels in rows.items():
        labels.sort()
        for (x0, s0, t0), (x1, s1, t1) in zip(labels, labels[1:]):
            room = x1 - x0 - 0.5 * (width(t0, s0) + width(t1, s1))
            assert room >= 0.6 * s0, f"{path}: tick labels {t0} and {t1} touch ({room:.1f} px apart)"
    for e in root.iter():
        if e.tag.split("}")[-1] != "polygon" or e.get("fill", "").upper() != "#FFFFFF":
            continue
        pts = [tuple(map(float, p.split(","))) for p in e.get("points").split()]
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        for x, y, anchor, size, t in texts:
            if NUMBER.match(t) and min(xs) < x < max(xs) and min(ys) < y < max(ys):
                raise AssertionError(f"{path}: a legend box covers the tick label {t}")


def check_svg(path, words=()):
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg"), f"{path}: root is {root.tag}"
    shapes = [e for e in root.iter() if e.tag.split("}")[-1] in ("polyline", "path", "polygon")]
    assert len(shapes) > 10, f"{path}: only {len(shapes)} shapes"
    text = "\n".join("".join(e.itertext()) for e in root.iter() if e.tag.endswith("text"))
    for w in words:
        assert w in text, f"{path}: '{w}' not found"
    check_layout(path, root)


def check_figure(base, words=()):
    check_svg(base + ".svg", words)
    check_png(base + ".png")


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k, v in r.items():
            assert v is not None and v != "", f"{path}: empty field {k} in {r}"
    return rows


def check_jsonl_matches(csv_path, jsonl_path):
    rows = read_rows(csv_path)
    lines = open(jsonl_path).read().splitlines()
    assert len(lines) == len(rows), f"{len(lines)} JSON lines but {len(rows)} CSV rows"
    for r, line in zip(rows, lines):
        j = json.loads(line)
        assert list(j) == list(r), "JSON keys differ from CSV columns"
        for k, v in r.items():
            if j[k] is None:
                assert v in ("nan", "inf", "-inf"), (k, v)
            elif isinstance(j[k], str):
                assert j[k] == v, (k, j[k], v)
            else:
                assert math.isclose(float(v), j[k], rel_tol=1e-12), (k, v, j[k])
    return rows


def make_problem(scratch, name="prob.h5", n=40, widths="6,10,10,1"):
    path = os.path.join(scratch, name)
    run(["features", "--data", "synthetic:d=6,r=2", "--n-train", str(n), "--n-test", "60",
         "--widths", widths, "-o", path])
    return path


# ---------------------------------------------------------------------------------------------

def case_penalties(scratch):
    out = os.path.join(scratch, "pen")
    p = run(["experiment", "penalties", "--out", out, "--num", "21", "--json"])
    summary = json.loads(p.stdout)
    slopes = summary["tail_slopes"]
    # the closed-form tails (docs/math.md): sq ~ v (slope 1), abs ~ v^(2/3)
    assert abs(slopes["sq"] - 1.0) < 0.06, slopes
    assert abs(slopes["abs"] - 2.0 / 3.0) < 0.06, slopes
    assert slopes["sq+abs"] < slopes["abs"] + 1e-9, slopes
    rows = read_rows(os.path.join(out, "penalties.csv"))
    assert len(rows) == 3 * 21
    for r in rows:
        v, w, prox = float(r["v"]), float(r["omega_tilde"]), float(r["prox"])
        assert 0.0 <= w <= v * v + 1e-12, r             # sub-quadratic, 0 at 0
        assert -1e-12 <= prox <= v + 1e-12, r            # 0 <= prox(v) <= v
        assert float(r["s1"]) * float(r["s2"]) == float(r["z"]) or \
            math.isclose(float(r["s1"]) * float(r["s2"]), float(r["z"]), rel_tol=1e-9), r
    check_figure(os.path.join(out, "penalties"), ["sq+abs", "Effective penalties"])
    # a custom list; a bad spec is refused with exit 2 and one line
    run(["experiment", "penalties", "--out", out, "--penalty=pow:p=1.5,scale=0.1",
         "--penalty", "zsq:scale=1e-4", "--num=5"])
    rows = read_rows(os.path.join(out, "penalties.csv"))
    assert {r["spec"] for r in rows} == {"pow:p=1.5,scale=0.1", "zsq:scale=1e-4"}
    bad = run(["experiment", "penalties", "--penalty", "cubic", "--out", out], expect=2)
    assert len(bad.stderr.strip().splitlines()) == 1 and "cubic" in bad.stderr
    run(["experiment", "nonsense"], expect=2)


def case_sweep(scratch):
    prob = make_problem(scratch)
    out = os.path.join(scratch, "sweep")
    p = run(["sweep", prob, "--out", out, "--families", "sq,abs", "--scales", "1e-2,1,auto",
             "--structures", "layer,full", "--max-iter", "3000", "--json"])
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    assert summary["rows"] == 1 + 2 * 3 * 2 and summary["new_rows"] == summary["rows"]
    rows = check_jsonl_matches(os.path.join(out, "sweep.csv"), os.path.join(out, "sweep.jsonl"))
    keys = [r["key"] for r in rows]
    assert len(set(keys)) == len(keys)
    base = rows[0]
    assert base["key"] == "baseline"
    for r in rows:
        assert r["status"] in ("solved", "max_iterations"), r
        assert float(r["constraint_residual"]) < 1e-6, r
        assert 0.0 <= float(r["test_error"]) <= 1.0
        for b in ("W1", "W2", "W3"):
            assert int(r["erank_" + b]) >= 0
        if r["structure"] == "full":
            # Theorem 1: every penalty gives the NTK min-norm interpolant
            assert math.isclose(float(r["test_rel_mse"]), float(base["test_rel_mse"]),
                                rel_tol=1e-5), (r["key"], r["test_rel_mse"], base["test_rel_mse"])
            assert all(int(r["erank_" + b]) == 1 for b in ("W1", "W2", "W3"))
        if r["structure"] == "layer":
            assert -1.0 <= float(r["align_label"]) <= 1.0
    auto = [r for r in rows if r["scale"] == "auto"]
    assert auto and all(float(r["gamma"]) > 0 for r in auto)
    check_figure(os.path.join(out, "sweep"), ["layer", "full", "auto: γ="])
    assert not [f for f in os.listdir(out) if f.endswith(".lock")], os.listdir(out)
    # a second run has nothing to do (and --opt=value works as --opt value)
    p = run(["sweep", prob, "--out=" + out, "--families=sq,abs", "--scales", "1e-2,1,auto",
             "--structures=layer,full", "--json"])
    assert json.loads(p.stdout.strip().splitlines()[-1])["new_rows"] == 0
    # bad input: exit 2, one line naming the problem
    bad = run(["sweep", os.path.join(scratch, "missing.h5"), "--out", out], expect=2)
    assert "missing.h5" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    run(["sweep", prob, "--families", "cubic"], expect=2)
    run(["sweep", prob, "--scales", "-1"], expect=2)
    run(["sweep", prob, "--structures", "banded"], expect=2)


def case_resume(scratch):
    prob = make_problem(scratch, "resume.h5", n=60, widths="6,16,16,1")
    grid = ["--families", "sq,abs,logsq", "--scales", "1e-3,1e-2,1e-1,1", "--structures",
            "layer,diagonal", "--max-iter", "4000"]
    ref = os.path.join(scratch, "ref")
    run(["sweep", prob, "--out", ref, "--quiet"] + grid)
    expected = read_rows(os.path.join(ref, "sweep.csv"))

    out = os.path.join(scratch, "interrupted")
    csv_path = os.path.join(out, "sweep.csv")
    proc = subprocess.Popen([ATF, "sweep", prob, "--out", out, "--quiet"] + grid,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:  # interrupt once a few rows are recorded
        if os.path.exists(csv_path) and len(open(csv_path).read().splitlines()) >= 4:
            break
        time.sleep(0.02)
    if proc.poll() is None:  # one writer per table: a second run on it stops at once
        second = run(["sweep", prob, "--out", out, "--quiet"] + grid, expect=2)
        assert "another atf run" in second.stderr, second.stderr
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        print("note: the sweep finished before the interrupt landed")
    else:
        assert proc.returncode == 130, (proc.returncode, err)
        assert "resume" in err, err
    partial = read_rows(csv_path)
    assert 3 <= len(partial) <= len(expected)
    assert not [f for f in os.listdir(out) if f.endswith(".lock")], "lock left after SIGINT"
    # simulate a crash in the middle of the next row as well
    with open(csv_path, "a") as f:
        f.write("layer|torn,layer,sq:sca")
    run(["sweep", prob, "--out", out, "--quiet"] + grid)
    rows = check_jsonl_matches(csv_path, os.path.join(out, "sweep.jsonl"))
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys)), "duplicated rows"
    assert sorted(keys) == sorted(r["key"] for r in expected), "lost or extra rows"
    assert rows[:len(partial)] == partial, "recorded rows changed"
    # the resumed sweep is the uninterrupted one, bit for bit: the rows after the stop start
    # from the same warm start (kept in OUT/warm-I.h5 across the stop), so every column but
    # the time is the same text; no warm start's file is left once every chain is done
    by_key = {r["key"]: r for r in expected}
    for r in rows:
        want = {k: v for k, v in by_key[r["key"]].items() if k != "seconds"}
        got = {k: v for k, v in r.items() if k != "seconds"}
        assert got == want, (r["key"], {k: (got[k], want[k]) for k in want if got[k] != want[k]})
    assert not [f for f in os.listdir(out) if f.startswith("warm-")], os.listdir(out)


def case_samples(scratch):
    out = os.path.join(scratch, "samples")
    args = ["experiment", "samples", "--data", "synthetic:d=6,r=2", "--ns", "20,40",
            "--seeds", "2", "--n-test", "80", "--hidden", "12,12", "--epochs", "3",
            "--out", out]
    p = run(args)
    assert "| n |" in p.stdout and "| 40 |" in p.stdout
    rows = check_jsonl_matches(os.path.join(out, "samples.csv"),
                               os.path.join(out, "samples.jsonl"))
    assert len(rows) == 2 * 2 * 3
    assert {r["method"] for r in rows} == {"ntk", "p16", "network"}
    for r in rows:
        assert 0.0 <= float(r["test_error"]) <= 1.0 and float(r["test_rel_mse"]) >= 0.0
        if r["method"] == "network":   # the default protocol: best of n/10 validation rows
            assert r["protocol"] == "fixed/best-val/val=%d" % (int(r["n"]) // 10), r
            assert 0 <= int(r["selected_epoch"]) <= 3 and r["trainer"].startswith("sgd:"), r
        else:
            assert float(r["train_residual"]) < 1e-6, r   # interpolation
    summary = read_rows(os.path.join(out, "samples_summary.csv"))
    assert len(summary) == 2 * 3
    for s in summary:
        mine = [float(r["test_rel_mse"]) for r in rows
                if r["n"] == s["n"] and r["method"] == s["method"]]
        assert int(s["runs"]) == 2
        assert math.isclose(float(s["test_rel_mse_mean"]), np.mean(mine), rel_tol=1e-5)
        assert math.isclose(float(s["test_rel_mse_std"]), np.std(mine, ddof=1), rel_tol=1e-4,
                            abs_tol=1e-9)
    check_figure(os.path.join(out, "samples"), ["problem (16)", "NTK"])
    before = open(os.path.join(out, "samples.csv")).read()
    p = run(args + ["--json"])
    assert open(os.path.join(out, "samples.csv")).read() == before   # resumed: nothing re-run
    assert json.loads(p.stdout)["rows"] == 12
    # the scale axis: one problem (16) model per scale, next to the NTK
    out2 = os.path.join(scratch, "scales")
    p = run(["experiment", "samples", "--data", "synthetic:d=6,r=2", "--ns", "20,40", "--seeds",
             "1", "--n-test", "80", "--hidden", "12,12", "--no-mlp", "--penalty", "zsq",
             "--scales", "1e-3,1,auto", "--out", out2, "--json"])
    s = json.loads(p.stdout)
    assert s["rows"] == 2 * 4 and "mlp_error" not in s
    rows = read_rows(os.path.join(out2, "samples.csv"))
    assert {r["method"] for r in rows} == {"ntk", "p16:zsq:scale=1e-3",
                                           "p16:zsq:scale=1", "p16:zsq:scale=auto"}
    for r in rows:
        if r["method"] == "p16:zsq:scale=1e-3":
            assert r["penalty"] == "zsq:scale=1e-3"
        if r["method"] == "p16:zsq:scale=auto":
            assert r["penalty"].startswith("zsq:scale=") and "auto" not in r["penalty"]
    check_figure(os.path.join(out2, "samples"), ["zsq:scale=auto"])
    run(["experiment", "samples", "--scales", "0,1"], expect=2)
    run(["experiment", "samples", "--ns", "1"], expect=2)
    run(["experiment", "samples", "--penalty", "bogus:scale=auto"], expect=2)
    run(["experiment", "samples", "--data", os.path.join(scratch, "none.h5"), "--ns", "10",
         "--seeds", "1", "--out", os.path.join(scratch, "s2")], expect=2)


def labelled_data(path, n=100, d=5, classes=3, seed=0):
    """A small three-class data set file (/X, one-hot /Y, /labels): rows kept in order, the
    first for training and the next for testing."""
    import h5py
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(classes, d)) * 1.5
    labels = rng.integers(0, classes, size=n)
    X = centers[labels] + rng.normal(size=(n, d))
    with h5py.File(path, "w") as f:
        f["X"] = X
        f["Y"] = np.eye(classes)[labels]
        f["labels"] = labels.astype(np.int32)


def case_samples_models(scratch):
    """Every model of the samples experiment on one θ0, the protocols and their labels."""
    data = os.path.join(scratch, "three.h5")
    labelled_data(data)
    out = os.path.join(scratch, "models")
    args = ["experiment", "samples", "--data", data, "--ns", "20,40", "--seeds", "2",
            "--n-test", "30", "--hidden", "24", "--models",
            "ntk,p16,p16-xent,ntk-sgd,factorized-sgd,network", "--penalty", "balanced+balanced",
            "--sgd-loss", "xent", "--epochs", "4", "--batch", "10", "--lr", "0.05",
            "--out", out]
    p = run(args)
    assert "| n |" in p.stdout and "p16-xent error" in p.stdout and "test xent" in p.stdout
    rows = check_jsonl_matches(os.path.join(out, "samples.csv"),
                               os.path.join(out, "samples.jsonl"))
    models = {"ntk", "p16", "p16-xent", "ntk-sgd", "factorized-sgd", "network"}
    assert len(rows) == 2 * 2 * 6 and {r["method"] for r in rows} == models
    for r in rows:
        n, m = int(r["n"]), r["method"]
        assert 0.0 <= float(r["test_error"]) <= 1.0, r
        assert math.isfinite(float(r["test_xent"])) and float(r["test_xent"]) > 0, r
        if m in ("ntk", "p16"):
            assert r["loss"] == "interpolate" and float(r["train_residual"]) < 1e-6, r
        if m == "p16-xent":
            assert r["loss"] == "xent:lambda=1" and r["penalty"] == "balanced+balanced", r
        if m in ("ntk-sgd", "factorized-sgd", "network"):
            assert r["loss"] == "xent" and r["protocol"] == "fixed/best-val/val=%d" % (n // 10)
            assert r["trainer"] == "sgd:lr=0.05,batch=10,epochs=4,cosine", r
            assert 0 <= int(r["selected_epoch"]) <= 4 and int(r["iterations"]) == 4, r
        else:
            assert int(r["selected_epoch"]) == -1 and r["protocol"] == "-", r
        if m in ("ntk-sgd", "factorized-sgd"):   # compared with problem (16)'s xent solution
            assert -1.0 <= float(r["cos_p16"]) <= 1.0, r
        if m == "factorized-sgd":
            assert float(r["omega_balanced"]) >= 0 and 0 <= float(r["drift"]) < math.inf, r
        else:
            assert r["omega_balanced"] == "nan", r
    summary = read_rows(os.path.join(out, "samples_summary.csv"))
    for s in summary:
        mine = [float(r["test_xent"]) for r in rows
                if r["n"] == s["n"] and r["method"] == s["method"]]
        assert math.isclose(float(s["test_xent_mean"]), np.mean(mine), rel_tol=1e-5), s
    check_figure(os.path.join(out, "samples"), ["cross-entropy", "factorised linearisation"])
    before = open(os.path.join(out, "samples.csv")).read()
    run(args)
    assert open(os.path.join(out, "samples.csv")).read() == before   # resumed: nothing re-run
    p = run(args[:-2] + ["--lr", "0.01", "--out", out], expect=2)   # another trainer
    assert "trainer" in p.stderr and "another output directory" in p.stderr, p.stderr
    # the authors' protocol: a new subset of the pool every epoch, the best test epoch
    out2 = os.path.join(scratch, "resample")
    run(["experiment", "samples", "--data", data, "--ns", "20", "--seeds", "1", "--n-test", "30",
         "--hidden", "6", "--models", "network,factorized-sgd", "--sgd-loss", "xent",
         "--epochs", "3", "--resample-each-epoch", "--pool", "70", "--stop", "test-selected",
         "--patience", "1", "--out", out2])
    for r in read_rows(os.path.join(out2, "samples.csv")):
        assert r["protocol"] == "resample-each-epoch/test-selected/val=0", r
        assert 1 <= int(r["iterations"]) <= 3, r
    # a pool fixes the test set: with fixed sampling the n examples are the pool's first n, so
    # the NTK interpolant (which sees only those) is the same under both samplings
    ntk = []
    for sampling in ("fixed", "resample-each-epoch"):
        o = os.path.join(scratch, "pool-" + sampling)
        run(["experiment", "samples", "--data", data, "--ns", "20", "--seeds", "1", "--n-test",
             "30", "--hidden", "24", "--models", "ntk,network", "--epochs", "1", "--sampling",
             sampling, "--pool", "70", "--out", o])
        ntk.append([r for r in read_rows(os.path.join(o, "samples.csv")) if r["method"] == "ntk"])
    assert ntk[0][0]["test_error"] == ntk[1][0]["test_error"], ntk
    assert ntk[0][0]["test_rel_mse"] == ntk[1][0]["test_rel_mse"], ntk
    run(["experiment", "samples", "--models", "ntk,bogus"], expect=2)
    run(["experiment", "samples", "--models", "ntk,ntk"], expect=2)
    run(["experiment", "samples", "--stop", "sometime"], expect=2)
    run(["experiment", "samples", "--data", data, "--ns", "20", "--resample-each-epoch",
         "--pool", "10", "--out", os.path.join(scratch, "s3")], expect=2)


def table_without_seconds(path):
    """A samples table's rows, each without its wall time (the one column a re-run changes)."""
    return [{k: v for k, v in r.items() if k != "seconds"} for r in read_rows(path)]


def case_samples_path(scratch):
    """The λ path of the cross-entropy models, ntk-xent, p16-xent's own penalties, skipped
    interpolation, the network's kernel alignment; and resume: the table of a run interrupted
    between any two rows is completed to the uninterrupted table bit for bit but the wall times,
    cosines and alignments included (they compare with a solution of an earlier row: read back
    from its file, or solved again); a real Ctrl-C at every other row count."""
    data = os.path.join(scratch, "three.h5")
    labelled_data(data, n=160)
    args = ["experiment", "samples", "--data", data, "--ns", "20,60", "--seeds", "1",
            "--n-test", "40", "--hidden", "12", "--bias", "--models",
            "ntk,ntk-xent,p16,p16-xent,ntk-sgd,factorized-sgd,network",
            "--penalty", "balanced+balanced", "--xent-penalties", "balanced+balanced;sq:scale=0.1",
            "--xent-lambdas", "0.1,1,10", "--interpolate-max-n", "auto", "--align-examples", "20",
            "--sgd-loss", "xent", "--epochs", "4", "--batch", "10", "--lr", "0.05"]
    ref = os.path.join(scratch, "ref")
    run(args + ["--out", ref])
    rows = read_rows(os.path.join(ref, "samples.csv"))
    assert len(rows) == 2 * 8, len(rows)
    for r in rows:
        n, m = int(r["n"]), r["method"]
        interp = n * 3 <= 5 * 12 + 12 + 12 * 3 + 3  # M within the 111 parameters of 5-12-3
        if m in ("ntk", "p16"):
            assert r["status"] == ("solved" if interp else "skipped"), r
        if m in ("ntk-xent", "p16-xent:balanced+balanced", "p16-xent:sq:scale=0.1"):
            assert r["lambda_path"] == "10,1,0.1" and float(r["lambda"]) in (0.1, 1, 10), r
            assert r["loss"] == "xent:lambda=" + r["lambda"], r
            scores = dict(x.split(":") for x in r["path_val_xent"].split(";"))
            assert set(scores) == {"10", "1", "0.1"}, r
            assert float(scores[r["lambda"]]) == min(map(float, scores.values())), r
            assert math.isclose(float(r["val_xent"]), float(scores[r["lambda"]]), rel_tol=1e-3)
            assert r["penalty"] == ("fixed" if m == "ntk-xent" else m.split(":", 1)[1]), r
        if m in ("ntk-sgd", "factorized-sgd"):
            assert -1 <= float(r["cos_p16"]) <= 1, r
        if m == "network":
            for col in ("align_k0", "align_adapted"):
                per_layer = [float(x) for x in r[col].split(";")]
                assert len(per_layer) == 2 and all(-1 <= x <= 1 for x in per_layer), r
            assert 0 < float(r["align_k0_all"]) <= 1 and 0 < float(r["align_adapted_all"]) <= 1
    expected = table_without_seconds(os.path.join(ref, "samples.csv"))
    # every point is complete: the solutions later rows compared with are gone again
    assert os.listdir(os.path.join(ref, "solutions")) == []
    # a table cut after any row (no solution file: the resumed run solves the one it needs
    # again), completed by the same command: the uninterrupted table
    lines = open(os.path.join(ref, "samples.csv")).read().splitlines(keepends=True)
    jsonl = open(os.path.join(ref, "samples.jsonl")).read().splitlines(keepends=True)
    for k in range(1, len(rows)):
        out = os.path.join(scratch, f"cut{k}")
        os.makedirs(out)
        with open(os.path.join(out, "samples.csv"), "w") as f:
            f.writelines(lines[:k + 1])
        with open(os.path.join(out, "samples.jsonl"), "w") as f:
            f.writelines(jsonl[:k])
        run(args + ["--out", out])
        got = table_without_seconds(os.path.join(out, "samples.csv"))
        assert got == expected, f"resumed after row {k}: the table differs: " + str(
            [(a["key"], {c: (a[c], b[c]) for c in a if a[c] != b[c]})
             for a, b in zip(got, expected) if a != b][:3])
    # a real Ctrl-C once the table has k rows, then the same command: the same table (a stop
    # after a point's first p16 or p16-xent row leaves its solution file, which is read back)
    read_back = 0
    for k in range(1, len(rows), 2):
        out = os.path.join(scratch, f"sigint{k}")
        proc = subprocess.Popen([ATF] + args + ["--out", out], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        table = os.path.join(out, "samples.csv")
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            if os.path.exists(table) and len(open(table).read().splitlines()) >= k + 1:
                break
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
        assert proc.returncode in (0, 130), proc.returncode
        sol = os.path.join(out, "solutions")
        read_back += os.path.isdir(sol) and bool(os.listdir(sol))
        run(args + ["--out", out])
        assert table_without_seconds(table) == expected, f"Ctrl-C after {k} rows"
    assert read_back, "no interrupted run left a solution file to read back"
    # the report of the same table: sample complexity (against a recomputation from the rows)
    # and the network's alignments
    run(args + ["--error-thresholds", "0.35,0.2", "--out", ref])
    comp = read_rows(os.path.join(ref, "samples_complexity.csv"))
    for c in comp:
        mine = [r for r in rows if r["method"] == c["method"] and r["status"] != "skipped"]
        ns = sorted({int(r["n"]) for r in mine})
        err = [float(next(r["test_error"] for r in mine if int(r["n"]) == n)) for n in ns]
        tau, want = float(c["threshold"]), float("nan")
        for i, e in enumerate(err):
            if e <= tau:
                want = ns[0] if i == 0 else math.exp(
                    math.log(ns[i - 1]) + (err[i - 1] - tau) / (err[i - 1] - e) *
                    (math.log(ns[i]) - math.log(ns[i - 1])))
                break
        got = float(c["n_star_mean_curve"])
        assert (math.isnan(want) and math.isnan(got)) or math.isclose(got, want, rel_tol=1e-5), c
        assert c["mean_curve"] == ("below" if err and err[0] <= tau else
                                   "not reached" if math.isnan(want) else "interpolated"), c
    ratios = read_rows(os.path.join(ref, "samples_ratios.csv"))
    assert {(r["fixed"], r["adaptive"]) for r in ratios} >= {("ntk-xent", "network"),
                                                             ("ntk-sgd", "factorized-sgd")}

    # the interval of the mean curves' ratio: exact where both cross, a bound where one is
    # short of the level within the sizes run (its n* beyond the largest n), open otherwise
    def n_star_interval(method, tau):
        c = next(c for c in comp if c["method"] == method and float(c["threshold"]) == tau)
        largest = max(int(r["n"]) for r in rows if r["method"] == method and
                      r["status"] != "skipped")
        n = float(c["n_star_mean_curve"])
        return {"below": (0.0, n), "interpolated": (n, n),
                "not reached": (largest, math.inf)}[c["mean_curve"]]
    bounded = 0
    for r in ratios:
        (flo, fhi), (alo, ahi) = (n_star_interval(r[k], float(r["threshold"]))
                                  for k in ("fixed", "adaptive"))
        want = (flo / ahi if 0 < ahi < math.inf else 0.0, fhi / alo if alo > 0 else math.inf)
        got = (float(r["ratio_mean_lo"]), float(r["ratio_mean_hi"]))
        assert all(math.isclose(g, w, rel_tol=1e-5) or g == w for g, w in zip(got, want)), r
        bounded += 0 < got[0] < got[1] or got[0] < got[1] < math.inf
    assert bounded, "no censored ratio in the reference table: the bounds are untested"
    align = read_rows(os.path.join(ref, "samples_alignment.csv"))
    assert [a["layer"] for a in align] == ["1", "2", "all"] * 2, align
    for base in ("samples_complexity", "samples_alignment"):
        check_figure(os.path.join(ref, base))
    # another size with another trainer joins the table (only this grid's rows are checked
    # against this run's settings); --report-only then summarises every size, running nothing
    more = list(args)
    more[more.index("--ns") + 1] = "100"
    more[more.index("--epochs") + 1] = "3"
    more[more.index("--models") + 1] = "ntk-xent,network"
    run(more + ["--out", ref])
    before = open(os.path.join(ref, "samples.csv")).read()
    run(args + ["--report-only", "--out", ref])
    assert open(os.path.join(ref, "samples.csv")).read() == before
    summary = read_rows(os.path.join(ref, "samples_summary.csv"))
    assert sorted({int(r["n"]) for r in summary}) == [20, 60, 100], summary
    # every status counted, skipped rows included (n = 60 does not interpolate)
    assert [r["statuses"] for r in summary if r["n"] == "60" and r["method"] == "ntk"] == \
        ["skipped 1"], summary
    assert [r["statuses"] for r in summary if r["n"] == "20" and r["method"] == "network"] == \
        ["trained 1"], summary
    assert [r["runs"] for r in summary if r["n"] == "100" and r["method"] == "network"] == ["1"]
    assert [r["runs"] for r in summary if r["n"] == "100" and r["method"] == "ntk-sgd"] == ["0"]
    # per example: λ = value × (n − v), v = n/10 validation rows
    out = os.path.join(scratch, "per_example")
    run(["experiment", "samples", "--data", data, "--ns", "40", "--seeds", "1", "--n-test", "40",
         "--hidden", "12", "--models", "ntk-xent", "--xent-lambdas", "0.01,0.1",
         "--xent-lambdas-per-example", "--out", out])
    (r,) = read_rows(os.path.join(out, "samples.csv"))
    assert r["lambda_path"] == "per-example:0.1,0.01", r
    assert float(r["lambda"]) in (0.1 * 36, 0.01 * 36), r
    assert set(x.split(":")[0] for x in r["path_val_xent"].split(";")) == {"3.6", "0.36"}, r
    # path patience 1: the path stops at the first λ that does worse than the best
    out = os.path.join(scratch, "patience")
    run(["experiment", "samples", "--data", data, "--ns", "60", "--seeds", "1", "--n-test", "40",
         "--hidden", "12", "--models", "ntk-xent", "--xent-lambdas", "1e-5,1e-4,1e-3,1e-2,0.1,1",
         "--xent-lambdas-per-example", "--xent-path-patience", "1", "--out", out])
    (r,) = read_rows(os.path.join(out, "samples.csv"))
    assert r["lambda_path"].endswith(";patience=1"), r
    scores = [float(x.split(":")[1]) for x in r["path_val_xent"].split(";")]
    best = scores.index(min(scores))
    assert len(scores) - 1 - best == (1 if len(scores) < 6 else len(scores) - 1 - best), scores
    assert all(scores[i + 1] < scores[i] for i in range(best)), scores
    # another λ grid on the same table is refused
    other = list(args)
    other[other.index("--xent-lambdas") + 1] = "1,10"
    p = run(other + ["--out", ref], expect=2)
    assert "lambda_path" in p.stderr, p.stderr


def interrupt_when(args, ready, timeout=120):
    """Run atf with args, send it a Ctrl-C as soon as ready() (polled every millisecond) and
    wait for it: it ends with exit 0 (done before the signal landed) or 130."""
    proc = subprocess.Popen([ATF] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None and not ready():
        time.sleep(0.001)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=timeout)
    assert proc.returncode in (0, 130), proc.returncode


def case_samples_path_resume(scratch):
    """A λ path interrupted between two of its λ resumes after the last one solved (its
    solution read back from OUT/solutions/…_lambda=KEY.h5) and gives the uninterrupted table bit
    for bit; the files are gone once the row is recorded."""
    data = os.path.join(scratch, "hard.h5")
    labelled_data(data, n=700, d=5)
    args = ["experiment", "samples", "--data", data, "--ns", "600", "--seeds", "1",
            "--n-test", "100", "--hidden", "48,48", "--bias", "--models", "ntk-xent,p16-xent",
            "--xent-penalties", "balanced+balanced", "--xent-lambdas", "0.1,0.01,0.001,0.0001",
            "--xent-lambdas-per-example"]
    check_path_resume(scratch, args, range(1, 7))


def check_path_resume(scratch, args, js):
    """Run the samples command args (two models on a λ path) once through, then for each j in
    js with a Ctrl-C once the j-th λ of the run is solved and again to the end: the same table
    as the uninterrupted run, no λ file left, and at least one interrupted path read back."""
    def steps(out):
        sol = os.path.join(out, "solutions")
        return [f for f in os.listdir(sol) if "_lambda=" in f] if os.path.isdir(sol) else []
    ref = os.path.join(scratch, "path_ref")
    run(args + ["--out", ref])
    expected = table_without_seconds(os.path.join(ref, "samples.csv"))
    assert len(expected) == 2 and steps(ref) == [], (expected, steps(ref))
    read_back = 0
    for j in js:
        out = os.path.join(scratch, f"path_sigint{j}")
        seen = set()

        def solved_j():
            seen.update(steps(out))
            return len(seen) >= j
        interrupt_when(args + ["--out", out], solved_j)
        left = steps(out)
        read_back += bool(left)
        run(args + ["--out", out])
        assert table_without_seconds(os.path.join(out, "samples.csv")) == expected, \
            f"Ctrl-C after {j} λ ({left} left): the table differs"
        assert steps(out) == [], steps(out)
    assert read_back, "no interrupted path left a solved λ to read back"


def samples_admm_resume(scratch, data):
    """Problem (16) interpolation by ADMM with its projection by PCG (--linsys pcg): a
    Ctrl-C in the solve leaves its checkpoint and the kept factor (…p16.precond.h5); the re-run
    reads both and gives the uninterrupted table bit for bit; both files go with the answer."""
    args = ["experiment", "samples", "--data", data, "--ns", "300", "--seeds", "1",
            "--n-test", "100", "--hidden", "48,48", "--bias", "--models", "p16",
            "--penalty", "balanced+balanced", "--linsys", "pcg"]

    def files(out, tail):
        sol = os.path.join(out, "solutions")
        return sorted(f for f in os.listdir(sol) if f.endswith(tail)) \
            if os.path.isdir(sol) else []
    ref = os.path.join(scratch, "admm_ref")
    run(args + ["--out", ref, "--checkpoint-every", "-1"])
    expected = table_without_seconds(os.path.join(ref, "samples.csv"))
    assert [r["method"] for r in expected] == ["p16"] and \
        expected[0]["status"] == "solved", expected
    resumed = 0
    for k in range(3):  # the state written at the first, third, fifth iteration allowed
        out = os.path.join(scratch, f"admm_sigint{k}")
        seen = []

        def in_solve():
            now = files(out, ".partial.h5")
            if now and files(out, ".precond.h5"):
                seen.append(1)
            return len(seen) > 2 * k
        interrupt_when(args + ["--out", out, "--checkpoint-every", "0"], in_solve)
        left = files(out, ".partial.h5") + files(out, ".precond.h5")
        resumed += len(left) == 2
        run(args + ["--out", out, "--checkpoint-every", "0"])
        assert table_without_seconds(os.path.join(out, "samples.csv")) == expected, \
            f"Ctrl-C in the ADMM solve ({left} left): the table differs"
        assert files(out, ".h5") == [], files(out, ".h5")
    print(f"{resumed} of 3 interrupted ADMM runs resumed from a checkpoint and a kept factor")
    assert resumed, "no interrupted ADMM run left a checkpoint and a factor"


def case_samples_checkpoint_resume(scratch):
    """A λ path interrupted in the middle of a solve goes on from the solve's checkpoint
    (OUT/solutions/…_lambda=KEY.partial.h5, written at every Newton step allowed with
    --checkpoint-every 0) and gives the table of the uninterrupted run without checkpoints, bit
    for bit; the checkpoints are gone once their λ is solved; a damaged or foreign checkpoint
    is refused with its file named."""
    data = os.path.join(scratch, "hard.h5")
    if not os.path.exists(data):
        labelled_data(data, n=700, d=5)
    args = ["experiment", "samples", "--data", data, "--ns", "600", "--seeds", "1",
            "--n-test", "100", "--hidden", "48,48", "--bias", "--models", "ntk-xent,p16-xent",
            "--xent-penalties", "balanced+balanced", "--xent-lambdas", "0.1,0.01,0.001,0.0001",
            "--xent-lambdas-per-example"]
    ref = os.path.join(scratch, "cp_ref")
    run(args + ["--out", ref, "--checkpoint-every", "-1"])
    expected = table_without_seconds(os.path.join(ref, "samples.csv"))

    def partials(out):
        sol = os.path.join(out, "solutions")
        return sorted(f for f in os.listdir(sol) if f.endswith(".partial.h5")) \
            if os.path.isdir(sol) else []
    resumed = 0
    for j in range(1, 6):  # a Ctrl-C once the j-th solve has left a checkpoint
        out = os.path.join(scratch, f"cp_sigint{j}")
        seen = set()

        def in_jth_solve():
            now = partials(out)
            seen.update(now)
            return len(seen) >= j and bool(now)
        interrupt_when(args + ["--out", out, "--checkpoint-every", "0"], in_jth_solve)
        left = partials(out)
        resumed += bool(left)
        run(args + ["--out", out, "--checkpoint-every", "0"])
        assert table_without_seconds(os.path.join(out, "samples.csv")) == expected, \
            f"Ctrl-C in a solve ({left} left): the table differs"
        assert partials(out) == [], partials(out)
    print(f"{resumed} of 5 interrupted runs resumed from a checkpoint")
    assert resumed, "no interrupted run left a checkpoint to resume from"
    samples_admm_resume(scratch, data)
    # one λ without a path: its checkpoints go too once it is solved
    single = [a for a in args if a not in ("--xent-lambdas-per-example",)]
    at = single.index("--xent-lambdas")
    single[at:at + 2] = ["--xent-lambda", "5"]
    out = os.path.join(scratch, "cp_single")
    log = os.path.join(scratch, "solver.log")
    run(single + ["--out", out, "--checkpoint-every", "0", "--solver-log", log])
    assert len(read_rows(os.path.join(out, "samples.csv"))) == 2 and partials(out) == [], \
        partials(out)
    # --solver-log: each solve's iteration table under a line naming it, σ in the last column of
    # newton's; p16-xent's (balanced+balanced, xent, a cold start) opens with the factored
    # method's table (its phase in the second column), then newton's
    with open(log) as f:
        text = f.read()
    heads = [line for line in text.splitlines() if line.startswith("== ")]
    assert heads == ["== n=600 seed=1 ntk-xent, lambda 5",
                     "== n=600 seed=1 p16-xent, lambda 5"], heads
    tables = text.split("\n== ")
    assert all("pg res" in t and t.splitlines()[-1].split()[0] == "atf" for t in tables), text
    rows = [line.split() for line in text.splitlines() if line.strip()[:1].isdigit()]
    newton_rows = [r for r in rows if len(r) == 10]
    factored_rows = [r for r in rows if len(r) == 8 and r[1] in ("lbfgs", "newton")]
    assert len(newton_rows) >= 4 and all(float(r[-1]) >= 0 for r in newton_rows) and \
        factored_rows and len(newton_rows) + len(factored_rows) == len(rows), rows
    assert "atf factored:" in tables[1] and "atf factored:" not in tables[0], text
    p = run(single + ["--out", os.path.join(scratch, "cp_nolog"), "--solver-log",
                      os.path.join(scratch, "no", "such", "dir", "solver.log")], expect=1)
    assert "--solver-log" in p.stderr and "no/such/dir" in p.stderr, p.stderr
    # a checkpoint that is not this solve's, and one that is not a checkpoint at all
    out = os.path.join(scratch, "cp_bad")
    os.makedirs(os.path.join(out, "solutions"))
    first = os.path.join(out, "solutions", "n=600_seed=1_ntk-xent_lambda=54.partial.h5")
    import h5py
    with h5py.File(first, "w") as f:
        f.attrs["format"] = "atf-checkpoint"
        f.attrs["version"] = 1
        f.attrs["key"] = "newton state 1; another problem"
        f["state"] = np.ones(10)
    p = run(args + ["--out", out], expect=2)
    assert first in p.stderr and "another solve" in p.stderr, p.stderr
    with open(first, "wb") as f:
        f.write(b"not hdf5 at all")
    p = run(args + ["--out", out], expect=2)
    assert first in p.stderr, p.stderr


def first_crossing(ns, values, tau):
    """The n at which a curve first reaches tau (log n interpolated), as the report defines it:
    ("below", n0) when it starts there, ("not reached", nan) when it never does."""
    prev = None
    for n, v in zip(ns, values):
        if v <= tau:
            if prev is None:
                return "below", n
            t = (prev[1] - tau) / (prev[1] - v)
            return "interpolated", math.exp(math.log(prev[0]) + t * (math.log(n) - math.log(prev[0])))
        prev = (n, v)
    return "not reached", float("nan")


def case_samples_ridge(scratch):
    """The squared-loss models: ntk-ridge at a tiny λ is the NTK interpolant (and not at a large
    one); a λ path keeps the λ of the lowest validation MSE; a table written without the path's
    columns takes them, its earlier rows unchanged, and later runs without them go on; the
    sample complexity of a regression task is on levels of the relative test MSE."""
    base = ["experiment", "samples", "--data", "synthetic:d=6,r=2,noise=0.5", "--ns", "40,80",
            "--seeds", "2", "--n-test", "200", "--hidden", "16,16", "--epochs", "5"]
    # kernel ridge on the initial tangent features at λ → 0: the min-norm interpolant
    for lam, close in (("1e-6", True), ("1000", False)):
        out = os.path.join(scratch, "tiny" + lam)
        run(base + ["--models", "ntk,ntk-ridge", "--ridge-lambda", lam, "--out", out])
        rows = read_rows(os.path.join(out, "samples.csv"))
        ntk = {(r["n"], r["seed"]): float(r["test_rel_mse"]) for r in rows if r["method"] == "ntk"}
        ridge = [r for r in rows if r["method"] == "ntk-ridge"]
        assert len(ridge) == 4 and len(ntk) == 4, rows
        for r in ridge:
            assert r["status"] == "solved" and r["penalty"] == "fixed", r
            assert r["loss"] == "squared:lambda=%g" % float(lam), r
            same = math.isclose(float(r["test_rel_mse"]), ntk[r["n"], r["seed"]], rel_tol=1e-4)
            assert same == close, (lam, r, ntk)
    # a table of the interpolants, then the path's models into it: it takes their columns
    out = os.path.join(scratch, "study")
    csv_path, jsonl = os.path.join(out, "samples.csv"), os.path.join(out, "samples.jsonl")
    interp = base + ["--models", "ntk,p16,network", "--out", out]
    run(interp)
    plain = read_rows(csv_path)
    assert "lambda" not in plain[0] and len(plain) == 12
    grid = ["--ridge-lambdas", "1,0.1,0.01,0.001,0.0001", "--ridge-lambdas-per-example"]
    ridge_run = base + ["--models", "ntk-ridge,p16-ridge"] + grid + ["--out", out]
    run(ridge_run)
    rows = check_jsonl_matches(csv_path, jsonl)
    assert len(rows) == 20, len(rows)
    by_key = {r["key"]: r for r in rows}
    for old in plain:   # the earlier rows keep every value; the new columns are empty
        new = by_key[old["key"]]
        assert all(new[c] == v for c, v in old.items()), (old, new)
        assert new["lambda"] == "nan" and new["lambda_path"] == "-", new
        assert new["val_rel_mse"] == "nan" and new["path_val_rel_mse"] == "-", new
    for r in (r for r in rows if "ridge" in r["method"]):
        assert r["status"] == "solved" and r["lambda_path"] == "per-example:1,0.1,0.01,0.001,0.0001"
        path = [(float(k), float(v)) for k, v in
                (x.split(":") for x in r["path_val_rel_mse"].split(";"))]
        assert len(path) == 5, r   # no patience: every λ
        fitted = int(r["n"]) - int(r["n"]) // 10
        assert [k for k, _ in path] == [path_lambda(v * fitted) for v in (1, 0.1, 0.01, 0.001,
                                                                           0.0001)], (path, r)
        best = min(path, key=lambda kv: kv[1])   # ties: the larger λ, met first
        assert math.isclose(float(r["lambda"]), best[0], rel_tol=1e-12), (r, best)
        assert math.isclose(float(r["val_rel_mse"]), best[1], rel_tol=1e-3), (r, best)
        assert r["loss"] == "squared:lambda=%g" % float(r["lambda"]), r
        assert (r["penalty"] == "fixed") == (r["method"] == "ntk-ridge"), r
    # the interpolants' run again: nothing to do, nothing changed; a model without the path's
    # columns joins the wider table (its rows get them empty)
    before = open(csv_path).read()
    run(interp)
    assert open(csv_path).read() == before
    run(base + ["--models", "ntk-sgd", "--lr", "0.001", "--out", out])
    rows = check_jsonl_matches(csv_path, jsonl)
    sgd = [r for r in rows if r["method"] == "ntk-sgd"]
    assert len(sgd) == 4 and all(r["lambda"] == "nan" and r["path_val_rel_mse"] == "-"
                                 for r in sgd), sgd
    # another grid for the path's models on this table is refused
    other = list(ridge_run)
    other[other.index("--ridge-lambdas") + 1] = "1,0.1"
    p = run(other, expect=2)
    assert "lambda_path" in p.stderr, p.stderr
    # sample complexity on levels of the relative test MSE (a regression task), with ratios
    # for the new models, checked against the mean curves of the rows
    models = "ntk,p16,network,ntk-ridge,p16-ridge"
    levels = [1.6, 1.2]
    p = run(base + ["--models", models] + grid + ["--error-thresholds", "1.6,1.2",
                                                  "--report-only", "--out", out])
    assert "relative test MSE reaches the level" in p.stdout, p.stdout
    comp = read_rows(os.path.join(out, "samples_complexity.csv"))
    for m in models.split(","):
        curve = [np.mean([float(r["test_rel_mse"]) for r in rows
                          if r["method"] == m and int(r["n"]) == n]) for n in (40, 80)]
        for tau in levels:
            (c,) = [c for c in comp if c["method"] == m and float(c["threshold"]) == tau]
            how, want = first_crossing((40, 80), curve, tau)
            assert c["mean_curve"] == how, (m, tau, c, curve)
            if how != "not reached":
                assert math.isclose(float(c["n_star_mean_curve"]), want, rel_tol=1e-4), (c, want)
    pairs = {(r["fixed"], r["adaptive"]) for r in read_rows(os.path.join(out,
                                                                         "samples_ratios.csv"))}
    for f in ("ntk", "ntk-ridge"):
        for a in ("p16", "p16-ridge", "network"):
            assert (f, a) in pairs, (f, a, pairs)
    assert ("ntk-ridge", "ntk") not in pairs and ("p16", "p16-ridge") not in pairs
    check_figure(os.path.join(out, "samples_complexity"), ["relative test MSE"])
    # levels of the error are in (0, 1); of the relative MSE any positive number
    run(base + ["--models", models, "--error-thresholds", "1.5", "--threshold-metric", "error",
                "--report-only", "--out", out], expect=2)
    run(base + ["--error-thresholds", "0,1", "--report-only", "--out", out], expect=2)


def path_lambda(x):
    """A λ as the path computes it: the per-example value times the fitted examples, to 14
    significant digits."""
    return float("%.14g" % x)


def case_samples_ridge_resume(scratch):
    """A squared-loss λ path interrupted between two of its λ resumes after the last one solved
    and gives the uninterrupted table bit for bit."""
    args = ["experiment", "samples", "--data", "synthetic:d=8,r=2,noise=0.5", "--ns", "400",
            "--seeds", "1", "--n-test", "100", "--hidden", "48,48", "--models",
            "ntk-ridge,p16-ridge", "--ridge-lambdas", "0.1,0.01,0.001,0.0001",
            "--ridge-lambdas-per-example"]
    check_path_resume(scratch, args, (1, 3, 6))

def case_demo(scratch):
    outs = []
    for k in range(2):
        out = os.path.join(scratch, f"demo{k}")
        shutil.rmtree(out, ignore_errors=True)
        p = run(["demo", "--out", out, "--ns", "30,60", "--seeds", "1", "--epochs", "2"])
        assert "| 60 |" in p.stdout
        check_figure(os.path.join(out, "samples"), ["atf demo"])
        outs.append(read_rows(os.path.join(out, "samples.csv")))
    assert len(outs[0]) == 2 * 3
    for a, b in zip(*outs):  # deterministic for its seed (timings aside)
        for k in a:
            if k != "seconds":
                assert a[k] == b[k], (k, a[k], b[k])
    run(["demo", "--bogus"], expect=2)


def make_two_class_data(path, n=90, d=20, seed=5):
    import h5py
    rng = np.random.default_rng(seed)
    labels = np.where(np.arange(n) % 2 == 0, 2, 3)
    centers = {2: rng.normal(size=d), 3: rng.normal(size=d)}
    X = np.stack([centers[c] + 1.5 * rng.normal(size=d) for c in labels])
    with h5py.File(path, "w") as f:
        f["X"] = X
        f["Y"] = np.where(labels == 2, -1.0, 1.0)[:, None]
        f["labels"] = labels.astype(np.int32)


def case_alignment(scratch):
    data = os.path.join(scratch, "two.h5")
    make_two_class_data(data)
    out = os.path.join(scratch, "align")
    common = ["experiment", "alignment", "--data", data, "--classes", "2,3", "--n-train", "50",
              "--n-test", "40", "--widths", "20,16,16,1", "--epochs", "5", "--max-iter", "3000",
              "--out", out]
    p = run(common + ["--path-points", "1", "--json"])
    s = json.loads(p.stdout.strip().splitlines()[-1])
    assert 0.0 <= s["teacher_accuracy"] <= 1.0
    for k in ("y_", "sign_"):
        for f in ("cos_network_label", "cos_K0_label", "cos_p16_label", "cos_p16_network"):
            assert -1.0 <= s[k + f] <= 1.0, (k + f, s[k + f])
        # with one path point the averaged kernel is the NTK at θ0
        assert abs(s[k + "cos_K0_network"] - 1.0) < 1e-12, s
    rows = check_jsonl_matches(os.path.join(out, "alignment.csv"),
                               os.path.join(out, "alignment.jsonl"))
    assert [r["block"] for r in rows] == ["W1", "W2", "W3", "total"] * 2
    for r in rows:
        assert float(r["rel_change_real"]) < 1e-12 and abs(float(r["cos_K0_real"]) - 1) < 1e-12
        assert abs(float(r["norm_ratio_real"]) - 1) < 1e-12
    check_figure(os.path.join(out, "alignment_kernels"), ["K0", "label"])
    check_figure(os.path.join(out, "alignment_residual"), ["sign(y)"])
    # a real path: the kernel moves, and the summary records it
    p = run(common + ["--path-points", "4", "--json"])
    s = json.loads(p.stdout.strip().splitlines()[-1])
    rows = read_rows(os.path.join(out, "alignment.csv"))
    assert all(float(r["rel_change_real"]) > 0 for r in rows)
    run(["experiment", "alignment", "--data", data, "--classes", "2,4", "--out", out], expect=2)


CASES = {"penalties": case_penalties, "sweep": case_sweep, "resume": case_resume,
         "samples": case_samples, "samples_models": case_samples_models, "demo": case_demo,
         "alignment": case_alignment, "samples_path": case_samples_path,
         "samples_path_resume": case_samples_path_resume,
         "samples_checkpoint_resume": case_samples_checkpoint_resume,
         "samples_ridge": case_samples_ridge, "samples_ridge_resume": case_samples_ridge_resume}

if __name__ == "__main__":
    case, scratch = sys.argv[1], sys.argv[2]
    scratch = os.path.join(scratch, case)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    combine_lsan_suppressions(scratch)
    CASES[case](scratch)
    print(f"{case}: ok")
