"""atf.Penalty against `atf penalty SPEC` (the same library functions: equal to the last bit)."""
import io

import numpy as np

import atf
import atf_env

SPECS = ["sq", "abs", "pow:p=1.5,scale=0.1", "zsq:scale=0.3", "logsq", "sq + abs", "nuclear",
         "pow:p=4 + pow:p=4"]
count = 0
for spec in SPECS:
    for t in (1.0, 0.37):
        out = atf_env.run("penalty", spec, "--from", 0, "--to", 6, "--num", 61, "--t", t).stdout
        tab = np.genfromtxt(io.StringIO(out), delimiter=",", names=True)
        v = tab["v"]
        pen = atf.Penalty(spec)
        count += 4
        atf_env.check(np.array_equal(pen.omega_tilde(v), tab["omega_tilde"]), f"{spec}: omega")
        atf_env.check(np.array_equal(pen.argmin(v), tab["z"]), f"{spec}: z")
        atf_env.check(np.array_equal(pen.prox(v, t), tab["prox"]), f"{spec}: prox t={t}")
        s1, sigma, s2 = pen.factors(v)
        atf_env.check(np.array_equal(s1, tab["s1"]) and np.array_equal(s2, tab["s2"]),
                      f"{spec}: factors")
    # shapes, symmetry and the identities of docs/penalties.md
    grid = np.linspace(0.05, 4, 24).reshape(4, 6)
    d = pen.derivative(grid)
    z = pen.argmin(grid)
    s1, sigma, s2 = pen.factors(grid)
    count += 6
    atf_env.check(d.shape == grid.shape and sigma.shape == grid.shape, f"{spec}: shapes")
    atf_env.check(np.array_equal(pen.derivative(-grid), -d), f"{spec}: derivative odd")
    atf_env.check(np.array_equal(pen.omega_tilde(-grid), pen.omega_tilde(grid)), f"{spec}: even")
    if spec != "nuclear":
        atf_env.check(np.allclose(d, 2 * grid / z**2, rtol=1e-12), f"{spec}: derivative 2v/z^2")
    atf_env.check(np.allclose(s1 * s2 * sigma, grid, rtol=1e-12), f"{spec}: s1 s2 sigma = d")
    fd = (pen.omega_tilde(grid + 1e-6) - pen.omega_tilde(grid - 1e-6)) / 2e-6
    atf_env.check(np.allclose(fd, d, rtol=1e-5, atol=1e-6), f"{spec}: derivative vs differences")
count += 2
atf_env.check(isinstance(atf.Penalty("sq").omega_tilde(2.0), float), "scalar in, float out")
atf_env.check(atf.Penalty("pow:p=1.5,scale=0.1").spec == "pow:p=1.5,scale=0.1", "canonical spec")
atf_env.finish("test_penalty", count)
