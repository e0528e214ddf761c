"""`mpirun -np K atf path` (the MPI build, -Dmpi=enabled): the examples of the problem are spread
over the ranks as `atf solve` spreads them — each rank reads its shard of the fitted, validation
and test examples, the solver runs over the ranks, the predictions are gathered and scored — and
rank 0 alone writes the table, the result files, fit.h5 and the figure. Against the same command
in one process, for K = 2 and K = 3, scored on the test split and on validation examples: the
same table (every column but the timings: the strings equal, the numbers within 1e-12 relative,
and the test says whether bit for bit), the same result files (every B) and, with validation,
the same fit.h5 (every item, attribute and value, read with h5py), which `atf predict` accepts
with the result files. The test split (40 examples) and the validation examples (60) have fewer
chunks than 3 ranks: the third rank holds none of them. After Ctrl-C to mpirun a run with K = 3
completes the table as one process does; a SIGINT to one rank alone stops every rank at the same
step (exit 130, one line), and one process completes the table. A NaN in one example's rows, an
output directory that cannot be made, a result file that cannot be written (rank 0 alone fails,
mid-run) and a bad option each end the job with one message, the usual exit code, no
half-written output and no process left.

usage: test_mpi_path.py SCRATCH   (env ATF: the atf program; ATF_MPI=1 in an MPI build)"""
import csv
import math
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_env import (ATF, ENV, check, fashion, finish, leftovers, mpi, path, run,  # noqa: E402
                     stop_job)

import h5py  # noqa: E402
import numpy as np  # noqa: E402

FASHION = fashion()
TIMING = ("seconds", "cpu_seconds", "setup_seconds")
LAMBDAS = "8,2,0.5"



def table(out):
    with open(os.path.join(out, "path.csv"), newline="") as f:
        return list(csv.DictReader(f))


def atf_messages(stderr):
    return [line for line in stderr.splitlines() if line.startswith("atf ")]


def same_table(ref, got, what):
    """Every column but the timings: strings equal, numbers within 1e-12; True if bit for bit."""
    a, b = table(ref), table(got)
    check([r["key"] for r in a] == [r["key"] for r in b],
          f"{what}: rows {[r['key'] for r in b]}, expected {[r['key'] for r in a]}")
    exact = True
    for ra, rb in zip(a, b):
        check(set(ra) == set(rb), f"{what}: columns differ")
        for col in ra:
            if col in TIMING or ra[col] == rb.get(col):
                continue
            exact = False
            try:
                x, y = float(ra[col]), float(rb[col])
                close = (math.isnan(x) and math.isnan(y)) or abs(x - y) <= 1e-12 * abs(x)
            except (TypeError, ValueError):
                close = False
            check(close, f"{what}: lambda {ra['key']}, {col}: {rb.get(col)} vs {ra[col]}")
    return exact


def same_results(ref, got, what):
    """The result files of the rows: every B bit for bit."""
    for r in table(ref):
        if r["result"] == "-":
            continue
        with h5py.File(os.path.join(ref, r["result"]), "r") as fa, \
                h5py.File(os.path.join(got, r["result"]), "r") as fb:
            for n in fa["blocks"]:
                check(np.array_equal(fa["blocks"][n]["B"][...], fb["blocks"][n]["B"][...]),
                      f"{what}: {r['result']}: B of {n} differs")
            check(fa.attrs["problem_fingerprint"] == fb.attrs["problem_fingerprint"],
                  f"{what}: {r['result']}: another problem fingerprint")


def items(f):
    found = {}
    f.visititems(lambda name, obj: found.__setitem__(name, obj))
    return found


def same_file(a, b, what):
    """Two problem files with the same items, attributes, types, shapes and values."""
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        ia, ib = items(fa), items(fb)
        check(set(ia) == set(ib), f"{what}: items differ: {sorted(set(ia) ^ set(ib))}")
        check(dict(fa.attrs) == dict(fb.attrs), f"{what}: root attributes differ: "
                                                f"{dict(fa.attrs)} vs {dict(fb.attrs)}")
        for name in set(ia) & set(ib):
            x, y = ia[name], ib[name]
            check(dict(x.attrs) == dict(y.attrs), f"{what}: {name}: attributes differ")
            if isinstance(x, h5py.Dataset):
                check(isinstance(y, h5py.Dataset) and x.dtype == y.dtype and x.shape == y.shape
                      and np.array_equal(x[...], y[...]), f"{what}: {name} differs")


def clean(out, what):
    left = [f for f in os.listdir(out) if f.endswith(".lock") or ".tmp." in f]
    check(not left, f"{what}: left in the output directory: {left}")


# 1 200 Fashion-MNIST images with widths 784,16,16,10 (of full rank: no subspace reduction,
# which over processes would be refused) and 40 test images: two chunks of 32 and 8
prob = path("p.h5")
run([ATF, "features", "--data", "fashion-mnist", "--split", "official", "--n-train", "1200",
     "--n-test", "40", "--widths", "784,16,16,10", "-o", prob])

cases = {
    "test": ["--loss", "xent", "--lambdas", LAMBDAS],
    # 60 validation images (two chunks), 1 140 fitted
    "validation": ["--loss", "squared", "--lambdas", "32,8", "--validation-fraction", "0.05",
                   "--seed", "3"],
}
for name, opts in cases.items():
    one = path(f"{name}_1")
    t0 = time.time()
    run([ATF, "path", prob, "-o", one, "--quiet", "--json", *opts])
    print(f"{name}: one process {time.time() - t0:.1f} s")
    for k in (2, 3):
        out = path(f"{name}_{k}")
        t0 = time.time()
        p = run(mpi(k, ["path", prob, "-o", out, "--quiet", "--json", *opts]))
        secs = time.time() - t0
        check(len(p.stdout.strip().splitlines()) == 1 and '"status": "done"' in p.stdout,
              f"{name} K={k}: one JSON line, got {p.stdout!r}")
        exact = same_table(one, out, f"{name} K={k}")
        same_results(one, out, f"{name} K={k}")
        check(os.path.exists(os.path.join(out, "path.svg")), f"{name} K={k}: no figure")
        clean(out, f"{name} K={k}")
        if name == "validation":
            same_file(os.path.join(one, "fit.h5"), os.path.join(out, "fit.h5"),
                      f"{name} K={k}: fit.h5")
            run([ATF, "predict", os.path.join(out, "fit.h5"), os.path.join(out, "lambda-1.h5")])
        print(f"{name} K={k}: {secs:.1f} s, the table "
              f"{'bit for bit' if exact else 'not bit for bit'}")
        p = run(mpi(k, ["path", prob, "-o", out, "--quiet", "--json", *opts]))  # nothing to do
        check('"new_rows": 0' in p.stdout, f"{name} K={k}, again: {p.stdout!r}")

# ---- Ctrl-C to mpirun once the first λ is recorded, then the rest with K = 3
out = path("stopped")
job = subprocess.Popen(mpi(2, ["path", prob, "-o", out, "--quiet", *cases["test"]]), env=ENV,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
stop_job(job, out, os.path.join(out, "path.csv"), "sigint")
kept = [r["key"] for r in table(out)] if os.path.exists(os.path.join(out, "path.csv")) else []
check(0 < len(kept) < 3, f"sigint: {len(kept)} of 3 rows recorded")
run(mpi(3, ["path", prob, "-o", out, "--quiet", *cases["test"]]))
same_table(path("test_1"), out, "sigint, resumed with K=3")
clean(out, "sigint, resumed")
print(f"sigint: {len(kept)} rows kept, resumed")

# ---- SIGINT to one rank alone: every rank stops at the same step, exit 130 with rank 0's one
# line, the figure drawn; then the rest in one process
out = path("rank_stopped")
job = subprocess.Popen(mpi(2, ["path", prob, "-o", out, "--quiet", *cases["test"]]), env=ENV,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
deadline = time.time() + 300
csv_path = os.path.join(out, "path.csv")
while time.time() < deadline and job.poll() is None:
    if os.path.exists(csv_path) and sum(1 for _ in open(csv_path)) >= 2:
        break
    time.sleep(0.05)
ranks = [p for p in leftovers(out) if p != str(job.pid)]
check(job.poll() is None and len(ranks) == 2, f"rank SIGINT: the job ended early or ranks {ranks}")
if ranks:
    os.kill(int(ranks[-1]), signal.SIGINT)
try:
    _, err = job.communicate(timeout=300)
except subprocess.TimeoutExpired:
    job.kill()
    _, err = job.communicate()
    check(False, "rank SIGINT: the job hung")
msgs = atf_messages(err)
check(job.returncode == 130 and len(msgs) == 1 and "interrupted" in msgs[0],
      f"rank SIGINT: exit {job.returncode}, messages {msgs}")
check(os.path.exists(os.path.join(out, "path.svg")), "rank SIGINT: no figure")
clean(out, "rank SIGINT")
time.sleep(1)
check(not leftovers(out), "rank SIGINT: processes left")
run([ATF, "path", prob, "-o", out, "--quiet", *cases["test"]])
same_table(path("test_1"), out, "rank SIGINT, resumed in one process")

# ---- failures: one message each, the usual exit code, nothing half-written, no process left
bad = path("bad.h5")
shutil.copy(prob, bad)
with h5py.File(bad, "r+") as h:
    h["blocks/W2/H"][-1, 3] = np.nan  # the last example's rows: the last rank's shard
for k, extra in ((3, []), (2, ["--validation-fraction", "0.2"])):
    out = path(f"bad_{k}")
    p = run(mpi(k, ["path", bad, "-o", out, "--quiet", *cases["test"][:4], *extra]), expect=2)
    msgs = atf_messages(p.stderr)
    check(len(msgs) == 1 and "bad.h5" in msgs[0] and "W2" in msgs[0],
          f"a NaN, K={k}: one message naming the file and block, got {msgs}")
    check(not os.path.exists(out) or not os.listdir(out), f"a NaN, K={k}: left {os.listdir(out)}")
    check(not leftovers(out), f"a NaN, K={k}: processes left")

blocker = path("a-file")
open(blocker, "w").close()
out = os.path.join(blocker, "out")
p = run(mpi(3, ["path", prob, "-o", out, "--quiet", *cases["test"]]), expect=2)
msgs = atf_messages(p.stderr)
check(len(msgs) == 1 and "a-file" in msgs[0], f"unwritable DIR: one message, got {msgs}")

out = path("occupied")
os.makedirs(os.path.join(out, "lambda-1.h5"))  # the second result file cannot be written
p = run(mpi(3, ["path", prob, "-o", out, "--quiet", *cases["test"]]), expect=1)
msgs = atf_messages(p.stderr)
check(len(msgs) == 1 and "lambda-1.h5" in msgs[0], f"a result file: one message, got {msgs}")
check([r["key"] for r in table(out)] == ["8"], f"a result file: rows {table(out)}")
clean(out, "a result file")
check(not leftovers(out), "a result file: processes left")

p = run(mpi(2, ["path", prob, "-o", path("opt"), "--loss", "xent", "--lambdas", "8,-2"]),
        expect=2)
msgs = atf_messages(p.stderr)
check(len(msgs) == 1 and "--lambdas" in msgs[0], f"a bad option: one message, got {msgs}")

finish("test_mpi_path")
