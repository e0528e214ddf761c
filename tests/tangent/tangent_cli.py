"""Shared by the Python tests of this folder: the atf binary (ATF) and running it."""
import os
import subprocess

ATF = os.environ["ATF"]
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1")


def run(*args, expect=0, timeout=300):
    """Run `atf ARGS`; AssertionError with both streams unless it exits with `expect`."""
    p = subprocess.run([ATF, *map(str, args)], capture_output=True, text=True, env=ENV,
                       timeout=timeout)
    if p.returncode != expect:
        raise AssertionError(f"atf {' '.join(map(str, args))}: exit {p.returncode} (expected "
                             f"{expect})\nstdout: {p.stdout}\nstderr: {p.stderr}")
    return p
