#!/usr/bin/python3
"""same_answers.py — do two builds of atf give the same answers, bit for bit?

A fixed set of runs of the `atf` command covers every solver method (admm by each linear-system
backend — dense Cholesky, eigendecomposition, CHOLMOD, PCG —, lp, the Gram and CG baselines, irls,
alm, newton, fista), both penalized losses, interpolation, the three structures, an infeasible
problem, a nonconvex penalty, a checkpoint stopped at the iteration limit and resumed, a sweep and
a λ path (which warm-start the solver), and, with an MPI build, runs over 2 processes. Each run's
outputs are reduced to a digest: every dataset of every HDF5 file it wrote (its bytes, hashed),
every attribute except the run's clock, version, command line and free-text note, the exit code
and the --json line without its seconds. `compare` names every value that differs.

    /usr/bin/python3 benchmarks/same_answers.py run --atf OLD/drivers/atf \
        [--mpi-atf OLD-MPI/drivers/atf] -o before.json
    /usr/bin/python3 benchmarks/same_answers.py run --atf build/drivers/atf \
        [--mpi-atf build-mpi/drivers/atf] -o after.json
    /usr/bin/python3 benchmarks/same_answers.py compare before.json after.json

Runs with Debian's python3 (numpy, h5py). The Fashion-MNIST runs need the images
(scripts/setup.sh installs Debian's dataset-fashion-mnist). One BLAS thread throughout, so that
the arithmetic is the same from run to run.

How a run is spelled may differ between builds (a choice once made by an environment variable
is now a setting): a case lists each spelling, and the first one the build's `--help` knows is
used.
"""
import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

# What is not part of an answer: the clock, the build, the command line, the note that says why
# (its words may change), and where files were written.
SKIP_ATTRS = {"solve_seconds", "setup_seconds", "projection_seconds", "prox_seconds",
              "other_seconds", "atf_version", "command", "method_note", "seconds", "created",
              "wall_seconds", "cpu_seconds"}
SKIP_JSON = SKIP_ATTRS | {"setup_seconds", "time", "result", "out", "path", "file"}
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
for name in ("ATF_ADMM_PROJECTION", "ATF_CG_PRECOND"):
    ENV.pop(name, None)


def digest_h5(path):
    """Every dataset's hash and every attribute's value of an HDF5 file, by path."""
    out = {}
    with h5py.File(path, "r") as f:
        def attrs(name, obj):
            for key, value in obj.attrs.items():
                if key in SKIP_ATTRS:
                    continue
                if isinstance(value, bytes):
                    value = value.decode()
                elif isinstance(value, np.ndarray):
                    value = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()[:16]
                elif isinstance(value, (np.floating, float)):
                    value = float(value).hex()
                elif isinstance(value, (np.integer, int)):
                    value = int(value)
                else:
                    value = str(value)
                out[f"{name}@{key}"] = value

        def visit(name, obj):
            attrs(name, obj)
            if isinstance(obj, h5py.Dataset):
                data = np.ascontiguousarray(obj[()])
                out[name] = f"{data.dtype}{list(data.shape)}:" + \
                    hashlib.sha256(data.tobytes()).hexdigest()[:16]
        attrs("/", f)
        f.visititems(visit)
    return out


def json_line(stdout):
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                return {}
            return {k: (float(v).hex() if isinstance(v, float) else v)
                    for k, v in obj.items() if k not in SKIP_JSON}
    return {}


class Runner:
    def __init__(self, atf, mpi_atf, work):
        self.atf, self.mpi_atf, self.work = atf, mpi_atf, work
        self.help = {}

    def knows(self, command, option):
        if command not in self.help:
            p = subprocess.run([self.atf, command, "--help"], capture_output=True, text=True,
                               env=ENV)
            self.help[command] = p.stdout + p.stderr
        return option in self.help[command]

    def path(self, name):
        return os.path.join(self.work, name)

    def atf_run(self, args, env=None, mpi=0, interrupt_after=None):
        cmd = [self.atf if not mpi else self.mpi_atf] + args
        if mpi:
            cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(mpi)] + cmd
        e = dict(ENV, **(env or {}))
        if interrupt_after is None:
            p = subprocess.run(cmd, capture_output=True, text=True, env=e)
            return p.returncode, p.stdout, p.stderr
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
        time.sleep(interrupt_after)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate()
        return p.returncode, out, err


def spelling(runner, command, variants):
    """The first variant (args, env) whose marker option the build's --help names."""
    for marker, args, env in variants:
        if marker is None or runner.knows(command, marker):
            return args, env
    raise SystemExit(f"same_answers: {command}: this build knows none of "
                     f"{[v[0] for v in variants]}")


def make_problems(r):
    """The problem files every case reads: built by the build under test (so they are compared
    too) or by numpy (dense, sparse, rank-deficient and inconsistent ones)."""
    made = {}
    feats = {
        "syn": ["--data", "synthetic", "--n-train", "40", "--n-test", "20",
                "--widths", "16,12,10,1", "--penalty", "sq"],
        "synbias": ["--data", "synthetic", "--n-train", "30", "--n-test", "10",
                    "--widths", "16,8,8,1", "--bias=all", "--activation", "gelu"],
        "fash": ["--data", "fashion-mnist", "--split", "official", "--n-train", "40",
                 "--n-test", "40", "--widths", "784,32,32,10"],
        "syn400": ["--data", "synthetic", "--n-train", "400", "--n-test", "20",
                   "--widths", "16,32,32,1"],
    }
    for name, args in feats.items():
        path = r.path(name + ".h5")
        code, out, err = r.atf_run(["features"] + args + ["-o", path])
        if code != 0:
            raise SystemExit(f"same_answers: atf features for {name}: {err.strip()}")
        made[name] = path
    rng = np.random.default_rng(20261207)

    def write(name, blocks, rvec, labels=None):
        path = r.path(name + ".h5")
        with h5py.File(path, "w") as f:
            f.attrs["format"] = "atf-problem"
            f.attrs["version"] = 1
            f.attrs["samples"] = len(rvec)
            f.attrs["outputs"] = 1
            f["r"] = rvec
            for i, (bname, kind, rows, cols, data, pen) in enumerate(blocks):
                g = f.create_group(f"blocks/{bname}")
                g.attrs.update(index=i, rows=rows, cols=cols, penalty=pen, operator=kind)
                if kind == "dense":
                    g["J"] = data
                else:
                    g["J_indptr"], g["J_indices"], g["J_data"] = data
        made[name] = path

    M = 30
    J1, J2 = rng.standard_normal((M, 6 * 5)), rng.standard_normal((M, 4 * 4))
    write("dense", [("W1", "dense", 6, 5, J1, "sq"), ("W2", "dense", 4, 4, J2, "zsq:scale=0.5")],
          rng.standard_normal(M))
    # rank-deficient but consistent: row 29 = row 0 + row 1 (the eigen path)
    Jd = rng.standard_normal((M, 40))
    Jd[29] = Jd[0] + Jd[1]
    x = rng.standard_normal(40)
    write("rankdef", [("W1", "dense", 8, 5, Jd, "sq")], Jd @ x)
    # inconsistent: the same rows with a right-hand side off the range
    rr = Jd @ x
    rr[29] += 1.0
    write("infeasible", [("W1", "dense", 8, 5, Jd, "sq")], rr)
    # sparse (CHOLMOD)
    import scipy.sparse as sp
    S = sp.random(M, 60, density=0.25, random_state=7, format="csr") + \
        sp.hstack([sp.eye(M), sp.csr_matrix((M, 30))]).tocsr()
    S = S.tocsr()
    write("sparse", [("W1", "sparse", 6, 10, (S.indptr.astype(np.int64),
                                               S.indices.astype(np.int64), S.data),
                      "sq")], rng.standard_normal(M))
    return made


def cases(r, P):
    """(name, command, args, env, outputs, extra) for every run; outputs are HDF5 files."""
    out = lambda n: r.path(n)
    admm_pcg = spelling(r, "solve", [("--linsys", ["--linsys", "pcg"], {}),
                                    (None, [], {"ATF_ADMM_PROJECTION": "cg"})])
    cg_jacobi = spelling(r, "baseline", [("--precond", ["--precond", "jacobi"], {}),
                                        (None, [], {"ATF_CG_PRECOND": "jacobi"})])
    cg_gram32 = spelling(r, "baseline", [("--precond", ["--precond", "gram32"], {}),
                                        (None, [], {"ATF_CG_PRECOND": "gram32"})])
    C = []

    def solve(name, prob, args, env=None):
        C.append((name, "solve", [P[prob], "-o", out(name + ".h5"), "--json"] + args,
                  env or {}, [out(name + ".h5")]))

    def baseline(name, prob, args, env=None):
        C.append((name, "baseline", [P[prob], "-o", out(name + ".h5"), "--json"] + args,
                  env or {}, [out(name + ".h5")]))

    solve("admm-sq", "syn", [])
    solve("admm-nuclear", "syn", ["--penalty", "nuclear"])
    solve("admm-logsq", "syn", ["--penalty", "logsq:scale=0.01"])
    solve("admm-balanced", "synbias", ["--penalty", "balanced+balanced"])
    solve("admm-diagonal", "syn", ["--structure", "diagonal", "--penalty", "abs"])
    solve("admm-full", "syn", ["--structure", "full"])
    solve("admm-dense", "dense", [])
    solve("admm-eigen", "rankdef", [])
    solve("admm-cholmod", "sparse", ["--penalty", "zsq:scale=0.1"])
    solve("admm-infeasible", "infeasible", [])
    solve("admm-pcg", "syn", admm_pcg[0], admm_pcg[1])
    solve("admm-warm", "syn", ["--penalty", "zsq:scale=0.01", "--warm", out("admm-sq.h5")])
    solve("lp", "dense", ["--method", "lp", "--structure", "diagonal", "--penalty", "nuclear"])
    solve("irls", "syn", ["--method", "irls", "--penalty", "sq"])
    solve("alm", "syn", ["--method", "alm", "--penalty", "zsq:scale=0.01"])
    solve("newton-squared", "syn", ["--loss", "squared:lambda=0.1", "--penalty", "zsq:scale=0.01"])
    solve("newton-xent", "fash", ["--loss", "xent:lambda=1", "--penalty", "nuclear"])
    solve("newton-xent-sq", "fash", ["--loss", "xent:lambda=0.5", "--penalty", "sq"])
    solve("newton-nonconvex", "syn", ["--loss", "squared:lambda=0.1",
                                      "--penalty", "logsq:scale=0.1"])
    solve("newton-rank", "syn400", ["--loss", "squared:lambda=0.1", "--newton-rank", "20"])
    solve("newton-continuation", "syn", ["--loss", "squared:lambda=0.05", "--penalty",
                                         "logsq:scale=0.1", "--warm", out("newton-nonconvex.h5")])
    solve("fista-squared", "syn", ["--method", "fista", "--loss", "squared:lambda=0.1"])
    solve("fista-xent", "fash", ["--method", "fista", "--loss", "xent:lambda=1",
                                 "--max-iter", "300"])
    solve("newton-maxiter", "fash", ["--loss", "xent:lambda=1", "--max-iter", "3"])
    baseline("baseline-gram", "syn", ["--method", "gram"])
    baseline("baseline-auto", "fash", [])
    baseline("baseline-cg", "fash", ["--method", "cg"])
    baseline("baseline-cg-jacobi", "syn", ["--method", "cg"] + cg_jacobi[0], cg_jacobi[1])
    baseline("baseline-cg-gram32", "syn", ["--method", "cg"] + cg_gram32[0], cg_gram32[1])
    baseline("baseline-infeasible", "infeasible", [])
    return C


def run_case(r, case):
    name, command, args, env, outputs = case
    code, stdout, stderr = r.atf_run([command] + args, env)
    d = {"exit": code, "json": json_line(stdout)}
    for o in outputs:
        if os.path.exists(o):
            d[os.path.basename(o)] = digest_h5(o)
    if code not in (0, 3, 4):
        d["stderr"] = stderr.strip().splitlines()[-1:] if stderr.strip() else []
    return d


def resume_cases(r, P, digests):
    """Stopped and resumed: admm and the CG baseline at their iteration limit (their checkpoint
    is kept there), newton by Ctrl-C; then the same command goes on to the answer. The answer
    must equal the uninterrupted run's, here and across builds."""
    def stopped_and_resumed(name, command, base, first_stop):
        ck, res = r.path(name + ".ck.h5"), r.path(name + "-resumed.h5")
        args = [command] + base + ["-o", res, "--json", "--checkpoint", ck,
                                   "--checkpoint-every", "0"]
        if isinstance(first_stop, float):  # Ctrl-C after that many seconds
            first = r.atf_run(args, interrupt_after=first_stop)[0]
        else:  # the iteration limit
            first = r.atf_run(args + ["--max-iter", str(first_stop)])[0]
        code, out, _ = r.atf_run(args)
        digests[name + "-resumed"] = {"exit": code, "json": json_line(out),
                                      "result": digest_h5(res)}
        return first
    c1 = stopped_and_resumed("admm", "solve", [P["syn"], "--penalty", "zsq:scale=0.01"], 7)
    digests["admm-resumed"]["first_exit"] = c1
    c1 = stopped_and_resumed("cg", "baseline", [P["fash"], "--method", "cg"], 5)
    digests["cg-resumed"]["first_exit"] = c1
    c1 = stopped_and_resumed("newton", "solve", [P["syn400"], "--loss", "squared:lambda=0.1",
                                                 "--penalty", "zsq:scale=0.01"], 1.0)
    digests["newton-resumed-note"] = {"first_exit_was_interrupt": c1 == 130}


def jsonl_rows(path):
    """The rows of a .jsonl table, floats as exact hex, the timings left out."""
    rows = []
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            rows.append({k: (float(v).hex() if isinstance(v, float) else v)
                         for k, v in row.items() if k not in SKIP_JSON})
    return rows


def experiment_cases(r, P, digests):
    d = r.path("sweep")
    code, out, _ = r.atf_run(["sweep", P["syn"], "--out", d, "--families", "sq,nuclear",
                              "--scales", "1e-2,1", "--structures", "layer", "--quiet"])
    digests["sweep"] = {"exit": code, "rows": jsonl_rows(os.path.join(d, "sweep.jsonl"))}
    d = r.path("path")
    code, out, _ = r.atf_run(["path", P["fash"], "--loss", "xent", "--lambdas", "4,1,0.25",
                              "-o", d, "--quiet"])
    digests["path"] = {"exit": code, "rows": jsonl_rows(os.path.join(d, "path.jsonl")),
                       "lambda-1": digest_h5(os.path.join(d, "lambda-1.h5"))}


def mpi_cases(r, P, digests):
    if not r.mpi_atf:
        return
    for name, command, args in [
            ("mpi2-newton", "solve", ["--loss", "squared:lambda=0.1",
                                      "--penalty", "zsq:scale=0.01"]),
            ("mpi2-newton-xent", "solve", ["--loss", "xent:lambda=1", "--no-reduce"]),
            ("mpi2-admm", "solve", []),
            ("mpi2-alm", "solve", ["--method", "alm"]),
            ("mpi2-cg", "baseline", ["--method", "cg"]),
            ("mpi2-gram", "baseline", ["--method", "gram"])]:
        prob = P["fash"] if "xent" in name else P["syn"]
        res = r.path(name + ".h5")
        code, out, err = r.atf_run([command, prob, "-o", res, "--json"] + args, mpi=2)
        d = {"exit": code, "json": json_line(out)}
        if os.path.exists(res):
            d["result"] = digest_h5(res)
        else:
            d["stderr"] = err.strip().splitlines()[-2:]
        digests[name] = d


def cmd_run(args):
    digests = {}
    with tempfile.TemporaryDirectory(prefix="atf-same-") as work:
        r = Runner(os.path.abspath(args.atf),
                   os.path.abspath(args.mpi_atf) if args.mpi_atf else None, work)
        P = make_problems(r)
        digests["problems"] = {k: digest_h5(v) for k, v in P.items()}
        for case in cases(r, P):
            digests[case[0]] = run_case(r, case)
            print(f"same_answers: {case[0]}: exit {digests[case[0]]['exit']}", file=sys.stderr)
        resume_cases(r, P, digests)
        experiment_cases(r, P, digests)
        mpi_cases(r, P, digests)
    with open(args.output, "w") as f:
        json.dump(digests, f, indent=1, sort_keys=True)
    print(f"same_answers: {len(digests)} cases into {args.output}", file=sys.stderr)


def flatten(obj, prefix=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from flatten(v, f"{prefix}/{k}" if prefix else k)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from flatten(v, f"{prefix}[{i}]")
    else:
        yield prefix, obj


def cmd_compare(args):
    a = dict(flatten(json.load(open(args.before))))
    b = dict(flatten(json.load(open(args.after))))
    cases = sorted({k.split("/")[0] for k in a} | {k.split("/")[0] for k in b})
    differ = 0
    for case in cases:
        keys = sorted({k for k in a if k.split("/")[0] == case} |
                      {k for k in b if k.split("/")[0] == case})
        bad = [k for k in keys if a.get(k) != b.get(k)]
        # the linear-system backend that ran is recorded from this redesign on: new, not changed
        bad = [k for k in bad if not (k not in a and k.endswith(("@linsys", "/linsys")))]
        if bad:
            differ += 1
            print(f"DIFFERENT {case}:")
            for k in bad[:12]:
                print(f"    {k}: {a.get(k)!r} -> {b.get(k)!r}")
            if len(bad) > 12:
                print(f"    ... and {len(bad) - 12} more")
        else:
            print(f"same      {case} ({len(keys)} values)")
    print(f"{len(cases) - differ} of {len(cases)} cases the same bit for bit, {differ} different")
    return 1 if differ else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("run")
    p.add_argument("--atf", required=True)
    p.add_argument("--mpi-atf")
    p.add_argument("-o", "--output", required=True)
    p = sub.add_parser("compare")
    p.add_argument("before")
    p.add_argument("after")
    args = ap.parse_args()
    return cmd_run(args) if args.verb == "run" else cmd_compare(args)


if __name__ == "__main__":
    sys.exit(main() or 0)
