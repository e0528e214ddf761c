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
atf_env.finish("test_loop_progress")
