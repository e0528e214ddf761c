"""`mpirun -np K atf sweep` (the MPI build, -Dmpi=enabled): the warm-start chains (one per
structure) and the baseline row are dealt to the ranks and rank 0 writes the one table. Against
the same command in one process: the same rows, bit for bit except the timing column, in the same
order, for K = 2 and K = 3, and one report; after Ctrl-C to mpirun (which kills the ranks) and a
run with K = 3, and after one rank is killed with SIGKILL and a run in one process, the table has
every row once, the rows recorded before the stop unchanged, every row equal to one process's,
those after the cut of a chain too (the resumed run goes on from the chain's last kept result,
kept in DIR/warm-I.h5, as a resumed sweep in one process does; no such file is left), and no
process is left; a missing problem file is said once; a table of a
rank that cannot be read ends the job with one message.

usage: test_mpi_sweep.py SCRATCH   (env ATF: the atf program; ATF_MPI=1 in an MPI build)"""
import csv
import glob
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_env import ATF, ENV, check, finish, leftovers, mpi, run, scratch, stop_job  # noqa: E402

TIMING = ("seconds",)


def problem(name, n, widths):
    path = os.path.join(scratch, name)
    run([ATF, "features", "--data", "synthetic:d=6,r=2", "--n-train", str(n), "--n-test", "60",
         "--widths", widths, "-o", path])
    return path


def read_csv(path):
    """The complete rows of a CSV table (a torn last line, which the table cuts off, is not)."""
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if None not in r.values() and None not in r]


def rows(out):
    return [{k: v for k, v in r.items() if k not in TIMING}
            for r in read_csv(os.path.join(out, "sweep.csv"))]


def clean(out, what):
    check(not [f for f in os.listdir(out) if "part" in f or f.endswith(".lock") or
               f.startswith("warm-")],
          f"{what}: part tables, locks or warm starts left: {os.listdir(out)}")


def same_rows(a, b, what):
    ka, kb = [r["key"] for r in a], [r["key"] for r in b]
    check(len(ka) == len(set(ka)) == len(kb), f"{what}: {len(ka)} rows vs {len(kb)} (or twice)")
    check(ka == kb, f"{what}: rows in another order")
    ra, rb = {r["key"]: r for r in a}, {r["key"]: r for r in b}
    check(ra == rb, f"{what}: rows differ: {[k for k in ra if ra[k] != rb.get(k)][:3]}")


# ---- the same table for K = 1 (no mpirun), 2 and 3: three structures (three chains) and the
# baseline, scale=auto resolved by every rank from its own baseline
tiny = problem("tiny.h5", 40, "6,10,10,1")
grid = ["--families", "sq,abs", "--scales", "1e-2,1,auto", "--structures", "layer,diagonal,full",
        "--max-iter", "3000", "--json"]
ref = os.path.join(scratch, "one")
run([ATF, "sweep", tiny, "--out", ref, *grid])
check(len(rows(ref)) == 1 + 3 * 2 * 3, f"one process: {len(rows(ref))} rows")
for k in (2, 3):
    out = os.path.join(scratch, f"k{k}")
    t0 = time.time()
    p = run(mpi(k, ["sweep", tiny, "--out", out, *grid]))
    print(f"K = {k}: {time.time() - t0:.1f} s")
    same_rows(rows(ref), rows(out), f"K = {k}")
    check(p.stdout.count('"status": "done"') == 1, f"K = {k}: the report printed "
                                                   f"{p.stdout.count('status')}×: {p.stdout}")
    check(os.path.exists(os.path.join(out, "sweep.svg")), f"K = {k}: no figure")
    clean(out, f"K = {k}")
    p = run(mpi(k, ["sweep", tiny, "--out", out, *grid]))  # nothing left to do
    check('"new_rows": 0' in p.stdout and len(rows(out)) == len(rows(ref)),
          f"K = {k}, again: {p.stdout}")

# ---- interrupted (Ctrl-C to mpirun kills the ranks) or one rank killed, then resumed. Small
# scales of abs and a tight tolerance: most solves run to their iteration limit, each row takes
# some 0.3 s (12 rows, two chains of 6).
slow = problem("slow.h5", 200, "6,48,48,1")
slow_grid = ["--families", "abs", "--scales", "1e-4,2e-4,5e-4,1e-3,2e-3,5e-3", "--structures",
             "layer,diagonal", "--tol", "1e-12", "--max-iter", "1000", "--quiet"]
slow_ref = os.path.join(scratch, "slow-one")
t0 = time.time()
run([ATF, "sweep", slow, "--out", slow_ref, *slow_grid])
print(f"slow sweep, one process: {time.time() - t0:.1f} s")
expected = rows(slow_ref)
by_key = {r["key"]: r for r in expected}
chains = {}
for r in expected:
    chains.setdefault(r["structure"], []).append(r["key"])

for how in ("sigint", "kill-rank"):
    out = os.path.join(scratch, how)
    job = subprocess.Popen(mpi(2, ["sweep", slow, "--out", out, *slow_grid]), env=ENV,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    part = os.path.join(out, "sweep.part-1.csv")  # rank 1 has the second chain (diagonal)
    stop_job(job, out, part, how)
    # what the stopped job recorded: the table and the part tables
    before = rows(out)
    for f in sorted(glob.glob(os.path.join(out, "sweep.part-*.csv"))):
        before += [{k: v for k, v in r.items() if k not in TIMING} for r in read_csv(f)]
    kept = {r["key"]: r for r in before}
    check(0 < len(kept) < len(expected), f"{how}: {len(kept)} of {len(expected)} rows recorded")
    if how == "sigint":
        run(mpi(3, ["sweep", slow, "--out", out, *slow_grid]))
    else:  # one process moves the part tables in as well
        run([ATF, "sweep", slow, "--out", out, *slow_grid])
    got = rows(out)
    keys = [r["key"] for r in got]
    check(len(keys) == len(set(keys)), f"{how}: rows written twice")
    check(sorted(keys) == sorted(by_key), f"{how}: lost or extra rows")
    clean(out, how)
    final = {r["key"]: r for r in got}
    check(all(final.get(k) == r for k, r in kept.items()), f"{how}: recorded rows changed")
    # a chain is recorded in order; the rows after its cut go on from the same warm start
    cut = set()
    for name, chain in chains.items():
        done = [k for k in chain if k in kept]
        check(done == chain[:len(done)], f"{how}: chain {name} recorded out of order: {done}")
        if 0 < len(done) < len(chain):
            cut.update(chain[len(done):])
    for k, r in final.items():
        check(r == by_key[k], f"{how}: {k} differs from one process's"
                              f"{' (after a cut)' if k in cut else ''}: "
                              f"{ {c: (r[c], by_key[k][c]) for c in r if r[c] != by_key[k][c]} }")
    print(f"{how}: {len(kept)} rows kept, {len(cut)} after a cut, {len(got)} in all")

# ---- a missing problem file: said once, every rank ends
out = os.path.join(scratch, "missing")
p = subprocess.run(mpi(2, ["sweep", os.path.join(scratch, "none.h5"), "--out", out]), env=ENV,
                   capture_output=True, text=True, timeout=600)
msgs = [line for line in p.stderr.splitlines() if line.startswith("atf sweep:")]
check(p.returncode != 0 and len(msgs) == 1 and "none.h5" in msgs[0],
      f"a missing file: exit {p.returncode}, messages {msgs}")
check(not leftovers(out), f"a missing file: processes left: {leftovers(out)}")

# ---- a part table that cannot be read ends the job with one message naming it
out = os.path.join(scratch, "fail")
os.makedirs(os.path.join(out, "sweep.part-1.csv"))
p = subprocess.run(mpi(2, ["sweep", tiny, "--out", out, *grid]), env=ENV, capture_output=True,
                   text=True, timeout=600)
msgs = [line for line in p.stderr.splitlines() if line.startswith("atf sweep:")]
check(p.returncode != 0 and len(msgs) == 1 and "sweep.part-1" in msgs[0],
      f"an unreadable part table: exit {p.returncode}, messages {msgs}")
check(not leftovers(out), f"an unreadable part table: processes left: {leftovers(out)}")

finish("test_mpi_sweep")
