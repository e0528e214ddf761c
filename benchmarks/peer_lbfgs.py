#!/usr/bin/python3
"""The peer a PyTorch user would write for atf's penalized problem with the nuclear penalty.

atf solves   F(B) = Σ_ℓ 2√γ ‖B_ℓ‖_* + (1/λ) Σ_i CE(f0_i + (A vec B)_i, y_i)
(`atf solve P.h5 --penalty nuclear[:scale=γ] --loss xent:lambda=λ`, docs/record/solver.md §14).
The peer writes B_ℓ = U_ℓ V_ℓᵀ (U_ℓ: P_ℓ × r, V_ℓ: Q_ℓ × r, r = min(P_ℓ, Q_ℓ)) and minimises
the smooth

    G(U, V) = √γ Σ_ℓ (‖U_ℓ‖_F² + ‖V_ℓ‖_F²) + (1/λ) Σ_i CE(f0_i + p_i, y_i)

with torch.optim.LBFGS (full batch, float64, strong-Wolfe line search). min G = min F, since
min over UVᵀ = B of ‖U‖² + ‖V‖² is 2‖B‖_*. The predictions go through the factored features of
the problem file without forming A: per block Z = (H U) Vᵀ (N × Q), then p_{i,k} = Z_i · δ_{iC+k}
(an einsum over the rows of D).

After every L-BFGS outer step (one optimizer.step(closure) call of at most --max-iter
iterations) the clock is paused and F(B) of B = UVᵀ is evaluated exactly (nuclear norms by SVD,
the loss through B): the trace records it against the solver's own wall and CPU seconds
(time.perf_counter, time.process_time; the evaluation is not counted). With --target F* the run
stops at the first step where F ≤ F* + rtol·|F*| and reports that step's times.

Usage (from the repository root):
    /usr/bin/python3 benchmarks/peer_lbfgs.py PROBLEM.h5 --lam 40 --threads 1 \
        --target 65.6122897 --budget 600 --json trace.json [--csv trace.csv]
The BLAS thread count (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS) is set from --threads before
numpy and torch are imported, and OPENBLAS_CORETYPE to the kernel atf picks (benchmarks/blas_kernel.py:
Debian's OpenBLAS otherwise falls back to its generic kernels on recent CPUs: DGEMM 3.8x slower).
"""
import argparse
import json
import math
import os
import sys
import time


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problem", help="atf problem file (HDF5, factored blocks, /labels)")
    ap.add_argument("--lam", type=float, required=True, help="λ of xent:lambda=λ")
    ap.add_argument("--gamma", type=float, default=1.0, help="γ of nuclear:scale=γ (default 1)")
    ap.add_argument("--threads", type=int, default=1, help="torch and BLAS threads (default 1)")
    ap.add_argument("--budget", type=float, default=600.0,
                    help="solver wall seconds before giving up (default 600)")
    ap.add_argument("--max-steps", type=int, default=1000000, help="outer steps limit")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random start (default 0)")
    ap.add_argument("--init-scale", type=float, default=1e-2,
                    help="entries of U and V start N(0, s²) (default 1e-2; 1e-6 = 'zero-ish')")
    ap.add_argument("--ranks", default=None,
                    help="the factors' ranks per block, comma-separated (default: full rank); "
                         "e.g. atf's final ranks, an oracle the peer is given")
    ap.add_argument("--warm", default=None,
                    help="start from an atf result file: U = U_B √d, V = V_B √d (balanced)")
    ap.add_argument("--history", type=int, default=20, help="L-BFGS history_size (default 20)")
    ap.add_argument("--max-iter", type=int, default=20,
                    help="L-BFGS iterations per outer step (optimizer max_iter, default 20)")
    ap.add_argument("--tolerance-grad", type=float, default=0.0,
                    help="LBFGS tolerance_grad (default 0: never stop on it; torch's 1e-7 would)")
    ap.add_argument("--tolerance-change", type=float, default=0.0,
                    help="LBFGS tolerance_change (default 0; torch's default 1e-9)")
    ap.add_argument("--stall-steps", type=int, default=5,
                    help="stop after this many outer steps without a decrease of G (default 5)")
    ap.add_argument("--target", type=float, default=None, help="reference objective F*")
    ap.add_argument("--rtol", type=float, default=1e-6,
                    help="reached when F <= F* + rtol |F*| (default 1e-6)")
    ap.add_argument("--keep-going", action="store_true",
                    help="do not stop when the target is reached (run to budget or stall)")
    ap.add_argument("--contract", choices=["einsum", "bmm", "mulsum"], default="einsum",
                    help="how Z_i · δ_m is computed (default einsum)")
    ap.add_argument("--json", dest="json_out", default=None, help="write summary + trace (JSON)")
    ap.add_argument("--csv", default=None, help="write the trace (CSV)")
    ap.add_argument("--save", default=None, help="write the final U, V, B per block (HDF5)")
    ap.add_argument("--quiet", action="store_true", help="no per-step lines on stderr")
    return ap.parse_args(argv)


ARGS = parse_args(sys.argv[1:])
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blas_kernel  # noqa: E402
if blas_kernel.coretype():
    os.environ["OPENBLAS_CORETYPE"] = blas_kernel.coretype()

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(ARGS.threads)
torch.set_default_dtype(torch.float64)


def load(path):
    """Blocks in index order: (name, H [N,P], D [N,C,Q]); f0 [N,C]; labels [N]."""
    with h5py.File(path, "r") as f:
        N = int(f.attrs["samples"])
        C = int(f.attrs.get("outputs", 1))
        if "labels" not in f:
            sys.exit(f"{path}: /labels: missing (the xent loss needs them)")
        labels = torch.from_numpy(np.asarray(f["labels"], dtype=np.int64))
        f0 = torch.from_numpy(np.asarray(f["f0"], dtype=np.float64)) if "f0" in f \
            else torch.zeros(N, C)
        blocks = []
        for name, g in f["blocks"].items():
            if g.attrs["operator"] != "factored":
                sys.exit(f"{path}: /blocks/{name}: operator {g.attrs['operator']}: "
                         "the peer handles factored blocks only")
            if g.attrs.get("structure", "matrix") != "matrix":
                sys.exit(f"{path}: /blocks/{name}: structure must be matrix")
            H = torch.from_numpy(np.asarray(g["H"], dtype=np.float64))
            D = torch.from_numpy(np.asarray(g["D"], dtype=np.float64))
            blocks.append((int(g.attrs["index"]), name, H, D.reshape(N, C, -1)))
        blocks.sort()
    return N, C, [(n, H, D) for _, n, H, D in blocks], f0.reshape(N, C), labels


def contract(Z, D, how):
    """p[i, k] = Z[i] · D[i, k] for Z [N, Q], D [N, C, Q]."""
    if how == "einsum":
        return torch.einsum("nq,nkq->nk", Z, D)
    if how == "bmm":
        return torch.bmm(D, Z.unsqueeze(2)).squeeze(2)
    return (D * Z.unsqueeze(1)).sum(2)


def predictions(blocks, UV, how):
    p = None
    for (_, H, D), (U, V) in zip(blocks, UV):
        Z = (H @ U) @ V.T
        q = contract(Z, D, how)
        p = q if p is None else p + q
    return p


def predictions_B(blocks, Bs, how):
    p = None
    for (_, H, D), B in zip(blocks, Bs):
        q = contract(H @ B, D, how)
        p = q if p is None else p + q
    return p


def xent_sum(logits, labels):
    return torch.nn.functional.cross_entropy(logits, labels, reduction="sum")


def exact_F(blocks, f0, labels, lam, gamma, Bs, how):
    """F(B) = Σ 2√γ ‖B_ℓ‖_* + (1/λ) Σ CE, the nuclear norms by SVD (float64)."""
    with torch.no_grad():
        pen = sum(2.0 * math.sqrt(gamma) * float(torch.linalg.svdvals(B).sum()) for B in Bs)
        loss = float(xent_sum(f0 + predictions_B(blocks, Bs, how), labels)) / lam
    return pen + loss, loss, pen


def main():
    a = ARGS
    t_load = time.perf_counter()
    N, C, blocks, f0, labels = load(a.problem)
    t_load = time.perf_counter() - t_load
    sg = math.sqrt(a.gamma)

    gen = torch.Generator().manual_seed(a.seed)
    params = []
    warm = h5py.File(a.warm, "r") if a.warm else None
    ranks = [int(x) for x in a.ranks.split(",")] if a.ranks else None
    if ranks is not None and len(ranks) != len(blocks):
        raise SystemExit(f"peer_lbfgs: --ranks gives {len(ranks)} ranks for {len(blocks)} blocks")
    for k, (name, H, D) in enumerate(blocks):
        P, Q = H.shape[1], D.shape[2]
        r = min(P, Q) if ranks is None else min(P, Q, ranks[k])
        if warm is not None:  # the balanced factors of the result's SVD B = U_B diag(d) V_Bᵀ
            g = warm["blocks"][name]
            B = torch.from_numpy(np.asarray(g["B"], dtype=np.float64))
            Ub, d, Vbt = torch.linalg.svd(B, full_matrices=False)
            U = (Ub * d.sqrt()).contiguous().clone().requires_grad_()
            V = (Vbt.T * d.sqrt()).contiguous().clone().requires_grad_()
        else:
            U = (a.init_scale * torch.randn(P, r, generator=gen)).requires_grad_()
            V = (a.init_scale * torch.randn(Q, r, generator=gen)).requires_grad_()
        params.append((U, V))
    if warm is not None:
        warm.close()
    flat = [t for uv in params for t in uv]
    nvar = sum(t.numel() for t in flat)

    opt = torch.optim.LBFGS(flat, lr=1.0, max_iter=a.max_iter, history_size=a.history,
                            line_search_fn="strong_wolfe", tolerance_grad=a.tolerance_grad,
                            tolerance_change=a.tolerance_change)

    def closure():
        opt.zero_grad()
        reg = sum((U * U).sum() + (V * V).sum() for U, V in params)
        G = sg * reg + xent_sum(f0 + predictions(blocks, params, a.contract), labels) / a.lam
        G.backward()
        return G

    def current_B():
        with torch.no_grad():
            return [U @ V.T for U, V in params]

    trace = []
    target = None if a.target is None else a.target + a.rtol * abs(a.target)
    wall = cpu = 0.0
    reached = None
    best = None
    bestG = math.inf
    stall = 0
    status = "budget"

    def record(step, G):
        Bs = current_B()
        F, loss, pen = exact_F(blocks, f0, labels, a.lam, a.gamma, Bs, a.contract)
        with torch.no_grad():
            uv = sg * sum(float((U * U).sum() + (V * V).sum()) for U, V in params)
        st = opt.state[opt._params[0]]
        row = {"step": step, "iters": int(st.get("n_iter", 0)),
               "evals": int(st.get("func_evals", 0)), "wall_s": wall, "cpu_s": cpu,
               "G": G, "F": F, "loss": loss, "penalty": pen, "uv_penalty": uv}
        if a.target is not None:
            row["rel_gap"] = (F - a.target) / abs(a.target)
        trace.append(row)
        if not a.quiet:
            gap = f" gap {row['rel_gap']:+.3e}" if a.target is not None else ""
            print(f"step {step:5d} it {row['iters']:6d} ev {row['evals']:6d} wall {wall:8.2f} "
                  f"cpu {cpu:8.2f} G {G:.10e} F {F:.10e}{gap}", file=sys.stderr, flush=True)
        return row

    record(0, float(closure()))
    for step in range(1, a.max_steps + 1):
        w0, c0 = time.perf_counter(), time.process_time()
        opt.step(closure)  # returns G at the start of the step; G at its end is measured below
        wall += time.perf_counter() - w0
        cpu += time.process_time() - c0
        with torch.no_grad():  # not timed: the evaluation, as F below
            reg = sum((U * U).sum() + (V * V).sum() for U, V in params)
            Gend = float(sg * reg + xent_sum(f0 + predictions(blocks, params, a.contract),
                                                labels) / a.lam)
        row = record(step, Gend)
        if not math.isfinite(Gend):
            status = "non-finite"
            break
        if best is None or row["F"] < best["F"]:
            best = row
        if target is not None and reached is None and row["F"] <= target:
            reached = row
            if not a.keep_going:
                status = "reached"
                break
        if Gend < bestG:
            bestG, stall = Gend, 0
        else:
            stall += 1
            if stall >= a.stall_steps:
                status = "stalled"
                break
        if wall >= a.budget:
            status = "budget"
            break
    else:
        status = "max_steps"

    final = trace[-1]
    per_block = []
    with torch.no_grad():
        for (name, _, _), (U, V) in zip(blocks, params):
            B = U @ V.T
            s = torch.linalg.svdvals(B)
            per_block.append({"block": name, "uv_sq": float((U * U).sum() + (V * V).sum()),
                              "two_nuclear": 2.0 * float(s.sum()),
                              "rank_1e-8": int((s > 1e-8 * s[0]).sum()) if s[0] > 0 else 0})
    summary = {
        "problem": a.problem, "N": N, "C": C, "lambda": a.lam, "gamma": a.gamma,
        "variables": nvar, "threads": a.threads, "seed": a.seed,
        "init_scale": a.init_scale, "warm": a.warm, "ranks": a.ranks,
        "history": a.history, "max_iter": a.max_iter, "tolerance_grad": a.tolerance_grad,
        "tolerance_change": a.tolerance_change, "contract": a.contract, "budget": a.budget,
        "torch": torch.__version__, "load_s": t_load, "status": status,
        "target": a.target, "rtol": a.rtol,
        "reached": reached is not None,
        "reach_wall_s": reached["wall_s"] if reached else None,
        "reach_cpu_s": reached["cpu_s"] if reached else None,
        "reach_step": reached["step"] if reached else None,
        "reach_iters": reached["iters"] if reached else None,
        # the crossing happened during the reaching step: after the previous step's times
        "reach_prev_wall_s": trace[reached["step"] - 1]["wall_s"] if reached else None,
        "reach_prev_cpu_s": trace[reached["step"] - 1]["cpu_s"] if reached else None,
        "best_F": best["F"] if best else final["F"],
        "best_rel_gap": best.get("rel_gap") if best else final.get("rel_gap"),
        "best_wall_s": best["wall_s"] if best else final["wall_s"],
        "best_cpu_s": best["cpu_s"] if best else final["cpu_s"],
        "final": {k: final[k] for k in ("step", "iters", "evals", "wall_s", "cpu_s", "G", "F",
                                        "loss", "penalty", "uv_penalty")},
        "blocks": per_block,
    }
    print(json.dumps(summary), flush=True)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"summary": summary, "trace": trace}, f, indent=1)
    if a.csv:
        keys = list(trace[0].keys())
        with open(a.csv, "w") as f:
            f.write(",".join(keys) + "\n")
            for row in trace:
                f.write(",".join(repr(row.get(k)) for k in keys) + "\n")
    if a.save:
        with h5py.File(a.save, "w") as f:
            for (name, _, _), (U, V) in zip(blocks, params):
                g = f.create_group(name)
                g["U"], g["V"] = U.detach().numpy(), V.detach().numpy()
                g["B"] = (U @ V.T).detach().numpy()


if __name__ == "__main__":
    main()
