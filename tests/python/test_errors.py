"""Errors raise subclasses of atf.Error carrying the library's one-line message (the message the
CLI prints for the same input); infeasible problems raise atf.Infeasible with the result; Ctrl-C
during atf.solve returns the last iterate with status interrupted."""
import os
import signal
import subprocess
import sys

import h5py
import numpy as np

import atf
import atf_env
import pyprob

count = 0
d = atf_env.scratch()


def raises(cls, fn, what, cli=None):
    """fn() must raise cls; with cli (argv of an atf command), the CLI's stderr must carry the
    same message."""
    global count
    count += 1
    try:
        fn()
    except cls as e:
        if cli is not None:
            count += 1
            p = atf_env.run(*cli, ok=(1, 2, 3))
            atf_env.check(e.message and e.message in p.stderr,
                          f"{what}: message {e.message!r} not in the CLI's {p.stderr!r}")
        return e
    except Exception as e:  # noqa: BLE001 — the wrong class is the failure reported
        atf_env.check(False, f"{what}: raised {type(e).__name__}: {e}")
        return None
    atf_env.check(False, f"{what}: nothing raised")
    return None


e = raises(atf.InputError, lambda: atf.Penalty("pow:p=-1"), "bad penalty",
           cli=["penalty", "pow:p=-1"])
count += 1
atf_env.check(isinstance(e, atf.Error) and isinstance(e, ValueError) and e.code == "bad input",
              "InputError is an atf.Error and a ValueError")
missing = os.path.join(d, "missing.h5")
raises(atf.Error, lambda: atf.Problem.read(missing), "missing problem file",
       cli=["solve", missing, "-o", os.path.join(d, "x.h5")])

# a file with a NaN in r: the reader's message names the file and the item
good = os.path.join(d, "good.h5")
pyprob.build().write(good)
bad = os.path.join(d, "bad.h5")
with h5py.File(good, "r") as src, h5py.File(bad, "w") as dst:
    for k, v in src.attrs.items():
        dst.attrs[k] = v
    for k in src:
        src.copy(src[k], dst, k)
    r = dst["r"][...]
    r[3] = np.nan
    dst["r"][...] = r
e = raises(atf.InputError, lambda: atf.Problem.read(bad), "NaN in /r",
           cli=["solve", bad, "-o", os.path.join(d, "x.h5")])
count += 1
atf_env.check(e is not None and "/r" in e.message and bad in e.message, "message names file, item")

H, D, J, S, r, f0, labels = pyprob.arrays()
raises(atf.InputError, lambda: atf.Problem(r, [atf.Block.dense("W", J, 3, 3)], pyprob.N,
                                           pyprob.C), "dense J of the wrong shape")
raises(atf.InputError, lambda: atf.Problem(r, [atf.Block.factored("W", H, D)], pyprob.N, 3),
       "sizes that do not fit")
Jnan = J.copy()
Jnan[0, 0] = np.inf
raises(atf.InputError, lambda: atf.Problem(r, [atf.Block.dense("W", Jnan, 2, 2)], pyprob.N,
                                           pyprob.C), "non-finite J (the library's check)")
prob = atf.Problem.read(good)
raises(atf.InputError, lambda: atf.solve(prob, method="simplex"), "unknown method")
raises(atf.InputError, lambda: atf.solve(prob, method="lp"), "lp without diagonal + nuclear",
       cli=["solve", good, "-o", os.path.join(d, "x.h5"), "--method", "lp", "--quiet"])
raises(atf.InputError, lambda: atf.solve(prob, penalty="sq+nuclear"), "bad penalty override")
other = pyprob.build(seed=8)
Jwide = np.random.default_rng(3).standard_normal((pyprob.M, 16))
raises(atf.InputError, lambda: atf.solve(prob, warm=atf.baseline(atf.Problem(
    r, [atf.Block.dense("W1", Jwide, 4, 4)], pyprob.N, pyprob.C))), "warm start of another shape")
count += 1
atf_env.check(other.fingerprint != prob.fingerprint, "another problem, another fingerprint")

# infeasible: two equal constraint rows with different right-hand sides
Jinf = np.vstack([J[:1], J[:1], J[2:]])
rinf = r.copy()
rinf[1] = rinf[0] + 1.0
inf_prob = atf.Problem(rinf, [atf.Block.dense("W", Jinf, 2, 2)], pyprob.N, pyprob.C)
inf_path = os.path.join(d, "inf.h5")
inf_prob.write(inf_path)
e = raises(atf.Infeasible, lambda: atf.solve(inf_prob), "infeasible solve")
count += 2
atf_env.check(e is not None and e.result is not None and e.result.status == "infeasible"
              and e.result.ls_residual > 0, "Infeasible carries the least-squares result")
p = atf_env.run("solve", inf_path, "-o", os.path.join(d, "inf-r.h5"), "--quiet", ok=(3,))
atf_env.check(e is not None and e.message in p.stderr, "Infeasible carries the CLI's message")
raises(atf.Infeasible, lambda: atf.baseline(inf_prob), "infeasible baseline")

# Ctrl-C: a child solves with tolerances no iterate meets; SIGINT ends it as interrupted
CHILD = r"""
import sys, numpy as np, atf
from atf import _lib, result
rng = np.random.default_rng(1)
M, P, Q = 120, 30, 30
prob = atf.Problem(rng.standard_normal(M), [atf.Block.dense("W", rng.standard_normal((M, P * Q)),
                   P, Q, penalty="pow:p=1.5")], M)
s = _lib.lib.atf_settings_default()
s.eps_abs, s.eps_rel, s.max_iter = 0.0, 1e-300, 1000000000
print("ready", flush=True)
res = result._solve(prob, s, None, None)
print(res.status, res.iterations, int(np.all(np.isfinite(res.blocks["W"].B))), flush=True)
"""
child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
line = child.stdout.readline()
import time  # noqa: E402
time.sleep(1.5)
child.send_signal(signal.SIGINT)
try:
    out, _ = child.communicate(timeout=60)
except subprocess.TimeoutExpired:
    child.kill()
    out = "hung"
fields = out.split()
count += 1
atf_env.check(line.strip() == "ready" and child.returncode == 0 and len(fields) == 3
              and fields[0] == "interrupted" and int(fields[1]) > 0 and fields[2] == "1",
              f"Ctrl-C returns the last iterate as interrupted (child said {out!r}, "
              f"exit {child.returncode})")
# an iteration limit warns at the caller's line, not the package's (atf.solve, atf.cli)
import warnings  # noqa: E402
for call in (lambda: atf.solve(pyprob.build(), "abs", loss="squared:lambda=0.01",
                               method="newton", max_iter=1),):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    limit = [w for w in caught if issubclass(w.category, atf.IterationLimitWarning)]
    count += 1
    atf_env.check(limit and limit[0].filename == __file__,
                  f"the warning names the caller's file: {[w.filename for w in limit]}")
atf_env.finish("test_errors", count)
