#!/usr/bin/python3
"""atf against its PyTorch peer (benchmarks/peer_lbfgs.py), side by side and interleaved.

For every problem and thread count: atf, peer, atf, peer, … (--repeats pairs). atf runs the
nuclear + cross-entropy problem to its certificate (`--tol`, the proximal-gradient residual);
its objective F* (the first atf run's) is the peer's target: the peer's time is that of its
first L-BFGS outer step with F(UVᵀ) ≤ F* + rtol·|F*|. Medians over the repeats.

atf's time: `seconds` of its JSON line (setup + iterations, no file I/O) and the process's
wall and CPU seconds (reading the problem included; CPU from getrusage of the child). The
peer's time: its solver loop only (wall and CPU, the evaluation of F at each step excluded;
loading the problem and importing torch not counted, the load reported apart).

The atf command is a template (--atf-cmd, placeholders {problem} {out} {lam} {tol}), so the
comparison can be re-run with another binary or method, e.g.
    --atf-cmd "build/drivers/atf solve {problem} -o {out} --penalty nuclear \
               --loss xent:lambda={lam} --tol {tol} --json --quiet --method newton"

Usage (repository root; problems from `atf features … --widths 784,128,128,10`):
    /usr/bin/python3 benchmarks/peer_compare.py fm4000.h5 fm16000.h5 --threads 1,2 \
        --repeats 3 --out DIR [--peer-args "--history 100 --max-iter 10"] [--peer-budget 900]
λ = 0.01·N unless --lam is given. Writes DIR/runs.jsonl (every run), DIR/table.md and
DIR/table.json (the medians), and the peer's traces as DIR/peer-*.json.
"""
import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time

import blas_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ATF = ("build/drivers/atf solve {problem} -o {out} --penalty nuclear "
               "--loss xent:lambda={lam} --tol {tol} --json --quiet")


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd, env, log):
    w0, c0 = time.perf_counter(), child_cpu()
    with open(log, "w") as err:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
    wall, cpu = time.perf_counter() - w0, child_cpu() - c0
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        sys.exit(f"no JSON line from ({p.returncode}): {' '.join(cmd)}; see {log}")
    return json.loads(lines[-1]), wall, cpu, p.returncode


def samples_of(path):
    import h5py
    with h5py.File(path, "r") as f:
        return int(f.attrs["samples"])


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, d=1):
    return "—" if x is None else f"{x:.{d}f}"


def write_tables(rows, out):
    with open(os.path.join(out, "table.json"), "w") as f:
        json.dump(rows, f, indent=1)
    head = ("| N | λ | threads | atf: status, iters | atf objective F* | pg res. | "
            "atf s (JSON) | atf wall / CPU s | peer reached | peer wall / CPU s to F*(1+1e-6) | "
            "peer iters | wall ratio peer/atf | CPU ratio |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        peer = (f"{fmt(r['peer_wall_s'])} / {fmt(r['peer_cpu_s'])}" if r["peer_wall_s"]
                is not None else f"not reached (best gap {r['peer_best_rel_gap']:.1e} at "
                f"{fmt(r['peer_best_wall_s'])} s)")
        lines.append(
            f"| {r['N']} | {r['lambda']:g} | {r['threads']} | {','.join(sorted(set(r['atf_status'])))}"
            f", {fmt(r['atf_iterations'], 0)} | {r['atf_objective']:.10f} | "
            f"{r['atf_pg_residual']:.1e} | {fmt(r['atf_seconds'])} | {fmt(r['atf_wall_s'])} / "
            f"{fmt(r['atf_cpu_s'])} | {r['peer_reached']} | {peer} | {fmt(r['peer_iters'], 0)} | "
            f"{fmt(r.get('ratio_wall'), 2)} | {fmt(r.get('ratio_cpu'), 2)} |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(table)
    return table


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--lam", type=float, default=None, help="λ (default 0.01·N)")
    ap.add_argument("--tol", default="1e-6", help="atf's eps_rel (--tol)")
    ap.add_argument("--rtol", type=float, default=1e-6, help="the peer's relative target")
    ap.add_argument("--atf-cmd", default=DEFAULT_ATF)
    ap.add_argument("--peer", default=os.path.join(HERE, "peer_lbfgs.py"))
    ap.add_argument("--peer-args", default="--history 100 --max-iter 10",
                    help="extra options of peer_lbfgs.py (default: %(default)s)")
    ap.add_argument("--peer-budget", type=float, default=900.0, help="peer wall seconds")
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--out", default="peer-compare")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    runs_path = os.path.join(a.out, "runs.jsonl")
    rows = []
    for prob in a.problems:
        N = samples_of(prob)
        lam = a.lam if a.lam is not None else 0.01 * N
        tag = os.path.splitext(os.path.basename(prob))[0]
        for k in [int(t) for t in a.threads.split(",")]:
            env = dict(os.environ, OPENBLAS_NUM_THREADS=str(k), OMP_NUM_THREADS=str(k))
            if blas_kernel.coretype():
                env["OPENBLAS_CORETYPE"] = blas_kernel.coretype()
            nice = ["nice", "-n", str(a.nice)] if a.nice else []
            target = None
            A, P = [], []
            for rep in range(a.repeats):
                out = os.path.join(a.out, f"atf-{tag}-t{k}-{rep}.h5")
                cmd = nice + shlex.split(a.atf_cmd.format(problem=prob, out=out, lam=f"{lam:g}",
                                                          tol=a.tol))
                js, wall, cpu, rc = timed(cmd, env, out[:-3] + ".err")
                rec = {"kind": "atf", "problem": prob, "N": N, "lambda": lam, "threads": k,
                       "rep": rep, "cmd": " ".join(cmd), "rc": rc, "wall_s": wall, "cpu_s": cpu,
                       **{key: js.get(key) for key in ("status", "method", "iterations",
                                                       "objective", "pg_residual",
                                                       "duality_gap", "seconds",
                                                       "setup_seconds", "method_note")}}
                A.append(rec)
                print(json.dumps(rec), flush=True)
                with open(runs_path, "a") as f:
                    f.write(json.dumps(rec) + "\n")
                if target is None:
                    target = js["objective"]
                trace = os.path.join(a.out, f"peer-{tag}-t{k}-{rep}.json")
                cmd = nice + [sys.executable, a.peer, prob, "--lam", f"{lam:g}", "--threads",
                              str(k), "--target", repr(target), "--rtol", str(a.rtol),
                              "--budget", str(a.peer_budget), "--quiet", "--json", trace] + \
                    shlex.split(a.peer_args)
                js, wall, cpu, rc = timed(cmd, env, trace[:-5] + ".err")
                rec = {"kind": "peer", "problem": prob, "N": N, "lambda": lam, "threads": k,
                       "rep": rep, "cmd": " ".join(cmd), "rc": rc, "process_wall_s": wall,
                       "process_cpu_s": cpu,
                       **{key: js.get(key) for key in ("status", "target", "reached",
                                                       "reach_wall_s", "reach_cpu_s",
                                                       "reach_step", "reach_iters", "reach_prev_wall_s",
                                                       "reach_prev_cpu_s", "best_F",
                                                       "best_rel_gap", "best_wall_s",
                                                       "best_cpu_s", "load_s", "history",
                                                       "max_iter", "init_scale", "seed")},
                       "final_evals": js["final"]["evals"], "final_iters": js["final"]["iters"]}
                P.append(rec)
                print(json.dumps(rec), flush=True)
                with open(runs_path, "a") as f:
                    f.write(json.dumps(rec) + "\n")
            reached = [p for p in P if p["reached"]]
            row = {"problem": prob, "N": N, "lambda": lam, "threads": k, "repeats": a.repeats,
                   "atf_status": [x["status"] for x in A], "atf_iterations": med(
                       [x["iterations"] for x in A]),
                   "atf_objective": target, "atf_pg_residual": med([x["pg_residual"] for x in A]),
                   "atf_duality_gap": med([x["duality_gap"] for x in A]),
                   "atf_seconds": med([x["seconds"] for x in A]),
                   "atf_wall_s": med([x["wall_s"] for x in A]),
                   "atf_cpu_s": med([x["cpu_s"] for x in A]),
                   "peer_reached": f"{len(reached)}/{len(P)}",
                   "peer_wall_s": med([p["reach_wall_s"] for p in reached]) if reached else None,
                   "peer_cpu_s": med([p["reach_cpu_s"] for p in reached]) if reached else None,
                   "peer_iters": med([p["reach_iters"] for p in reached]) if reached else None,
                   "peer_best_rel_gap": min(p["best_rel_gap"] for p in P),
                   "peer_best_wall_s": med([p["best_wall_s"] for p in P]),
                   "peer_load_s": med([p["load_s"] for p in P])}
            if reached and len(reached) == len(P):
                row["ratio_wall"] = row["peer_wall_s"] / row["atf_seconds"]
                row["ratio_cpu"] = row["peer_cpu_s"] / row["atf_cpu_s"]
            rows.append(row)
            write_tables(rows, a.out)  # after every row: a cut run keeps its table
    print(write_tables(rows, a.out))


if __name__ == "__main__":
    main()
