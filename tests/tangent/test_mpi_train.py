"""`mpirun -np K atf train` (the MPI build, -Dmpi=enabled): every rank trains the same model on
its share of each minibatch's chunks (the cut of atf_shard_chunk(batch)) and of each scored
split's rows; the chunks' gradients are added in double-double and over the ranks, so that the
saved model is the one-process model bit for bit. Against the same command in one process, for
K = 2 and 3, on Fashion-MNIST (10 outputs, labels): the three models (network, linearized,
factorized), SGD and Adam, squared and cross-entropy losses, fixed and resampled subsets, the
factorised model's explicit penalty, a batch of one chunk (where the other ranks idle) and an
uneven one; every dataset bit for bit, one --json line, one progress. A bad option, Ctrl-C to a
single rank, a checkpoint rank 0 cannot write and a rank killed mid-training each end every rank
together: one message, the usual exit code (130 with the state reached written, as in one
process), no hang and no process left.

usage: test_mpi_train.py SCRATCH   (env ATF: the atf program; ATF_MPI=1 in an MPI build)"""
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experiments"))
from mpi_env import (ATF, ENV, check, ended_badly, fashion, finish, leftovers, mpi,  # noqa: E402
                     path, run)

fashion()  # installed by scripts/setup.sh
DATA = ["--data", "fashion-mnist", "--split", "official", "--n-train", "1000", "--n-test",
        "500", "--widths", "784,32,32,10"]


def datasets(name):
    out = {}
    with h5py.File(name, "r") as f:
        f.visititems(lambda k, o: out.__setitem__(k, o[...])
                     if isinstance(o, h5py.Dataset) else None)
    return out


def same_file(ref, got, what):
    a, b = datasets(ref), datasets(got)
    check(sorted(a) == sorted(b), f"{what}: datasets {sorted(b)} vs {sorted(a)}")
    differ = [k for k in a if k in b and not np.array_equal(a[k], b[k], equal_nan=True)]
    check(not differ, f"{what}: not bit for bit in {differ[:6]}")


def messages(stderr):
    return [line for line in stderr.splitlines() if line.startswith("atf ")]


CASES = {
    "network-xent": ["--model", "network", "--loss", "xent", "--lr", "0.05", "--batch", "128"],
    "network-adam-resample": ["--model", "network", "--optimizer", "adam", "--lr", "1e-3",
                              "--batch", "100", "--sampling", "resample-each-epoch",
                              "--pool", "1000", "--n-train", "600"],
    "linearized-squared": ["--model", "linearized", "--lr", "0.05", "--batch", "250",
                           "--stop", "final"],
    "factorized-penalty": ["--model", "factorized", "--loss", "xent", "--lr", "0.05",
                           "--batch", "96", "--penalty", "balanced+balanced",
                           "--penalty-weight", "1e-3"],
    "factorized-one-chunk": ["--model", "factorized", "--loss", "xent", "--lr", "0.05",
                             "--batch", "32"],
}

for name, opts in CASES.items():
    args = ["train", *DATA, "--epochs", "3", *opts, "--quiet"]
    one = path(f"{name}_1.h5")
    run([ATF, *args, "-o", one])
    for k in (2, 3):
        got = path(f"{name}_{k}.h5")
        p = run(mpi(k, [*args, "-o", got, "--json"]))
        lines = [line for line in p.stdout.splitlines() if line.strip()]
        check(len(lines) == 1 and '"status":"ok"' in lines[0], f"{name} K={k}: one json line, "
                                                               f"got {p.stdout[:300]!r}")
        if os.path.exists(got):
            same_file(one, got, f"{name} K={k}")

# progress from rank 0 only (a line every few seconds off a terminal: at least the last one)
p = run(mpi(2, ["train", *DATA, "--epochs", "2", "--batch", "128", "-o", path("prog.h5")]))
check(p.stderr.count("train: network model") == 1, f"one description, got {p.stderr[-600:]!r}")

# a bad option: one message from rank 0, exit 2 on every rank
p = run(mpi(3, ["train", *DATA, "--batchh", "3", "-o", path("bad.h5")]), expect=2)
check(len(messages(p.stderr)) == 1 and "--batchh" in p.stderr,
      f"bad option: one message, got {messages(p.stderr)}")

# a checkpoint rank 0 cannot write (its directory is a file): every rank leaves together
blocker = path("not_a_dir")
open(blocker, "w").close()
p = run(mpi(2, ["train", *DATA, "--epochs", "3", "--batch", "128", "--checkpoint-every", "1",
                "-o", os.path.join(blocker, "ck.h5")]), expect=2)
check(len(messages(p.stderr)) == 1, f"unwritable output: one message, got {messages(p.stderr)}")

# Ctrl-C to rank 1 alone: every rank stops before the same minibatch, rank 0 writes the state
# reached, the job exits 130 as one process does
LONG = ["train", "--data", "fashion-mnist", "--split", "official", "--n-train", "4000",
        "--n-test", "1000", "--widths", "784,64,64,10", "--epochs", "500", "--batch", "128",
        "--quiet"]


def ranks_of(out, k):
    for _ in range(600):  # up to a minute on a loaded machine
        time.sleep(0.1)
        pids = [pid for pid in leftovers(out) if os.path.basename(
            open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[0]).decode() == "atf"]
        if len(pids) == k:
            return sorted(pids, key=int)
    return []


def cpu_seconds(pid):
    """User + system CPU seconds a process has used (0 once it is gone)."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def training(ranks, seconds=2.0):
    """Wait until every rank has computed for `seconds` of CPU time (past loading the data and
    into the epochs however loaded the machine is; a fixed wall-clock wait of 2 s was not, with
    other jobs on the cores), at most two minutes."""
    deadline = time.time() + 120
    while time.time() < deadline and min(cpu_seconds(p) for p in ranks) < seconds:
        time.sleep(0.05)


stopped = path("sigint.h5")
proc = subprocess.Popen(mpi(2, [*LONG, "-o", stopped]), env=ENV, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True, start_new_session=True)
ranks = ranks_of(stopped, 2)
check(len(ranks) == 2, "sigint: the two ranks started")
if len(ranks) == 2:
    training(ranks)
    os.kill(int(ranks[1]), signal.SIGINT)
try:
    proc.communicate(timeout=120)
except subprocess.TimeoutExpired:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    check(False, "sigint: the job hung")
check(proc.returncode == 130, f"sigint to one rank: exit {proc.returncode}, expected 130")
check(os.path.exists(stopped), "sigint: the state reached was not written")
time.sleep(1)
check(not leftovers(stopped), "sigint: processes left")

# a rank killed mid-training: the job ends, nothing written, no process left
killed = path("killed.h5")
proc = subprocess.Popen(mpi(2, [*LONG, "-o", killed]), env=ENV, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True, start_new_session=True)
ranks = ranks_of(killed, 2)
check(len(ranks) == 2, "killed rank: the two ranks started")
if len(ranks) == 2:
    training(ranks)
    os.kill(int(ranks[1]), signal.SIGKILL)
ended_badly(proc, killed, "killed rank")

finish("test_mpi_train")
