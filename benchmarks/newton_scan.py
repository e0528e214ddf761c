#!/usr/bin/python3
"""Newton beside FISTA over the number of examples, in one run: the penalized problem (16) on
Fashion-MNIST tangent features (official split, 784-128-128-10, He initialisation), one
`atf solve` process per (N, method), the methods interleaved within each N.

Per run: status, Newton steps or FISTA iterations, CG steps (and per Newton step), passes over
the data (products with A or Aᵀ), seconds to a proximal-gradient residual of 1e-2 / 1e-4 / 1e-6
(from the iteration table, whose time column starts after the setup), wall and CPU seconds of
the whole process (/usr/bin/time: all its threads), peak RSS, objective. The methods are `newton`
(the Nyström preconditioner of rank 100), `newton:rank=K` (another rank; 0 = no preconditioner)
and `fista`. Problems are written once into --dir by `atf features` (reused when present).

Run with Debian's python3 (numpy is not needed; the standard library is):

    /usr/bin/python3 benchmarks/newton_scan.py --atf build/drivers/atf --dir /tmp/scan \\
        --n 1000,4000,16000 --loss xent --runs newton,newton:rank=0,fista --threads 1 \\
        -o /tmp/scan/table.md

The table goes to -o (Markdown) and to stdout; each run's row also to OUT.jsonl as it ends.
Benchmarks report; nothing here asserts a time."""
import argparse
import json
import os
import subprocess
import sys
import time

TOLS = (1e-2, 1e-4, 1e-6)


def problem(atf, d, n, env):
    path = os.path.join(d, f"fm{n}.h5")
    if not os.path.exists(path):
        cmd = [atf, "features", "--data", "fashion-mnist", "--split", "official", "--n-train",
               str(n), "--n-test", "10000", "--widths", "784,128,128,10", "-o", path]
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return path


def method_args(run):
    """'newton', 'newton:rank=K' or 'fista' -> the solve's options."""
    name, _, opt = run.partition(":")
    if name not in ("newton", "fista"):
        sys.exit(f"newton_scan: run {run!r} is not newton, newton:rank=K or fista")
    args = ["--method", name]
    if opt:
        key, _, val = opt.partition("=")
        if name != "newton" or key != "rank" or not val.isdigit():
            sys.exit(f"newton_scan: run {run!r}: only newton takes rank=K")
        args += ["--newton-rank", val]
    return args


def table_rows(log):
    """(pg residual, seconds) of every iteration-table row (newton and fista alike: the fifth
    column is the pg residual; the time is the ninth column for newton, the eighth for fista)."""
    rows, fista = [], "atf fista" in log
    for line in log.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0].isdigit():
            try:
                rows.append((float(f[4]), float(f[7] if fista else f[8])))
            except ValueError:
                pass
    return rows


def time_to(rows, tol):
    for res, sec in rows:
        if res <= tol:
            return sec
    return None


def run_one(atf, path, n, loss, penalty, run, tol, max_iter, env, outdir):
    out = os.path.join(outdir, f"r{n}-{run.replace(':', '-').replace('=', '')}.h5")
    cmd = [atf, "solve", path, "-o", out, "--penalty", penalty, "--loss",
           f"{loss}:lambda={0.01 * n:g}", "--tol", str(tol), "--max-iter", str(max_iter),
           "--log-every", "1", "--json", *method_args(run)]
    timing = out + ".time"  # /usr/bin/time: peak RSS (KiB), user and system CPU seconds
    t0 = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-o", timing, "-f", "%M %U %S", *cmd], env=env,
                       capture_output=True, text=True)
    wall = time.monotonic() - t0
    so, se = p.stdout, p.stderr
    with open(timing) as f:
        rss_kib, user, system = (float(x) for x in f.read().split()[-3:])
    js = json.loads(so.strip().splitlines()[-1]) if so.strip() else {}
    rows = table_rows(se)
    r = {"N": n, "run": run, "rc": p.returncode, "status": js.get("status"),
         "iterations": js.get("iterations"), "cg": js.get("inner_iterations"),
         "passes": js.get("operator_passes"), "objective": js.get("objective"),
         "pg_residual": js.get("pg_residual"), "setup_s": js.get("setup_seconds"),
         "wall_s": wall, "cpu_s": user + system, "rss_gib": rss_kib / 2**20,
         "method_note": js.get("method_note")}
    for t in TOLS:
        r[f"s_to_{t:g}"] = time_to(rows, t)
    return r


def fmt(x, d=1):
    if x is None:
        return "—"
    return f"{x:.{d}f}" if isinstance(x, float) else str(x)


def markdown(rows):
    head = ("| N | run | status | iterations | CG (per step) | passes | s to 1e-2 / 1e-4 / 1e-6 | "
            "setup s | wall s | CPU s | peak RSS GiB | objective |")
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        cg = r["cg"] if r["run"] != "fista" else None
        per = f"{cg} ({cg / max(r['iterations'], 1):.1f})" if cg is not None else "—"
        to = " / ".join(fmt(r[f"s_to_{t:g}"]) for t in TOLS)
        out.append(f"| {r['N']} | {r['run']} | {r['status']} | {r['iterations']} | {per} | "
                   f"{r['passes']} | {to} | {fmt(r['setup_s'])} | {fmt(r['wall_s'])} | "
                   f"{fmt(r['cpu_s'])} | {fmt(r['rss_gib'], 2)} | "
                   f"{fmt(r['objective'], 8) if r['objective'] is not None else '—'} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atf", default="build/drivers/atf")
    ap.add_argument("--dir", required=True, help="problems and results go here")
    ap.add_argument("--n", default="1000,4000,16000")
    ap.add_argument("--loss", default="xent", choices=("xent", "squared"))
    ap.add_argument("--penalty", default="sq")
    ap.add_argument("--runs", default="newton,newton:rank=0,fista")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--max-iter", type=int, default=20000)
    ap.add_argument("-o", "--out", required=True, help="Markdown table (and OUT.jsonl)")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(a.threads))
    rows = []
    with open(a.out + ".jsonl", "w") as jl:
        for n in (int(x) for x in a.n.split(",")):
            path = problem(a.atf, a.dir, n, env)
            for run in a.runs.split(","):
                r = run_one(a.atf, path, n, a.loss, a.penalty, run, a.tol, a.max_iter, env,
                            a.dir)
                rows.append(r)
                jl.write(json.dumps(r) + "\n")
                jl.flush()
                print(f"newton_scan: N {n} {run}: {r['status']}, {r['passes']} passes, "
                      f"{r['wall_s']:.1f} s", file=sys.stderr)
    table = markdown(rows)
    with open(a.out, "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
