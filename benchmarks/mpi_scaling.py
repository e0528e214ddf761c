#!/usr/bin/python3
"""Scaling of the MPI build (meson setup -Dmpi=enabled) on this machine, in one run.

strong: one `atf solve` of a penalized problem at K = 1 and K = 2 ranks (one BLAS thread each,
        mpirun --bind-to core), the two interleaved (2, 1, 2, 1, ...) so that a drift of the
        machine's speed falls on both; per run the wall seconds of the whole job (start-up and
        reading the file included), the CPU seconds of all its processes, the solver's own
        seconds, passes and objective. The medians and the speed-up t(1)/t(2) of the medians.
        The objectives must agree bit for bit (they are printed to 17 digits).
train:  (--train) one `atf train` at K = 1 and K = 2, interleaved the same way: every rank takes
        its share of each minibatch's chunks and of the scored splits' rows; the medians, the
        speed-up, and the JSON summary's losses, which must agree bit for bit.
gram:   (--gram PROBLEM) interpolation by admm at K = 1 and K = 2, the M × M Gram formed and
        factorised in one process (LAPACK) or in ScaLAPACK's block-cyclic tiles over the ranks,
        interleaved the same way: the medians of wall, CPU, set-up (the Gram formed and
        factorised) and solver seconds, and how far the K = 2 blocks lie from the K = 1 blocks
        (the factorisations add in different orders: not bit for bit; needs h5py).
weak:   `atf experiment samples` with the rows (n, seed) growing with K: K × SEEDS seeds at K
        ranks, so that every rank has the same rows to do; the efficiency t(1)/t(K) is 1 when
        dealing rows costs nothing. Runs interleaved the same way.

Run with Debian's python3 (the standard library; the --gram part also h5py and numpy):

    /usr/bin/python3 benchmarks/mpi_scaling.py --atf build-mpi/drivers/atf \\
        --problem /work/scratch/fm60000.h5 --loss xent:lambda=600 --runs 2 -o /tmp/scaling.md

(--problem: any penalized problem file, e.g. `atf features --data fashion-mnist --split official
--n-train 0 --n-test 10000 --widths 784,128,128,10 -o fm60000.h5`; --no-strong / --no-weak skip a
part; --train adds the training part, --train-args its options; --gram PROBLEM the Gram part.) The table goes to -o and stdout. Benchmarks report; nothing here asserts a time."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def environment():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if os.geteuid() == 0:  # OpenMPI refuses root unless told
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def mpirun(k, args):
    extra = ["--oversubscribe"] if k > (os.cpu_count() or 1) else []
    return ["mpirun", "-np", str(k), "--bind-to", "core", *extra, *args]


def timed(cmd, env):
    """Wall and CPU seconds of a whole job (mpirun reaps its ranks, so their times are its
    children's) and its stdout."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    before = os.times()
    out, errtext = p.communicate()
    wall = time.monotonic() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + \
          (after.children_system - before.children_system)
    if p.returncode != 0:
        sys.exit(f"mpi_scaling: {' '.join(cmd)}: exit {p.returncode}\n{errtext[-2000:]}")
    return wall, cpu, out


def strong_run(a, k, env, out):
    cmd = mpirun(k, [a.atf, "solve", a.problem, "-o", out, "--penalty", a.penalty, "--loss",
                     a.loss, "--tol", str(a.tol), "--quiet", "--json"])
    wall, cpu, text = timed(cmd, env)
    j = json.loads(text.strip().splitlines()[-1])
    return {"K": k, "wall": wall, "cpu": cpu, "solver": j.get("seconds"),
            "passes": j.get("operator_passes"), "objective": j.get("objective"),
            "status": j.get("status")}


def train_run(a, k, env, out):
    cmd = mpirun(k, [a.atf, "train", *a.train_args.split(), "-o", out, "--quiet", "--json"])
    wall, cpu, text = timed(cmd, env)
    j = json.loads(text.strip().splitlines()[-1])
    return {"K": k, "wall": wall, "cpu": cpu,
            "objective": (j.get("train_loss"), j.get("val_loss"), j.get("test_loss"))}


def gram_run(a, k, env, out):
    cmd = mpirun(k, [a.atf, "solve", a.gram, "-o", out, "--method", "admm", "--penalty",
                     a.penalty, "--no-reduce", "--quiet", "--json"])
    wall, cpu, text = timed(cmd, env)
    j = json.loads(text.strip().splitlines()[-1])
    return {"K": k, "wall": wall, "cpu": cpu, "solver": j.get("seconds"),
            "setup": j.get("setup_seconds"), "iterations": j.get("iterations"),
            "objective": j.get("objective"), "status": j.get("status"), "out": out}


def blocks_apart(one, other):
    """The largest relative difference of a block B between two result files."""
    import h5py
    import numpy as np
    with h5py.File(one, "r") as f, h5py.File(other, "r") as g:
        return max(float(np.max(np.abs(g["blocks"][n]["B"][...] - f["blocks"][n]["B"][...])) /
                         np.max(np.abs(f["blocks"][n]["B"][...]))) for n in f["blocks"])


def gram_table(runs):
    lines = ["| K | runs | wall s (median, min–max) | CPU s (median) | set-up s: Gram formed and "
             "factorised (median) | solver s (median) | iterations | status |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for k in (1, 2):
        rk = [r for r in runs if r["K"] == k]
        walls = [r["wall"] for r in rk]
        lines.append(f"| {k} | {len(rk)} | {statistics.median(walls):.1f} ({min(walls):.1f}–"
                     f"{max(walls):.1f}) | {med(runs, k, 'cpu'):.1f} | {med(runs, k, 'setup'):.1f}"
                     f" | {med(runs, k, 'solver'):.1f} | {rk[0]['iterations']} | "
                     f"{rk[0]['status']} |")
    one = next(r for r in runs if r["K"] == 1)
    apart = max(blocks_apart(one["out"], r["out"]) for r in runs if r["K"] == 2)
    obj = max(abs(r["objective"] - one["objective"]) / abs(one["objective"]) for r in runs)
    lines += ["", f"Speed-up of the medians: wall {med(runs, 1, 'wall') / med(runs, 2, 'wall'):.2f}"
              f"×, set-up {med(runs, 1, 'setup') / med(runs, 2, 'setup'):.2f}×; K = 2 against "
              f"K = 1: B within {apart:.2g}, objective within {obj:.2g} (relative)."]
    return lines


def train_table(runs):
    lines = ["| K | runs | wall s (median, min–max) | CPU s (median) |", "| --- | --- | --- | --- |"]
    for k in (1, 2):
        walls = [r["wall"] for r in runs if r["K"] == k]
        lines.append(f"| {k} | {len(walls)} | {statistics.median(walls):.1f} ({min(walls):.1f}–"
                     f"{max(walls):.1f}) | {med(runs, k, 'cpu'):.1f} |")
    same = len({repr(r["objective"]) for r in runs}) == 1
    lines += ["", f"Speed-up of the medians: wall {med(runs, 1, 'wall') / med(runs, 2, 'wall'):.2f}×;"
              f" train, validation and test losses {'equal bit for bit' if same else 'DIFFER'} "
              f"over all runs ({runs[0]['objective']!r})."]
    return lines


def weak_run(a, k, env, out):
    seeds = k * a.seeds
    cmd = mpirun(k, [a.atf, "experiment", "samples", "--data", a.weak_data, "--ns", a.weak_ns,
                     "--seeds", str(seeds), "--n-test", "200", "--hidden", "32",
                     "--models", "ntk,p16,network", "--epochs", str(a.epochs), "--out", out,
                     "--json"])
    wall, cpu, _ = timed(cmd, env)
    rows = len(a.weak_ns.split(",")) * seeds
    return {"K": k, "wall": wall, "cpu": cpu, "rows": rows}


def med(runs, k, key):
    return statistics.median(r[key] for r in runs if r["K"] == k)


def strong_table(runs):
    lines = ["| K | runs | wall s (median, min–max) | CPU s (median) | solver s (median) | "
             "passes | objective |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for k in (1, 2):
        rk = [r for r in runs if r["K"] == k]
        walls = [r["wall"] for r in rk]
        objs = sorted({repr(r["objective"]) for r in rk})
        lines.append(f"| {k} | {len(rk)} | {statistics.median(walls):.1f} ({min(walls):.1f}–"
                     f"{max(walls):.1f}) | {med(runs, k, 'cpu'):.1f} | "
                     f"{med(runs, k, 'solver'):.1f} | {rk[0]['passes']} | {', '.join(objs)} |")
    w1, w2 = med(runs, 1, "wall"), med(runs, 2, "wall")
    s1, s2 = med(runs, 1, "solver"), med(runs, 2, "solver")
    same = len({repr(r["objective"]) for r in runs}) == 1
    lines.append("")
    lines.append(f"Speed-up of the medians: wall {w1 / w2:.2f}×, solver {s1 / s2:.2f}×; "
                 f"objectives {'equal bit for bit' if same else 'DIFFER'} over all runs.")
    return lines


def weak_table(runs, ks):
    lines = ["| K | points (n, seed) | runs | wall s (median, min–max) | CPU s (median) | efficiency t(1)/t(K) |",
             "| --- | --- | --- | --- | --- | --- |"]
    t1 = med(runs, 1, "wall")
    for k in ks:
        rk = [r for r in runs if r["K"] == k]
        walls = [r["wall"] for r in rk]
        lines.append(f"| {k} | {rk[0]['rows']} | {len(rk)} | {statistics.median(walls):.1f} "
                     f"({min(walls):.1f}–{max(walls):.1f}) | {med(runs, k, 'cpu'):.1f} | "
                     f"{t1 / statistics.median(walls):.2f} |")
    return lines


def interleaved(part, run, a, env, tmp):
    """a.runs runs of run(a, K, env, out) for K = 2, 1, 2, 1, …, each said on stderr."""
    runs = []
    for i in range(a.runs):
        for k in (2, 1):
            r = run(a, k, env, os.path.join(tmp, f"{part}-{k}-{i}.h5"))
            extra = "".join(f", {key} {r[key]:.1f} s" for key in ("solver", "setup")
                            if r.get(key) is not None)
            print(f"{part} K={k} run {i + 1}: wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s"
                  f"{extra}{', ' + r['status'] if r.get('status') else ''}", file=sys.stderr)
            runs.append(r)
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--atf", required=True, help="an atf built with -Dmpi=enabled")
    ap.add_argument("--problem", help="problem file of the strong-scaling solve")
    ap.add_argument("--penalty", default="sq")
    ap.add_argument("--loss", default="xent:lambda=600")
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--runs", type=int, default=2, help="runs of each K (default 2)")
    ap.add_argument("--no-strong", action="store_true")
    ap.add_argument("--no-weak", action="store_true")
    ap.add_argument("--train", action="store_true", help="also the strong scaling of atf train")
    ap.add_argument("--train-args", default="--data fashion-mnist --split official --n-train "
                    "20000 --n-test 10000 --widths 784,128,128,10 --loss xent --lr 0.05 "
                    "--batch 256 --epochs 2")
    ap.add_argument("--gram", metavar="PROBLEM",
                    help="also interpolation by admm on this problem at K = 1 and 2")
    ap.add_argument("--weak-data", default="synthetic:d=20,r=2")
    ap.add_argument("--weak-ns", default="100,200")
    ap.add_argument("--seeds", type=int, default=2, help="seeds per rank (weak scaling)")
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--weak-ks", default="1,2")
    ap.add_argument("-o", "--out", help="Markdown table")
    a = ap.parse_args()
    env = environment()
    lines = [f"# MPI scaling ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"{os.cpu_count()} cores, OPENBLAS_NUM_THREADS=1)", ""]
    with tempfile.TemporaryDirectory(prefix="atf-scaling-") as tmp:
        if not a.no_strong:
            if not a.problem:
                sys.exit("mpi_scaling: --problem is needed for the strong-scaling part")
            runs = interleaved("strong", strong_run, a, env, tmp)
            lines += [f"## Strong scaling: atf solve {os.path.basename(a.problem)} --penalty "
                      f"{a.penalty} --loss {a.loss} --tol {a.tol:g}", ""] + strong_table(runs) + [""]
        if a.train:
            runs = interleaved("train", train_run, a, env, tmp)
            lines += [f"## Strong scaling: atf train {a.train_args}", ""] + train_table(runs) + [""]
        if a.gram:
            runs = interleaved("gram", gram_run, a, env, tmp)
            lines += [f"## The Gram over processes: atf solve {os.path.basename(a.gram)} --method "
                      f"admm --penalty {a.penalty} --no-reduce", ""] + gram_table(runs) + [""]
        if not a.no_weak:
            ks = [int(k) for k in a.weak_ks.split(",")]
            runs = []
            for i in range(a.runs):
                for k in reversed(ks):
                    r = weak_run(a, k, env, os.path.join(tmp, f"weak-{k}-{i}"))
                    print(f"weak K={k} run {i + 1}: {r['rows']} rows, wall {r['wall']:.1f} s, "
                          f"CPU {r['cpu']:.1f} s", file=sys.stderr)
                    runs.append(r)
            lines += [f"## Weak scaling: atf experiment samples --data {a.weak_data} --ns "
                      f"{a.weak_ns} --seeds {a.seeds}·K --models ntk,p16,network --epochs "
                      f"{a.epochs}", ""] + weak_table(runs, ks) + [""]
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
