"""The Python package as a user installs it: `pip install --no-build-isolation .` of a clean
copy of the source tree into a fresh venv made with --system-site-packages (Debian's numpy and
meson-python), then, from another directory and with no atf variable in the environment:
`import atf`, its version against the C library's, the files installed beside it (py.typed
included), a solve, a problem file read (through the HDF5 checker bundled beside libatf.so), and
the `atf` console script.

usage: test_pip_install.py SOURCE_ROOT SCRATCH VERSION"""
import os
import shutil
import subprocess
import sys

source, scratch, version = sys.argv[1:4]
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
src = os.path.join(scratch, "src")


def run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.exit("FAIL: %s\n%s%s" % (" ".join(cmd), proc.stdout[-4000:], proc.stderr[-4000:]))
    return proc


# A clean copy: the files git knows (tracked, or new and not ignored) — no build directory, no
# data; outside a git checkout, the tree less its build folders.
listed = subprocess.run(["git", "-C", source, "ls-files", "-co", "--exclude-standard", "-z"],
                        capture_output=True)
if listed.returncode == 0:
    for rel in filter(None, listed.stdout.decode().split("\0")):
        if os.path.isfile(os.path.join(source, rel)):
            os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
            shutil.copy2(os.path.join(source, rel), os.path.join(src, rel))
else:
    shutil.copytree(source, src, ignore=shutil.ignore_patterns("build*", "data", ".git"))

venv = os.path.join(scratch, "venv")
# no atf variable, no PYTHONPATH (the source tree's package), no preloaded sanitizer runtime
clean_env = {k: v for k, v in os.environ.items()
             if not k.startswith("ATF") and k not in ("PYTHONPATH", "LD_LIBRARY_PATH",
                                                       "LD_PRELOAD")}
run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], env=clean_env)
py = os.path.join(venv, "bin", "python")
run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--quiet", src],
    env=clean_env, cwd=scratch)
shutil.rmtree(src)  # the installed package must not need its sources

elsewhere = os.path.join(scratch, "elsewhere")
os.makedirs(elsewhere)
check = r'''
import os, sys
import numpy as np
import atf
pkg = os.path.dirname(atf.__file__)
assert pkg.startswith(sys.prefix), (pkg, sys.prefix)
assert atf.__version__ == sys.argv[1], (atf.__version__, sys.argv[1])
for f in ("libatf.so", "libatf_cli.so", "atf-h5check", os.path.join("bin", "atf"), "py.typed"):
    assert os.path.isfile(os.path.join(pkg, f)), (f, os.listdir(pkg))
# min ||B||^2 s.t. <G_m, B> = r_m for a 2 x 3 block: the min-norm interpolant
rng = np.random.default_rng(1)
J = rng.standard_normal((4, 6))
r = rng.standard_normal(4)
prob = atf.Problem(r, [atf.Block.dense("W", J, 2, 3, penalty="sq")], 4)
res = atf.baseline(prob)              # the min-norm interpolant (Theorem 1)
B = res.blocks["W"].B
x = np.linalg.lstsq(J, r, rcond=None)[0]
assert np.allclose(B.ravel(), x, atol=1e-8), (B.ravel(), x)
res = atf.solve(prob, loss="squared:lambda=0.1")
assert res.status == "solved" and res.pg_residual <= 1e-6, (res.status, res.pg_residual)
prob.write("p.h5")
again = atf.Problem.read("p.h5")
assert again.M == 4
summary = atf.cli(["solve", "p.h5", "-o", "r.h5", "--quiet"], progress=False)  # libatf_cli.so
assert summary["status"] == "solved", summary
print("ok", atf.__version__)
'''
out = run([py, "-c", check, version], env=clean_env, cwd=elsewhere).stdout
print(out, end="")
assert out.strip().startswith("ok"), out
out = run([os.path.join(venv, "bin", "atf"), "--version"], env=clean_env, cwd=elsewhere).stdout
print("atf --version:", out.strip())
assert version in out, out
shutil.rmtree(scratch)
print("pip install: ok")
