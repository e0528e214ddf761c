"""progress=True of atf.features and atf.ntk: lines on Python's sys.stderr (what
contextlib.redirect_stderr sees; nothing on the process's fd 2), throttled — off a terminal a
line every INTERVAL seconds and one at the end, on a terminal one line updated in place — and
nothing without it."""
import contextlib
import io
import os
import subprocess
import sys

import numpy as np
import torch

import atf
import atf_env
from atf import _progress

nn = torch.nn
check = atf_env.check


class Tty(io.StringIO):
    def isatty(self):
        return True


torch.manual_seed(0)
rng = np.random.default_rng(0)
cnn = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
mlp = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
Xc, yc = rng.standard_normal((40, 1, 6, 6)), np.arange(40) % 3
Xm, ym = rng.standard_normal((30, 4)), np.arange(30) % 2

# off a terminal, the default interval: a fast call writes only its final line
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    p = atf.features(cnn, Xc, yc, Xc[:5], yc[:5], progress=True)
lines = buf.getvalue().splitlines()
check(len(lines) == 1 and lines[0].startswith("atf.features: 40 examples + 5 test, 4 blocks"),
      f"features, off a terminal: one final line, got {lines}")
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    atf.features(cnn, Xc, yc)
    atf.ntk(mlp, Xm)
check(buf.getvalue() == "", "nothing without progress=True")

# every step once the interval has passed (INTERVAL = 0): the phases show, then the end
_progress.INTERVAL = 0.0
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    atf.features(cnn, Xc, yc, progress=True)
text = buf.getvalue()
check("outputs at X 40/40 examples" in text and "dense Jacobian at X" in text and
      "backward passes of the factored layers 3/3 outputs" in text and
      text.rstrip().splitlines()[-1].startswith("atf.features: 40 examples, 4 blocks"),
      f"features, every step: the phases and the final line, got {text!r}")
check("\r" not in text, "off a terminal: whole lines, no carriage returns")
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    atf.ntk(cnn, Xc, Xc[:4], progress=True)
    atf.ntk(mlp, Xm, progress=True)
text = buf.getvalue()
check("atf.ntk: kernel blocks" in text and "atf.ntk: 40 x 4 examples, 4 blocks" in text and
      "kernel of 30 examples (C library)" in text, f"ntk: its phases, got {text!r}")
_progress.INTERVAL = 5.0

# a file-like object instead of sys.stderr
out = io.StringIO()
atf.ntk(mlp, Xm, Xm[:3], progress=out)
check(out.getvalue().startswith("atf.ntk: 30 x 3 examples"), "progress=a file: written there")

# on a terminal: one line rewritten in place (\r), ended by a newline
tty = Tty()
_progress.TTY_INTERVAL = 0.0
atf.features(cnn, Xc, yc, progress=tty)
text = tty.getvalue()
check(text.count("\n") == 1 and text.endswith("\n") and "\r" in text and
      text.split("\r")[-1].startswith("\033[Katf.features: 40 examples"),
      f"on a terminal: in place, one newline at the end, got {text!r}")
_progress.TTY_INTERVAL = 0.1

# Python's sys.stderr, not the process's: a child whose sys.stderr is a StringIO writes
# nothing to its fd 2
CHILD = r"""
import contextlib, io, sys, numpy as np, torch, atf
net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Flatten(), torch.nn.Linear(32, 2))
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    atf.features(net, np.random.default_rng(0).standard_normal((8, 1, 6, 6)), np.arange(8) % 2,
                 progress=True)
print(repr(buf.getvalue()))
"""
child = subprocess.run([sys.executable, "-W", "ignore", "-c", CHILD], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ))
check(child.returncode == 0 and "atf.features: 8 examples" in child.stdout and
      "atf.features" not in child.stderr,
      f"the lines go to sys.stderr, not fd 2 (stdout {child.stdout!r}, stderr "
      f"{child.stderr[-300:]!r})")
# Result.kernel: its Jacobians and tiles, and the final line
_progress.INTERVAL = 0.0
res_k = atf.solve(atf.features(mlp, Xm, ym), "sq", loss="squared:lambda=0.1")
out = io.StringIO()
K = res_k.kernel(Xm, progress=out, batch_size=10)
text = out.getvalue()
check("Result.kernel: kernel in 3 x 3 batches of 10 examples" in text and
      text.rstrip().splitlines()[-1].startswith("Result.kernel: done"),
      f"Result.kernel: its tiles and a final line, got {text!r}")
out = io.StringIO()
res_k.kernel(Xm, progress=out)
check(out.getvalue().rstrip().splitlines()[-1].startswith("Result.kernel: 30 x 30 examples"),
      f"Result.kernel unbatched: the final line, got {out.getvalue()!r}")
_progress.INTERVAL = 5.0

# the solver's progress (hooks.progress): the method, its step and residual, one final line
rng = np.random.default_rng(1)
N, C = 30, 2
prob = atf.Problem(rng.standard_normal(N * C),
                   [atf.Block.factored("W1", rng.standard_normal((N, 12)),
                                       rng.standard_normal((N * C, 10)))], samples=N, outputs=C)
_progress.INTERVAL = 0.0
out = io.StringIO()
res = atf.solve(prob, "abs", loss="squared:lambda=0.1", method="newton", progress=out)
text = out.getvalue().splitlines()
check(len(text) >= 2 and all(line.startswith("atf.solve: ") for line in text) and
      any("newton, step " in line and "residual" in line and "passes" in line for line in text),
      f"solve: newton's steps and residuals shown, got {text}")
check(text[-1].startswith(f"atf.solve: solved by newton after {res.iterations} iterations"),
      f"solve: the final line names status, method and steps, got {text[-1]!r}")
out = io.StringIO()
atf.baseline(prob, "cg", progress=out)
check("atf.baseline: cg, step " in out.getvalue(), f"baseline by CG: its steps, got "
      f"{out.getvalue()!r}")
# every iterative method reports under its own name (admm and alm on interpolation; fista,
# factored on the penalized loss; irls)
for method, pen, loss in [("admm", "abs", "interpolate"), ("alm", "abs", "interpolate"),
                          ("irls", "pow:p=1.5", "interpolate"),
                          ("fista", "abs", "squared:lambda=0.1"),
                          ("factored", "nuclear", "squared:lambda=0.1")]:
    out = io.StringIO()
    res = atf.solve(prob, pen, loss=loss, method=method, progress=out)
    shown = [line for line in out.getvalue().splitlines() if ", step " in line]
    # after a hand-over (factored's to newton, said in the note) the one handed to is named
    names = (f"atf.solve: {method}",) + (("atf.solve: newton",)
                                         if "newton continued" in res.method_note else ())
    check(shown and shown[0].startswith(names[0]) and
          all(line.startswith(names) for line in shown) and "residual" in shown[0],
          f"{method}: its steps shown under its name, got {shown} ({res.method_note})")
# the default (None): silent until AUTO_AFTER seconds have passed, then as True
buf = io.StringIO()
with contextlib.redirect_stderr(buf):
    atf.solve(prob, "abs", loss="squared:lambda=0.1", method="newton")
    atf.solve(prob, "abs", loss="squared:lambda=0.1", method="newton", progress=False)
check(buf.getvalue() == "", f"a quick solve with the default is silent, got {buf.getvalue()!r}")
_progress.AUTO_AFTER = 0.0
with contextlib.redirect_stderr(buf):
    atf.solve(prob, "abs", loss="squared:lambda=0.1", method="newton")
check("atf.solve: solved by newton" in buf.getvalue(),
      f"the default once AUTO_AFTER has passed: shown, got {buf.getvalue()!r}")
_progress.AUTO_AFTER, _progress.INTERVAL = 2.0, 5.0
try:
    atf.solve(prob, "abs", loss="squared:lambda=0.1", progress="yes")
    check(False, "progress='yes' refused")
except atf.InputError as e:
    check("progress must be True, False, None or a file-like object" in str(e), str(e))
atf_env.finish("test_loop_progress")
