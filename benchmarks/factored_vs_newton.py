#!/usr/bin/python3
"""The factored method against newton on one problem file, penalty by penalty: both solved to a
tolerance (default 1e-10), their statuses, objectives and passes, the relative differences of
the objectives and of the stacked B, and the factored method's note (ranks, steps, hand-over).
Passes, not times: run it with OPENBLAS_NUM_THREADS=1 on a quiet machine for anything else.

Usage (repository root; Debian's python3 with numpy and h5py):
    /usr/bin/python3 benchmarks/factored_vs_newton.py PROBLEM.h5 LOSS PENALTY [PENALTY ...] \
        [--atf build/drivers/atf] [--tol 1e-10] [--dir DIR]
e.g. ... small.h5 xent:lambda=1.5 nuclear sq zsq:scale=0.1 pow:p=3 fixed balanced
"""
import argparse
import json
import os
import subprocess
import tempfile

import h5py
import numpy as np


def solve(atf, problem, out, loss, penalty, method, tol):
    r = subprocess.run([atf, "solve", problem, "-o", out, "--penalty", penalty, "--loss", loss,
                        "--method", method, "--tol", str(tol), "--json", "--quiet"],
                       capture_output=True, text=True)
    if r.returncode not in (0, 4):
        raise SystemExit(f"{penalty} {method}: exit {r.returncode}: {r.stderr.strip()}")
    res = json.loads(r.stdout)
    with h5py.File(out) as f:
        res["B"] = np.concatenate([f["blocks"][k]["B"][...].ravel() for k in sorted(f["blocks"])])
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problem")
    ap.add_argument("loss")
    ap.add_argument("penalties", nargs="+")
    ap.add_argument("--atf", default="build/drivers/atf")
    ap.add_argument("--tol", type=float, default=1e-10)
    ap.add_argument("--dir", default=None, help="where the results go (default: a temporary one)")
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="factored_vs_newton")
    print("| penalty | newton: status, passes | factored: status, passes | ΔF/F | ΔB/B | factored's note |")
    print("| --- | --- | --- | --- | --- | --- |")
    for pen in a.penalties:
        n = solve(a.atf, a.problem, os.path.join(d, "newton.h5"), a.loss, pen, "newton", a.tol)
        f = solve(a.atf, a.problem, os.path.join(d, "factored.h5"), a.loss, pen, "factored", a.tol)
        dF = abs(n["objective"] - f["objective"]) / abs(n["objective"])
        dB = np.linalg.norm(n["B"] - f["B"]) / max(np.linalg.norm(n["B"]), 1e-300)
        print(f"| `{pen}` | {n['status']}, {n['operator_passes']} | {f['status']}, "
              f"{f['operator_passes']} | {dF:.1e} | {dB:.1e} | {f['method_note']} |")


if __name__ == "__main__":
    main()
