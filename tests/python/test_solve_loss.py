"""atf.solve with a penalized loss and a method, and atf.baseline with a method, against
`atf solve` / `atf baseline` on the same problem file: the same code runs, so the blocks must
be equal bit for bit; verbose output goes through Python's sys.stderr (redirect_stderr sees it)
or a callback; bad arguments are refused with atf.InputError naming them."""
import contextlib
import io
import os
import warnings

import numpy as np

import atf
import atf_env
import pyprob

d = atf_env.scratch()
check = atf_env.check
prob = pyprob.build(penalty="sq")
path = os.path.join(d, "p.h5")
prob.write(path)
prob = atf.Problem.read(path)  # the file's problem, so that both sides solve the same bits


def blocks_of(file):
    return [b.B for b in atf.Result.read(file).blocks.values()]


def same(py_res, file, what):
    cli = blocks_of(file)
    ours = [b.B for b in py_res.blocks.values()]
    check(len(cli) == len(ours), f"{what}: {len(ours)} blocks vs {len(cli)}")
    for a, b in zip(ours, cli):
        check(a.shape == b.shape and np.array_equal(a, b),
              f"{what}: blocks differ from the CLI's (max |diff| "
              f"{np.max(np.abs(a - b)) if a.shape == b.shape else 'shape'})")


for loss, method in [("xent:lambda=0.5", "newton"), ("xent:lambda=0.5", "fista"),
                     ("squared:lambda=0.3", "auto"), ("interpolate", "admm"),
                     ("interpolate", "alm")]:
    res = atf.solve(prob, loss=loss, method=method, tol=1e-8)
    out = os.path.join(d, f"r-{method}.h5")
    atf_env.run("solve", path, "-o", out, "--loss", loss, "--method", method, "--tol", "1e-8",
                "--quiet")
    check(res.status == "solved", f"{loss} {method}: status {res.status}")
    check(res.loss == loss or loss == "interpolate", f"{loss}: result names loss {res.loss!r}")
    if method != "auto":
        check(res.method == method, f"{loss}: method {res.method}, asked {method}")
    else:
        check(res.method == "newton" and "auto" in res.method_note,
              f"auto for {loss}: {res.method} ({res.method_note})")
    if loss != "interpolate":
        check(res.pg_residual <= 1e-6 and np.isclose(res.objective,
                                                     res.loss_value + res.penalty_value),
              f"{loss} {method}: pg {res.pg_residual}, objective split")
    same(res, out, f"solve {loss} {method}")

# the factored method in process: the CLI's blocks bit for bit, newton's optimum, and auto's
# choice where every block is nuclear
for method in ["factored", "newton", "auto"]:
    res = atf.solve(prob, "nuclear:scale=0.05", loss="xent:lambda=0.5", method=method, tol=1e-10)
    out = os.path.join(d, f"r-nuclear-{method}.h5")
    atf_env.run("solve", path, "-o", out, "--penalty", "nuclear:scale=0.05", "--loss",
                "xent:lambda=0.5", "--method", method, "--tol", "1e-10", "--quiet")
    check(res.status == "solved" and res.pg_residual <= 1e-10,
          f"nuclear {method}: {res.status}, pg {res.pg_residual}")
    check(res.method == ("factored" if method == "auto" else method),
          f"nuclear {method}: ran {res.method} ({res.method_note})")
    same(res, out, f"solve nuclear {method}")
    if method == "factored":
        factored_objective = res.objective
    else:
        check(abs(res.objective - factored_objective) <= 1e-8 * abs(res.objective),
              f"nuclear: {method} {res.objective!r} vs factored {factored_objective!r}")

# auto for balanced+balanced: factored with xent from a cold start (newton's point, certified);
# newton from a warm start (its λ continuation) and with the squared loss
bb = {m: atf.solve(prob, "balanced+balanced", loss="xent:lambda=0.5", method=m, tol=1e-10)
      for m in ["auto", "newton"]}
check(bb["auto"].method == "factored" and "balanced" in bb["auto"].method_note,
      f"auto for balanced+balanced, xent: {bb['auto'].method} ({bb['auto'].method_note})")
check(bb["auto"].status == "solved" and bb["auto"].pg_residual <= 1e-10 and
      abs(bb["auto"].objective - bb["newton"].objective) <= 1e-8 * abs(bb["newton"].objective),
      f"balanced+balanced: auto {bb['auto'].objective!r} vs newton {bb['newton'].objective!r}")
warm = atf.solve(prob, "balanced+balanced", loss="xent:lambda=0.4", warm=bb["newton"])
sq_bb = atf.solve(prob, "balanced+balanced", loss="squared:lambda=0.3")
check(warm.method == "newton" and "warm start" in warm.method_note,
      f"auto for balanced+balanced from a warm start: {warm.method} ({warm.method_note})")
check(sq_bb.method == "newton", f"auto for balanced+balanced, squared: {sq_bb.method}")

for method in ["gram", "cg", "auto"]:
    res = atf.baseline(prob, method=method)
    out = os.path.join(d, f"b-{method}.h5")
    atf_env.run("baseline", path, "-o", out, "--method", method, "--quiet")
    same(res, out, f"baseline {method}")

# verbose: the iteration table through sys.stderr (seen by redirect_stderr) or a callback
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    atf.solve(prob, loss="xent:lambda=0.5", verbose=True)
check("atf newton: loss xent:lambda=0.5" in buf.getvalue(),
      f"verbose output not seen through sys.stderr: {buf.getvalue()[:200]!r}")
lines = []
atf.solve(prob, loss="squared:lambda=0.3", method="fista", verbose=True, log=lines.append)
check(any("atf fista" in s for s in lines), f"log callback saw {lines[:3]}")
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    atf.solve(prob, loss="squared:lambda=0.3")
check(buf.getvalue() == "", "a quiet solve wrote to stderr")

# checkpoints: a solve stopped by its iteration limit keeps its file, and the same call with a
# larger limit goes on from it to the uninterrupted answer, bit for bit (as atf solve
# --checkpoint); the file then goes; another solve's checkpoint is refused naming the file
cp = os.path.join(d, "cp.h5")
kw = dict(loss="xent:lambda=0.5", method="newton", tol=1e-10, checkpoint=cp, checkpoint_every=0)
ref = atf.solve(prob, loss="xent:lambda=0.5", method="newton", tol=1e-10)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    part = atf.solve(prob, max_iter=2, **kw)
check(part.status == "max_iterations" and os.path.exists(cp),
      f"checkpoint at the iteration limit: status {part.status}, file {os.path.exists(cp)}")
res = atf.solve(prob, **kw)
check(res.status == "solved" and res.iterations == ref.iterations and not os.path.exists(cp),
      f"resumed: {res.status} after {res.iterations} (uninterrupted {ref.iterations}), file "
      f"{os.path.exists(cp)}")
for a, b in zip(res.blocks.values(), ref.blocks.values()):
    check(np.array_equal(a.B, b.B), "the resumed solve's B differs from the uninterrupted one's")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    atf.solve(prob, max_iter=2, **kw)
try:
    atf.solve(prob, **dict(kw, loss="xent:lambda=0.25"))
    check(False, "another solve's checkpoint accepted")
except atf.InputError as e:
    check(cp in str(e) and "another solve" in str(e), f"foreign checkpoint: {e}")
os.remove(cp)

# atf.baseline(method="cg", checkpoint=...): the same contract for the NTK interpolant's CG
ref = atf.baseline(prob, "cg")
check(ref.status == "solved" and ref.iterations > 1, f"cg baseline: {ref.status}, "
      f"{ref.iterations} steps")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    part = atf.baseline(prob, "cg", max_iter=1, checkpoint=cp, checkpoint_every=0)
check(part.status == "max_iterations" and os.path.exists(cp),
      f"cg checkpoint at the step limit: status {part.status}, file {os.path.exists(cp)}")
res = atf.baseline(prob, "cg", checkpoint=cp)
check(res.status == "solved" and res.iterations == ref.iterations and not os.path.exists(cp)
      and all(np.array_equal(a.B, b.B) for a, b in zip(res.blocks.values(), ref.blocks.values())),
      f"cg resumed: {res.status} after {res.iterations} (uninterrupted {ref.iterations}), file "
      f"{os.path.exists(cp)}")

# ADMM by PCG (linsys="pcg") with checkpoint and precond_file: stopped at its limit both files
# stay; the resumed call reads the kept factor and ends at the uninterrupted answer, bit for bit;
# both files then go
pc = os.path.join(d, "factor.h5")
kw = dict(method="admm", checkpoint=cp, checkpoint_every=0, precond_file=pc, linsys="pcg")
ref = atf.solve(prob, "balanced+balanced", method="admm", linsys="pcg")
check(ref.linsys == "pcg", f"admm by PCG: linsys {ref.linsys!r}")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    part = atf.solve(prob, "balanced+balanced", max_iter=2, **kw)
check(part.status == "max_iterations" and os.path.exists(cp) and os.path.exists(pc),
      f"admm by PCG at the iteration limit: {part.status}, files {os.path.exists(cp)} "
      f"{os.path.exists(pc)}")
lines = []
res = atf.solve(prob, "balanced+balanced", verbose=True, log=lines.append, **kw)
text = "".join(lines)
check(res.status == "solved" and res.iterations == ref.iterations and ref.iterations > 2
      and "factor read from" in text and not os.path.exists(cp) and not os.path.exists(pc)
      and all(np.array_equal(a.B, b.B)
              for a, b in zip(res.blocks.values(), ref.blocks.values())),
      f"admm resumed: {res.status} after {res.iterations} (uninterrupted {ref.iterations}), "
      f"files {os.path.exists(cp)} {os.path.exists(pc)}")

# continuation: from a warm start at another λ, a nonconvex penalty goes through bridges (the
# note names them) unless continuation=0; both answers solved
w = atf.solve(prob, "balanced+balanced", loss="xent:lambda=2", method="newton")
for ratio, bridged in [(2.0, True), (0, False)]:
    res = atf.solve(prob, "balanced+balanced", loss="xent:lambda=0.2", warm=w, continuation=ratio)
    check(res.status == "solved" and ("continuation" in res.method_note) == bridged,
          f"continuation={ratio}: {res.status}, note {res.method_note!r}")

# refused arguments name themselves
for kw, word in [({"max_iter": 2**40}, "max_iter"), ({"max_iter": 0}, "max_iter"),
                 ({"loss": "xent:lambda=-1"}, "loss"), ({"loss": "hinge"}, "loss"),
                 ({"method": "cg"}, "method"), ({"method": "newton"}, "newton"),
                 ({"penalty": "sq\0nuclear"}, "NUL"), ({"tol": float("nan")}, "tol"),
                 ({"newton_rank": 5000}, "newton_rank"),
                 ({"continuation": 0.5, "loss": "xent:lambda=0.5"}, "continuation"),
                 ({"continuation": -1.0}, "continuation"),
                 ({"checkpoint": "", "loss": "xent:lambda=0.5"}, "checkpoint"),
                 ({"checkpoint_every": -1.0}, "checkpoint_every")]:
    try:
        atf.solve(prob, **kw)
        check(False, f"{kw} accepted")
    except atf.InputError as e:
        check(word in str(e), f"{kw}: message {e}")
try:
    atf.baseline(prob, method="newton")
    check(False, "baseline method newton accepted")
except atf.InputError as e:
    check("gram" in str(e), f"baseline method: {e}")
atf_env.finish("test_solve_loss")
