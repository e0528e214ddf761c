"""atf.solve and atf.baseline in process against `atf solve` / `atf baseline` on the same problem
file: the same library on the same data gives the same bits."""
import os
import warnings

import h5py
import numpy as np

import atf
import atf_env
import pyprob

count = 0
d = atf_env.scratch()
path = os.path.join(d, "p.h5")
pyprob.build().write(path)
prob = atf.Problem.read(path)
SCALARS = ["objective", "iterations", "primal_residual", "dual_residual", "constraint_residual",
           "stationarity"]


def compare(res, cli_path, what):
    global count
    with h5py.File(cli_path, "r") as f:
        status = f.attrs["status"]
        status = status.decode() if isinstance(status, bytes) else str(status)
        count += 2 + len(SCALARS)
        atf_env.check(res.status == status, f"{what}: status {res.status} vs {status}")
        for k in SCALARS:
            a, b = getattr(res, k), f.attrs[k]
            atf_env.check(a == b or (np.isnan(a) and np.isnan(b)), f"{what}: {k} {a!r} vs {b!r}")
        same = all(np.array_equal(res.blocks[n].B, f["blocks"][n]["B"][...]) and
                   all(np.array_equal(getattr(res.blocks[n], v), f["blocks"][n][v][...])
                       for v in ("d", "s1", "sigma", "s2"))
                   for n in ("W1", "W2", "W3"))
        atf_env.check(same, f"{what}: B, d, s1, sigma, s2 bitwise equal")


for spec, structure in [("sq", "layer"), ("pow:p=1.5", "layer"), ("sq+abs", "diagonal")]:
    out = os.path.join(d, f"cli-{structure}.h5")
    atf_env.run("solve", path, "-o", out, "--quiet", "--penalty", spec, "--structure", structure,
                "--tol", "1e-7", ok=(0, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", atf.IterationLimitWarning)
        res = atf.solve(prob, penalty=spec, structure=structure, tol=1e-7)
    compare(res, out, f"solve {spec} {structure}")
count += 1
atf_env.check([b.penalty for b in prob.blocks] == ["sq"] * 3, "a penalty override is per solve")

base = atf.baseline(prob)
atf_env.run("baseline", path, "-o", os.path.join(d, "cli-base.h5"), "--quiet")
compare(base, os.path.join(d, "cli-base.h5"), "baseline")

# result files: Python writes what the CLI reads and the reverse
res = atf.solve(prob)
rpath = os.path.join(d, "py.h5")
res.write(rpath)
again = atf.Result.read(rpath)
count += 3
atf_env.check(all(np.array_equal(again.blocks[n].B, res.blocks[n].B) for n in res.blocks),
              "result round trip")
atf_env.check(again.problem_fingerprint == prob.fingerprint, "result records the fingerprint")
atf_env.check(res.status == "solved" and res.constraint_residual < 1e-6, "solved to tolerance")
warm_cli = os.path.join(d, "warm-cli.h5")
atf_env.run("solve", path, "-o", warm_cli, "--quiet", "--warm", rpath)
warm = atf.solve(prob, warm=again)
compare(warm, warm_cli, "warm start from a Python result")

# an iteration-limit stop returns the last iterate with a warning
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    short = atf.solve(prob, penalty="abs", max_iter=2, tol=1e-12)
count += 2
atf_env.check(short.status == "max_iterations" and short.iterations == 2, "max_iter stop")
atf_env.check(any(issubclass(w.category, atf.IterationLimitWarning) for w in caught),
              "max_iter warns")
# views stay valid after the result object is dropped from the caller's names
B = atf.baseline(prob).blocks["W2"].B
count += 1
atf_env.check(B.shape == (2, 2) and np.all(np.isfinite(B)), "block view outlives its name")

# the method table as `atf methods --json` has it; the linear systems as settings: the same bits
# as `atf solve --linsys`, and the backend named in the result
import json  # noqa: E402
rows = atf.methods()
cli_rows = json.loads(atf_env.run("methods", "--json").stdout)
count += 3
atf_env.check(rows == cli_rows, f"atf.methods() and `atf methods --json` differ: {rows}")
atf_env.check([r["name"] for r in rows if r["penalized"]] == ["fista", "newton", "factored"],
              "penalized")
atf_env.check(set(atf.result.SOLVE_METHODS) ==
              {"auto"} | {r["name"] for r in rows if not r["baseline"]}, "SOLVE_METHODS")
for linsys, backend in (("direct", "cholesky"), ("pcg", "pcg")):
    out = os.path.join(d, f"cli-{linsys}.h5")
    atf_env.run("solve", path, "-o", out, "--quiet", "--linsys", linsys)
    res = atf.solve(prob, linsys=linsys)
    compare(res, out, f"linsys {linsys}")
    count += 1
    atf_env.check(res.linsys == backend, f"linsys {linsys}: the result names {res.linsys!r}")
for kw in (dict(linsys="gram"), dict(precond="default"), dict(memory_fraction=1.5),
           dict(gram_max_rows=-1)):
    count += 1
    try:
        atf.solve(prob, **kw)
        atf_env.check(False, f"{kw} accepted")
    except atf.InputError as e:
        atf_env.check(list(kw)[0] in str(e), f"{kw}: {e}")
atf_env.finish("test_solve", count)
