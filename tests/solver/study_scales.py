"""Robustness study (not a test): ADMM across penalty families and scales 1e-4 … 1e2.

One random factored problem (N = 30, C = 2, blocks 20×15 and 15×2, seed 5), default settings,
iteration limit 20000. Prints a Markdown table: exit code, iterations, objective, stationarity.
usage: ATF=build/drivers/atf /usr/bin/python3 tests/solver/study_scales.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import atf_testlib as T  # noqa: E402

FAMILIES = ("sq", "zsq", "pow:p=3", "nuclear", "abs", "pow:p=1.5", "logsq", "sq+sq", "sq+abs")
SCALES = (1e-4, 1e-2, 1.0, 1e2)


def spec(family, scale):
    if "+" in family:
        return "+".join(f"{t}:scale={scale:g}" for t in family.split("+"))
    return f"{family},scale={scale:g}" if ":" in family else f"{family}:scale={scale:g}"


def main():
    import tempfile
    rng = np.random.default_rng(5)
    problem = T.factored_problem(rng, 30, 2, [(20, 15), (15, 2)])
    print("| penalty | exit | iterations | objective | stationarity |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for family in FAMILIES:
            for scale in SCALES:
                s = spec(family, scale)
                pfile = problem.with_penalty(s).write(os.path.join(d, "p.h5"))
                code, js, err = T.solve_json("solve", pfile, "-o", os.path.join(d, "r.h5"),
                                             "--max-iter", "20000")
                print(f"| `{s}` | {code} | {js['iterations']} | {js['objective']:.6e} | "
                      f"{js['stationarity']:.1e} |")


if __name__ == "__main__":
    main()
