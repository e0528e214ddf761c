"""`mpirun -np K atf experiment samples` (the MPI build, -Dmpi=enabled): the points (n, seed) are
dealt to the ranks and rank 0 writes the one table. Against the same command in one process:
the same rows, bit for bit except the timing column, in the same order, for K = 2 and K = 3;
after Ctrl-C to mpirun (which kills the ranks) and after one rank is killed, the next run —
with another K — finishes the table with the same rows, none lost or written twice, and no
process is left behind; a rank that fails ends the job with its own one-line message; a command
that does not share its work refuses to run under K ranks.

usage: test_mpi_samples.py SCRATCH   (env ATF: the atf program; ATF_MPI=1 in an MPI build)"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_env import ATF, ENV, check, finish, leftovers, mpi, run, scratch, stop_job  # noqa: E402


def args(out, epochs=20, ns="20,40"):
    return ["experiment", "samples", "--data", "synthetic:d=6,r=2", "--ns", ns, "--seeds", "3",
            "--n-test", "50", "--hidden", "16", "--models", "ntk,p16,network", "--epochs",
            str(epochs), "--out", out]


def rows(out):
    with open(os.path.join(out, "samples.jsonl")) as f:
        return [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in f]


def same_rows(a, b, what, ordered=True):
    ka, kb = [r["key"] for r in a], [r["key"] for r in b]
    check(len(ka) == len(set(ka)) == len(kb), f"{what}: {len(ka)} rows vs {len(kb)} (or twice)")
    if ordered:
        check(ka == kb, f"{what}: rows in another order")
    ra, rb = {r["key"]: r for r in a}, {r["key"]: r for r in b}
    check(ra == rb, f"{what}: rows differ: {[k for k in ra if ra[k] != rb.get(k)][:3]}")


# ---- the same table for K = 1 (no mpirun), 2 and 3
ref = os.path.join(scratch, "one")
run([ATF, *args(ref)])
for k in (2, 3):
    out = os.path.join(scratch, f"k{k}")
    p = run(mpi(k, args(out)))
    same_rows(rows(ref), rows(out), f"K = {k}")
    check(p.stdout.count("| n |") == 1, f"K = {k}: the report printed {p.stdout.count('| n |')}×")
    check(not [f for f in os.listdir(out) if "part" in f or f.endswith(".lock")],
          f"K = {k}: part tables or locks left: {os.listdir(out)}")

# ---- interrupted (Ctrl-C to mpirun kills the ranks) or one rank killed, then resumed
slow_ref = os.path.join(scratch, "slow-one")
run([ATF, *args(slow_ref, epochs=200000)])
for how in ("sigint", "kill-rank"):
    out = os.path.join(scratch, how)
    job = subprocess.Popen(mpi(2, args(out, epochs=200000)), env=ENV, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    part = os.path.join(out, "samples.part-1.csv")
    stop_job(job, out, part, how)
    run(mpi(3, args(out, epochs=200000)))
    same_rows(rows(slow_ref), rows(out), f"{how}, resumed with K = 3", ordered=False)

# ---- a rank that fails ends the job with its message (rank 1 cannot create its part table)
out = os.path.join(scratch, "fail")
os.makedirs(os.path.join(out, "samples.part-1.csv"))
p = subprocess.run(mpi(2, args(out)), env=ENV, capture_output=True, text=True, timeout=600)
msgs = [line for line in p.stderr.splitlines() if line.startswith("atf experiment samples:")]
check(p.returncode != 0 and len(msgs) == 1 and "samples.part-1" in msgs[0],
      f"a failing rank: exit {p.returncode}, messages {msgs}")
check(not leftovers(out), f"a failing rank: processes left: {leftovers(out)}")

# ---- commands that do not share their work refuse K ranks, with one message
p = run(mpi(2, ["predict", os.path.join(scratch, "none.h5"), os.path.join(scratch, "r.h5")]),
        expect=2)
check(p.stderr.count("runs as one process") == 1, f"refusal: {p.stderr[-400:]}")

finish("test_mpi_samples")
