"""Shared by the Python-package tests: the atf binary, a scratch directory and a check helper.

meson runs them with PYTHONPATH=drivers/python and ATF_LIBRARY=the built libatf.so, and ATF the
built `atf` command, so that the package and the CLI are the same build."""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

ATF = os.environ["ATF"]
failures = []


checks = 0  # every check() so far (finish() reports it unless given a count)


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def run(*args, ok=(0,)):
    p = subprocess.run([ATF, *map(str, args)], capture_output=True, text=True, timeout=300)
    if p.returncode not in ok:
        raise RuntimeError(f"atf {' '.join(map(str, args))}: exit {p.returncode}: {p.stderr}")
    return p


def raises(fn, cls, needles, what):
    """Check that fn() raises cls with every needle in its message."""
    try:
        fn()
    except cls as e:
        msg = str(e)
        missing = [n for n in needles if n not in msg]
        check(not missing, f"{what}: message {msg!r} lacks {missing}")
        return
    except Exception as e:  # noqa: BLE001 — the wrong class is the failure reported
        check(False, f"{what}: raised {type(e).__name__}: {e}, expected {cls.__name__}")
        return
    check(False, f"{what}: nothing raised")


def scratch():
    """A scratch directory, removed when the test exits."""
    d = tempfile.mkdtemp(prefix="atf-py-")
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


def finish(name, count=None):
    count = checks if count is None else count
    print(f"{name}: {count - len(failures)}/{count} checks passed")
    sys.exit(1 if failures else 0)
