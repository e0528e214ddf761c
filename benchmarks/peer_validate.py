#!/usr/bin/python3
"""Validate the L-BFGS peer (benchmarks/peer_lbfgs.py) against atf on a tiny problem, both ways.

1. atf solves the nuclear + cross-entropy problem to eps_rel 1e-6 and 1e-10 (reference F*).
2. An independent numpy evaluation of F(B) (2√γ Σ‖B‖_* by SVD + the softmax cross-entropy of
   f0 + h_iᵀ B δ_m) on atf's B equals atf's reported objective: both programs mean the same F.
3. The peer from random starts (several seeds, init scale 1e-2 and 1e-6) run until it stalls:
   its final G and F(UVᵀ) against F*, and √γ(‖U‖² + ‖V‖²) against 2√γ‖B‖_* per block.
4. The peer started at atf's answer (balanced factors of its SVD) does not get below F*
   (beyond rounding), and atf started at the peer's answer (--warm, a result file holding the
   peer's B) certifies it at once with the same objective.

Usage (from the repository root, after the build):
    /usr/bin/python3 benchmarks/peer_validate.py [--atf build/drivers/atf] [--dir DIR]
        [--n 200] [--widths 784,16,16,10] [--lam 2]
Prints one line per check and a JSON summary; exit status 1 if a check fails.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, env):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode not in (0, 4):
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return p.stdout


def last_json(out):
    return json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atf", default="build/drivers/atf")
    ap.add_argument("--dir", default="peer-validate")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--widths", default="784,16,16,10")
    ap.add_argument("--lam", type=float, default=2.0)
    ap.add_argument("--budget", type=float, default=60.0)
    a = ap.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OPENBLAS_CORETYPE=os.environ.get(
        "OPENBLAS_CORETYPE", "SkylakeX"))
    os.environ.update(OPENBLAS_NUM_THREADS="1")
    import h5py
    import numpy as np
    from scipy.special import logsumexp

    os.makedirs(a.dir, exist_ok=True)
    prob = os.path.join(a.dir, "tiny.h5")
    run([a.atf, "features", "--data", "fashion-mnist", "--split", "official", "--n-train",
         str(a.n), "--n-test", "100", "--widths", a.widths, "-o", prob, "--json"], env)
    loss = f"xent:lambda={a.lam:g}"
    res = {}
    for tol in ("1e-6", "1e-10"):
        out = os.path.join(a.dir, f"atf_{tol}.h5")
        res[tol] = last_json(run([a.atf, "solve", prob, "-o", out, "--penalty", "nuclear",
                                  "--loss", loss, "--tol", tol, "--max-iter", "1000000",
                                  "--json", "--quiet"], env))
        res[tol]["file"] = out
    Fstar = res["1e-10"]["objective"]
    checks = []

    def check(name, ok, detail):
        checks.append({"check": name, "ok": bool(ok), **detail})
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {json.dumps(detail)}")

    # 2. independent evaluation of F on atf's B
    with h5py.File(prob, "r") as f:
        N, C = int(f.attrs["samples"]), int(f.attrs["outputs"])
        labels = np.asarray(f["labels"])
        f0 = np.asarray(f["f0"])
        blocks = sorted((int(g.attrs["index"]), n, np.asarray(g["H"]), np.asarray(g["D"]))
                        for n, g in f["blocks"].items())

    def F_numpy(Bs):
        z = f0.copy()
        for (_, _, H, D), B in zip(blocks, Bs):
            z += np.einsum("nq,nkq->nk", H @ B, D.reshape(N, C, -1))
        ce = logsumexp(z, axis=1) - z[np.arange(N), labels]
        return 2.0 * sum(np.linalg.svd(B, compute_uv=False).sum() for B in Bs) + ce.sum() / a.lam

    for tol in ("1e-6", "1e-10"):
        with h5py.File(res[tol]["file"], "r") as f:
            Bs = [np.asarray(f["blocks"][n]["B"]) for _, n, _, _ in blocks]
        Fn = F_numpy(Bs)
        rel = abs(Fn - res[tol]["objective"]) / abs(res[tol]["objective"])
        check(f"numpy F(B_atf, tol {tol}) = atf objective", rel < 1e-12,
              {"atf": res[tol]["objective"], "numpy": Fn, "rel": rel,
               "pg_residual": res[tol]["pg_residual"], "duality_gap": res[tol]["duality_gap"]})
    rel6 = (res["1e-6"]["objective"] - Fstar) / abs(Fstar)
    check("atf tol 1e-6 objective within 1e-6 of tol 1e-10", abs(rel6) < 1e-6,
          {"rel": rel6})

    # 3. the peer from random starts, to a stall
    peer = [sys.executable, os.path.join(HERE, "peer_lbfgs.py"), prob, "--lam", str(a.lam),
            "--threads", "1", "--target", repr(Fstar), "--keep-going", "--quiet",
            "--budget", str(a.budget), "--stall-steps", "10"]
    starts = [("seed0", ["--seed", "0"]), ("seed1", ["--seed", "1"]), ("seed2", ["--seed", "2"]),
              ("zero-ish 1e-6", ["--seed", "0", "--init-scale", "1e-6"])]
    peer_save = None
    for name, extra in starts:
        save = os.path.join(a.dir, f"peer_{name.split()[0]}.h5")
        s = last_json(run(peer + extra + ["--save", save], env))
        peer_save = peer_save or save
        fin = s["final"]
        relF = (fin["F"] - Fstar) / abs(Fstar)
        relG = (fin["G"] - Fstar) / abs(Fstar)
        bal = max(abs(b["uv_sq"] - b["two_nuclear"]) for b in s["blocks"]) / \
            max(b["two_nuclear"] for b in s["blocks"])
        check(f"peer {name}: min G = F* and ||U||^2+||V||^2 = 2||B||_*",
              abs(relG) < 1e-9 and abs(relF) < 1e-9 and bal < 1e-9,
              {"G": fin["G"], "F": fin["F"], "rel_G": relG, "rel_F": relF, "balance": bal,
               "status": s["status"], "iters": fin["iters"], "evals": fin["evals"],
               "reach_1e-6_wall_s": s["reach_wall_s"],
               "ranks": [b["rank_1e-8"] for b in s["blocks"]]})
        if abs(relF) < 1e-9:
            Fn = F_numpy([np.asarray(h5py.File(save, "r")[n]["B"]) for _, n, _, _ in blocks])
            check(f"peer {name}: numpy F(UV^T) = peer F", abs(Fn - fin["F"]) / abs(Fstar) < 1e-12,
                  {"numpy": Fn, "peer": fin["F"]})

    # 4a. the peer warm from atf's answer
    s = last_json(run(peer + ["--warm", res["1e-10"]["file"]], env))
    relmin = (min(s["best_F"], s["final"]["G"]) - Fstar) / abs(Fstar)
    check("peer warm from atf's answer stays at F* (no lower point)", relmin > -1e-10,
          {"best_F": s["best_F"], "final_G": s["final"]["G"], "rel": relmin,
           "status": s["status"]})

    # 4b. atf warm from the peer's answer (a copy of atf's result file with the peer's B)
    warm = os.path.join(a.dir, "peer_as_result.h5")
    shutil.copyfile(res["1e-10"]["file"], warm)
    with h5py.File(peer_save, "r") as p, h5py.File(warm, "r+") as f:
        for _, n, _, _ in blocks:
            g = f["blocks"][n]
            B = np.asarray(p[n]["B"])
            U, d, Vt = np.linalg.svd(B, full_matrices=False)
            for key, val in (("B", B), ("d", d), ("U", U), ("V", Vt.T), ("s1", np.sqrt(d)),
                             ("sigma", np.sqrt(d)), ("s2", np.ones_like(d))):
                if key in g:
                    g[key][...] = val
    out = last_json(run([a.atf, "solve", prob, "-o", os.path.join(a.dir, "atf_warm.h5"),
                         "--penalty", "nuclear", "--loss", loss, "--tol", "1e-6", "--warm", warm,
                         "--json", "--quiet"], env))
    rel = (out["objective"] - Fstar) / abs(Fstar)
    check("atf --warm from the peer's B certifies it", out["status"] == "solved" and
          abs(rel) < 1e-9, {"status": out["status"], "iterations": out["iterations"],
                            "objective": out["objective"], "rel": rel,
                            "pg_residual": out["pg_residual"]})

    summary = {"problem": prob, "N": a.n, "widths": a.widths, "lambda": a.lam, "F_star": Fstar,
               "atf": {k: {kk: v[kk] for kk in ("objective", "iterations", "pg_residual",
                                                "duality_gap", "seconds")}
                       for k, v in res.items()},
               "checks": checks}
    print(json.dumps(summary))
    sys.exit(0 if all(c["ok"] for c in checks) else 1)


if __name__ == "__main__":
    main()
