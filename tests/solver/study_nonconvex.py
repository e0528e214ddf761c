"""Robustness study (not a test): nonconvex penalties from the default start (the least-squares
point) and from a cold start B = 0 (through --warm), 360 runs.

Seeds 200–203; shapes [(30, 1)] (a vector block), [(8, 6), (6, 2)] with N = 10, and
[(20, 15), (15, 2)] with N = 30, C = 2; families abs, logsq, pow:p=0.5, pow:p=1.5, sq+abs at
scales 1e-4, 1e-2, 1; iteration limit 5000, default tolerances. Prints failures (exit ≠ 0) and
total iterations per start and family.
usage: ATF=build/drivers/atf /usr/bin/python3 tests/solver/study_nonconvex.py"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import atf_testlib as T  # noqa: E402
from test_references import zero_warm_start  # noqa: E402

SHAPES = (([(30, 1)], 10, 1), ([(8, 6), (6, 2)], 10, 1), ([(20, 15), (15, 2)], 30, 2))
FAMILIES = ("abs", "logsq", "pow:p=0.5", "pow:p=1.5", "sq+abs")


def spec(family, scale):
    if "+" in family:
        return "+".join(f"{t}:scale={scale:g}" for t in family.split("+"))
    return f"{family},scale={scale:g}" if ":" in family else f"{family}:scale={scale:g}"


def main():
    stats = {}
    with tempfile.TemporaryDirectory() as d:
        p, r0, rz, r = (os.path.join(d, f) for f in ("p.h5", "r0.h5", "z.h5", "r.h5"))
        for seed in range(200, 204):
            rng = np.random.default_rng(seed)
            for shapes, N, C in SHAPES:
                problem = T.factored_problem(rng, N, C, shapes)
                for family in FAMILIES:
                    for scale in (1e-4, 1e-2, 1.0):
                        problem.with_penalty(spec(family, scale)).write(p)
                        c1, j1, _ = T.solve_json("solve", p, "-o", r0, "--max-iter", "5000")
                        zero_warm_start(r0, rz)
                        c2, j2, _ = T.solve_json("solve", p, "-o", r, "--warm", rz,
                                                 "--max-iter", "5000")
                        for start, code, js in (("least squares", c1, j1), ("zero", c2, j2)):
                            s = stats.setdefault((start, family), [0, 0, 0])
                            s[0] += 1
                            s[1] += code != 0
                            s[2] += js["iterations"]
    print("| start | family | runs | not converged | total iterations |")
    print("|---|---|---|---|---|")
    for (start, family), (runs, fails, its) in sorted(stats.items()):
        print(f"| {start} | `{family}` | {runs} | {fails} | {its} |")


if __name__ == "__main__":
    main()
