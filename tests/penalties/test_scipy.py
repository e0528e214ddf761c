"""Cross-check of the penalty calculus against SciPy (an independent reference in another
language): ω̃, the prox objective, ⊕ and the factors of pen_eval's output are recomputed with
scipy.optimize.minimize_scalar on bracketed log-scale searches, nested for joints.

usage: test_scipy.py PEN_EVAL
"""
import math
import subprocess
import sys

import numpy as np
from scipy.optimize import minimize_scalar


def omega(term, x):
    """ω(1 + x) for one parsed term (family, p, scale), x ≥ 0 (array or scalar)."""
    fam, p, g = term
    x = np.asarray(x, dtype=float)
    if fam == "sq":
        return g * x * x
    if fam == "abs":
        return g * x
    if fam == "pow":
        return g * np.power(x, p)
    if fam == "zsq":
        return g * ((1 + x) ** 2 - 1)
    if fam == "logsq":
        return g * np.log1p(x) ** 2
    if fam == "balanced":  # z² − 1 − 2 ln z = x² + 2(x − ln(1 + x)), the bracket by series near 0
        xs = np.minimum(x, 0.1)
        series = sum((-xs) ** n / n for n in range(2, 40))
        return g * (x * x + 2 * np.where(x < 0.1, series, x - np.log1p(np.maximum(x, 0.0))))
    if fam == "fixed":
        return np.where(x == 0, 0.0, np.inf)
    raise ValueError(fam)


def parse(spec):
    terms = []
    for part in spec.split("+"):
        fam, _, rest = part.partition(":")
        keys = dict(kv.split("=") for kv in rest.split(",")) if rest else {}
        terms.append((fam, float(keys.get("p", 0)), float(keys.get("scale", 1))))
    if len(terms) == 1:
        terms.append(("fixed", 0.0, 1.0))
    return terms


def global_min(f, hi, n=400, fvec=None, basins=3):
    """min of f on [0, hi]: x = 0 and a log grid over 16 decades, the `basins` lowest grid
    points refined (fvec, if given, evaluates the grid in one call)."""
    xs = np.concatenate(([0.0], hi * np.logspace(-16, 0, n)))
    fs = fvec(xs) if fvec is not None else np.array([f(x) for x in xs])
    best = fs.min()
    for j in np.argsort(fs)[:basins]:
        lo, up = xs[max(j - 1, 0)], xs[min(j + 1, n)]
        if up > lo:
            r = minimize_scalar(f, bounds=(lo, up), method="bounded",
                                options={"xatol": 1e-14 * max(up, 1e-300), "maxiter": 500})
            best = min(best, r.fun)
    return best


def oplus(terms, xz):
    """(ω1 ⊕ ω2)(1 + xz)."""
    (w1, w2) = terms
    if w2[0] == "fixed":
        return float(omega(w1, xz))
    if w1[0] == "fixed":
        return float(omega(w2, xz))
    if xz == 0:
        return 0.0
    def split_vec(xa):
        xb = np.maximum((xz - xa) / (1 + xa), 0.0)
        return omega(w1, xa) + omega(w2, xb)
    # the split objective of these joints has one basin (k1, k2 nondecreasing); the dense
    # vectorised grid still guards the refinement
    return global_min(lambda xa: float(split_vec(xa)), xz, n=400, fvec=split_vec, basins=1)


def problem(terms, v, c):
    """min over z ≥ 1 of ⊕(z) + v²/(z² + c)."""
    f = lambda x: oplus(terms, x) + v * v / ((1 + x) ** 2 + c)
    bound = min([v * v / (1 + c)] + [f(10 ** (k / 2)) for k in range(1, 20)])
    hi = 1e-12
    while oplus(terms, hi) < bound and hi < 1e100:
        hi *= 2
    return global_min(f, hi, n=120 if terms[1][0] != "fixed" and terms[0][0] != "fixed" else 400)


def rel(a, b):
    s = max(abs(a), abs(b))
    return abs(a - b) / s if s > 0 else 0.0


def main():
    specs = ["sq", "abs:scale=0.3", "pow:p=0.5", "pow:p=1.5,scale=2", "zsq:scale=0.5", "logsq",
             "sq+sq", "sq+abs:scale=2", "logsq+zsq", "fixed+pow:p=3", "balanced:scale=0.5",
             "balanced+balanced"]
    joints = {"sq+sq", "sq+abs:scale=2", "logsq+zsq", "balanced+balanced"}
    cases = []
    for spec in specs:
        vs = [0.05, 1.5, 60.0] if spec in joints else [0.01, 0.3, 1.0, 2.5, 9.0, 300.0]
        for v in vs:
            for t in (0.1, 4.0):
                cases.append((spec, v, t))
    stdin = "".join(f"{s} {v!r} {t!r}\n" for s, v, t in cases)
    out = subprocess.run([sys.argv[1]], input=stdin, capture_output=True, text=True, check=True)
    failures = 0
    for (spec, v, t), line in zip(cases, out.stdout.splitlines()):
        value, z, prox, s1, sigma, s2, joint = map(float, line.split())
        terms = parse(spec)
        checks = []
        ref_value = problem(terms, v, 0.0)
        checks.append(("value", rel(value, ref_value), 1e-9))
        # prox objective, both terms recomputed here, against the SciPy minimum
        at_prox = t * problem(terms, prox, 0.0) + 0.5 * (prox - v) ** 2
        checks.append(("prox objective", rel(at_prox, t * problem(terms, v, 2 * t)), 1e-9))
        checks.append(("joint", rel(joint, oplus(terms, z - 1)), 1e-9))
        factor_sum = float(omega(terms[0], s1 - 1) + omega(terms[1], s2 - 1)) + sigma * sigma
        checks.append(("factor identity", rel(factor_sum, ref_value), 1e-9))
        checks.append(("s1 s2 sigma = v", rel(s1 * s2 * sigma, v), 1e-14))
        for name, err, tol in checks:
            if not err <= tol:
                failures += 1
                print(f"FAIL {spec} v={v} t={t}: {name} relative error {err:.3g} > {tol}")
    print(f"test_scipy: {len(cases) * 5} checks, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
