#!/usr/bin/python3
"""Activations and per-layer biases through the atf command, against PyTorch (float64).

Usage: test_activations_cli.py GROUP   (torch | train | kernel | files | bad)
  torch  atf features on tanh and GELU (and softplus/leaky_relu/sigmoid) networks with a bias on
         some layers: f0 and every block's Jacobian H δᵀ against torch autograd, to 1e-12 relative;
  train  one full-batch SGD step of atf train (momentum 0) against torch's SGD step;
  kernel atf kernel's final and path-averaged kernels against Σ J Jᵀ of torch autograd;
  files  MLP files: old-format files (written by hand with h5py, relu, bias 0/1) are read as
         before; new files carry activation, bias and bias_layers and /bℓ only where a bias is;
  bad    bad specs, bias lists and MLP files: exit 2, one line naming the item, no output.
Environment: ATF (the binary)."""
import os
import sys
import tempfile

import h5py
import numpy as np

from tangent_cli import run




def torch_or_skip():
    try:
        import torch
    except ImportError:
        print("SKIP: torch not importable")
        sys.exit(77)
    return torch


def read_mlp(path):
    """Weights, biases (None where a layer has none), activation specs, parameterisation."""
    with h5py.File(path, "r") as f:
        L = sum(1 for k in f if k.startswith("W"))
        W = [f[f"W{l}"][()] for l in range(L)]
        b = [f[f"b{l}"][()] if f"b{l}" in f else None for l in range(L)]
        acts = f.attrs["activation"].split(";")
        acts = acts * (L - 1) if len(acts) == 1 else acts
        return W, b, acts, f.attrs["parameterization"], dict(f.attrs)


def torch_activation(torch, spec):
    name, _, params = spec.partition(":")
    kw = dict(p.split("=") for p in params.split(",")) if params else {}
    kw = {k: float(v) for k, v in kw.items()}
    return {"relu": lambda: torch.nn.ReLU(),
            "leaky_relu": lambda: torch.nn.LeakyReLU(kw.get("slope", 0.01)),
            "tanh": lambda: torch.nn.Tanh(), "sigmoid": lambda: torch.nn.Sigmoid(),
            "gelu": lambda: torch.nn.GELU(),
            "softplus": lambda: torch.nn.Softplus(kw.get("beta", 1.0), kw.get("threshold", 20.0)),
            "identity": lambda: torch.nn.Identity()}[name]()


GAIN = {"relu": 2.0, "gelu": 2.0, "softplus": 2.0, "tanh": 25.0 / 9.0, "sigmoid": 1.0,
        "identity": 1.0}


def scales(W, acts, param):
    """c_ℓ: 1, or √(g_ℓ/P_ℓ) with g the squared torch gain of the activation after layer ℓ."""
    if param != "ntk":
        return [1.0] * len(W)
    out = []
    for l in range(len(W)):
        if l == len(W) - 1:
            g = 1.0
        elif acts[l].startswith("leaky_relu"):
            s = float(acts[l].partition("=")[2] or 0.01)
            g = 2.0 / (1.0 + s * s)
        else:
            g = GAIN[acts[l].partition(":")[0]]
        out.append(np.sqrt(g / W[l].shape[0]))
    return out


def torch_net(torch, W, b, acts, c):
    Wt = [torch.tensor(w, requires_grad=True) for w in W]
    bt = [torch.tensor(v, requires_grad=True) if v is not None else None for v in b]
    sig = [torch_activation(torch, a) for a in acts]

    def net(x):
        h = x
        for l in range(len(Wt)):
            a = c[l] * h @ Wt[l] + (bt[l] if bt[l] is not None else 0.0)
            h = sig[l](a) if l < len(Wt) - 1 else a
        return h
    return Wt, bt, net


def rel(a, ref):
    return np.abs(a - ref).max() / max(np.abs(ref).max(), 1e-300)


def write_data(tmp, N=6, D=5, C=2, seed=0):
    rng = np.random.default_rng(seed)
    data = os.path.join(tmp, "data.h5")
    with h5py.File(data, "w") as f:
        f["X"] = rng.standard_normal((N, D))
        f["Y"] = rng.standard_normal((N, C))
    return data


NETS = [  # (activation option, bias option, param)
    ("tanh", "1,3", "standard"),
    ("gelu", "2", "ntk"),
    ("gelu;tanh", "layers:1", "standard"),
    ("softplus:beta=2,threshold=1;leaky_relu:slope=0.2", "2,3", "ntk"),
    ("sigmoid;identity", "3", "standard"),
]


def test_torch(tmp):
    torch = torch_or_skip()
    data = write_data(tmp)
    with h5py.File(data) as f:
        X = torch.tensor(f["X"][()])
    rng = np.random.default_rng(4)
    for act, bias, param in NETS:
        label = f"--activation {act} --bias={bias} --param {param}"
        prob, mlp = os.path.join(tmp, "p.h5"), os.path.join(tmp, "m.h5")
        run("features", "--data", data, "--widths", "5,7,6,2", "--param", param, f"--bias={bias}",
            "--activation", act, "--seed", 3, "-o", prob, "--save-mlp", mlp)
        with h5py.File(mlp, "r+") as f:  # biases start at 0: give them a visible effect
            for k in [k for k in f if k.startswith("b")]:
                f[k][...] = 0.3 * rng.standard_normal(f[k].shape)
        run("features", "--data", data, "--mlp", mlp, "-o", prob)
        W, b, acts, par, _ = read_mlp(mlp)
        assert par == param, label
        flags = [v is not None for v in b]
        want = [l + 1 in {1, 2, 3} if bias == "1" else
                (l + 1 == 1 if bias == "layers:1" else str(l + 1) in bias.split(","))
                for l in range(3)]
        assert flags == want, f"{label}: bias datasets {flags}"
        Wt, bt, net = torch_net(torch, W, b, acts, scales(W, acts, param))
        with h5py.File(prob) as f:
            f0 = f["f0"][()]
            blocks = {n: (f["blocks"][n]["H"][()], f["blocks"][n]["D"][()]) for n in f["blocks"]}
        names = [n for l in range(3) for n in [f"W{l + 1}"] + ([f"b{l + 1}"] if flags[l] else [])]
        assert sorted(blocks) == sorted(names), f"{label}: blocks {sorted(blocks)}"
        F = net(X)
        assert rel(f0.reshape(F.shape), F.detach().numpy()) < 1e-12, f"{label}: f0"
        worst = 0.0
        params = Wt + [v for v in bt if v is not None]
        for i in range(X.shape[0]):
            for k in range(F.shape[1]):
                grads = torch.autograd.grad(net(X[i:i + 1])[0, k], params)
                m = i * F.shape[1] + k
                g = iter(grads[len(Wt):])
                for l in range(len(Wt)):
                    H, D = blocks[f"W{l + 1}"]
                    worst = max(worst, rel(np.outer(H[i], D[m]), grads[l].numpy()))
                    if flags[l]:
                        Hb, Db = blocks[f"b{l + 1}"]
                        assert np.all(Hb == 1.0)
                        worst = max(worst, rel(Db[m], next(g).numpy()))
        assert worst < 1e-12, f"{label}: Jacobian vs autograd {worst:.3g}"
        print(f"ok  {label}: f0 and {len(blocks)} blocks agree with torch (worst {worst:.2g})")


def test_train(tmp):
    """One epoch with the batch = all examples, lr η = 0.05 and momentum 0 is one plain gradient
    step θ1 = θ0 − η ∇ mean‖f − y‖²/C (the cosine schedule gives η itself in the first epoch)."""
    torch = torch_or_skip()
    data = write_data(tmp, N=8)
    with h5py.File(data) as f:
        X, Y = torch.tensor(f["X"][()]), torch.tensor(f["Y"][()])
    for act, bias, param in NETS[:2] + NETS[3:4]:
        label = f"train --activation {act} --bias={bias} --param {param}"
        m0, m1 = os.path.join(tmp, "m0.h5"), os.path.join(tmp, "m1.h5")
        run("train", "--data", data, "--widths", "5,7,6,2", "--param", param, f"--bias={bias}",
            "--activation", act, "--seed", 5, "--epochs", 1, "--batch", 8, "--lr", 0.05,
            "--momentum", 0, "--stop", "final", "--quiet", "--save-init", m0, "-o", m1)
        W0, b0, acts, _, _ = read_mlp(m0)
        W1, b1, _, _, _ = read_mlp(m1)
        Wt, bt, net = torch_net(torch, W0, b0, acts, scales(W0, acts, param))
        loss = torch.nn.functional.mse_loss(net(X), Y)
        params = Wt + [v for v in bt if v is not None]
        grads = torch.autograd.grad(loss, params)
        new = [w0 - 0.05 * g.numpy() for w0, g in zip(W0 + [v for v in b0 if v is not None],
                                                       grads)]
        got = W1 + [v for v in b1 if v is not None]
        worst = max(rel(a - w0, r - w0) for a, r, w0 in
                    zip(got, new, W0 + [v for v in b0 if v is not None]))
        assert worst < 1e-10, f"{label}: step vs torch {worst:.3g}"
        print(f"ok  {label}: the SGD step agrees with torch (worst {worst:.2g})")


def jacobian_rows(torch, W, b, acts, c, X):
    """J [N·C, P_total] of every parameter (weights, then biases) by torch autograd."""
    Wt, bt, net = torch_net(torch, W, b, acts, c)
    params = Wt + [v for v in bt if v is not None]
    F = net(X)
    rows = []
    for i in range(X.shape[0]):
        for k in range(F.shape[1]):
            grads = torch.autograd.grad(net(X[i:i + 1])[0, k], params)
            rows.append(np.concatenate([g.numpy().ravel() for g in grads]))
    return np.array(rows)


def test_kernel(tmp):
    """atf kernel's final and path-averaged kernels of a GELU/tanh network with a partial bias
    against Σ J Jᵀ from torch autograd (J̄ averaged over the T = 3 points of the path)."""
    torch = torch_or_skip()
    data = write_data(tmp, N=5, C=2)
    with h5py.File(data) as f:
        X = torch.tensor(f["X"][()])
    prob, m0, m1 = (os.path.join(tmp, n) for n in ("p.h5", "m0.h5", "m1.h5"))
    net = ["--widths", "5,6,4,2", "--activation", "gelu;tanh", "--bias=2,3", "--seed", 2]
    run("train", "--data", data, *net, "--epochs", 3, "--batch", 2, "--lr", 0.05, "--quiet",
        "--save-init", m0, "-o", m1)
    run("features", "--data", data, "--mlp", m0, "-o", prob)
    W0, b0, acts, param, _ = read_mlp(m0)
    W1, b1, _, _, _ = read_mlp(m1)
    c = scales(W0, acts, param)
    J1 = jacobian_rows(torch, W1, b1, acts, c, X)
    ts = np.linspace(0, 1, 3)
    Jbar = sum(jacobian_rows(torch, [(1 - t) * u + t * v for u, v in zip(W0, W1)],
                             [None if u is None else (1 - t) * u + t * v for u, v in zip(b0, b1)],
                             acts, c, X) for t in ts) / len(ts)
    for method in ("materialize", "hadamard"):
        out = os.path.join(tmp, f"k_{method}.h5")
        run("kernel", prob, "--mlp0", m0, "--mlp", m1, "--path-points", 3, "--path-method",
            method, "-o", out)
        with h5py.File(out) as k:
            e_final = rel(k["final"][()], J1 @ J1.T)
            e_path = rel(k["path_average"][()], Jbar @ Jbar.T)
        assert e_final < 1e-12 and e_path < 1e-12, f"{method}: final {e_final}, path {e_path}"
        print(f"ok  kernel ({method}): final {e_final:.2g}, path_average {e_path:.2g} vs torch")


def test_files(tmp):
    data = write_data(tmp, D=4, C=1)
    rng = np.random.default_rng(7)
    # an old-format file: relu, bias 1 with /b0, /b1 (written by hand, as older atf wrote them)
    old = os.path.join(tmp, "old.h5")
    with h5py.File(old, "w") as f:
        f.attrs.update(format="atf-mlp", version=1, activation="relu", bias=1,
                       parameterization="standard")
        f["W0"], f["W1"] = rng.standard_normal((4, 3)), rng.standard_normal((3, 1))
        f["b0"], f["b1"] = rng.standard_normal(3), rng.standard_normal(1)
    prob, saved = os.path.join(tmp, "p.h5"), os.path.join(tmp, "saved.h5")
    run("features", "--data", data, "--mlp", old, "-o", prob, "--save-mlp", saved)
    with h5py.File(old) as f, h5py.File(prob) as p:
        X = h5py.File(data)["X"][()]
        h = np.maximum(X @ f["W0"][()] + f["b0"][()], 0)
        ref = h @ f["W1"][()] + f["b1"][()]
        assert rel(p["f0"][()].reshape(ref.shape), ref) < 1e-14, "old file: f0"
        assert sorted(p["blocks"]) == ["W1", "W2", "b1", "b2"], sorted(p["blocks"])
    _, _, _, _, attrs = read_mlp(saved)
    assert attrs["activation"] == "relu" and attrs["bias"] == 1 and "bias_layers" not in attrs, \
        f"saved old network: {attrs}"
    # no bias attribute at all (oldest files): no biases
    with h5py.File(old, "r+") as f:
        del f.attrs["bias"], f["b0"], f["b1"], f.attrs["activation"]
    run("features", "--data", data, "--mlp", old, "-o", prob)
    with h5py.File(prob) as p:
        assert sorted(p["blocks"]) == ["W1", "W2"], sorted(p["blocks"])
    # a new network: per-layer activations and a bias on layer 2 only
    new = os.path.join(tmp, "new.h5")
    run("features", "--data", data, "--widths", "4,5,3,1", "--activation",
        "leaky_relu:slope=0.1;softplus:beta=2", "--bias=2", "-o", prob, "--save-mlp", new)
    W, b, acts, _, attrs = read_mlp(new)
    assert attrs["activation"] == "leaky_relu:slope=0.1;softplus:beta=2,threshold=20", attrs
    assert attrs["bias"] == 1 and attrs["bias_layers"] == "2", attrs
    assert [v is not None for v in b] == [False, True, False], "bias datasets"
    again = os.path.join(tmp, "again.h5")
    run("features", "--data", data, "--mlp", new, "-o", prob, "--save-mlp", again)
    with h5py.File(new) as f, h5py.File(again) as g:
        assert dict(f.attrs) == dict(g.attrs) and sorted(f) == sorted(g), "round trip"
        for k in f:
            assert np.array_equal(f[k][()], g[k][()]), k
    # one activation for all hidden layers is written once
    run("features", "--data", data, "--widths", "4,5,3,1", "--activation", "gelu", "-o", prob,
        "--save-mlp", new)
    assert read_mlp(new)[4]["activation"] == "gelu"
    # the fingerprint sees the activation: same weights, tanh instead of gelu
    with h5py.File(prob) as p:
        fp_gelu = p.attrs["mlp_fingerprint"]
    with h5py.File(new, "r+") as f:
        f.attrs["activation"] = "tanh"
    run("features", "--data", data, "--mlp", new, "-o", prob)
    with h5py.File(prob) as p:
        assert p.attrs["mlp_fingerprint"] != fp_gelu, "fingerprint ignores the activation"
    print("ok  files: old format read, new attributes written and read back")


def expect_fail(tmp, args, needles, out):
    p = run(*args, expect=2)
    msg = p.stderr.strip()
    assert msg and "\n" not in msg, f"{args}: not one line: {p.stderr!r}"
    for n in needles:
        assert n in msg, f"{args}: {msg!r} does not mention {n!r}"
    assert not os.path.exists(out), f"{args}: left {out}"
    print(f"ok  {msg}")


def test_bad(tmp):
    data = write_data(tmp, D=4, C=1)
    out = os.path.join(tmp, "out.h5")
    base = ["features", "--data", data, "--widths", "4,5,3,1", "-o", out]
    expect_fail(tmp, base + ["--activation", "swish"], ["--activation", "'swish' unknown"], out)
    expect_fail(tmp, base + ["--activation", "leaky_relu:slope=x"], ["--activation", "slope=x"],
                out)
    expect_fail(tmp, base + ["--activation", "softplus:beta=0"], ["beta must be positive"], out)
    expect_fail(tmp, base + ["--activation", "tanh;gelu;relu"],
                ["activation", "3 specs", "2 hidden layers"], out)
    expect_fail(tmp, base + ["--bias=4"], ["bias", "layer 4", "3 layers"], out)
    expect_fail(tmp, base + ["--bias=1,1"], ["--bias", "listed twice"], out)
    expect_fail(tmp, base + ["--bias=a"], ["--bias", "'a'"], out)
    expect_fail(tmp, ["train", "--data", data, "--widths", "4,5,1", "--activation", "relu6",
                      "-o", out], ["--activation", "relu6"], out)
    expect_fail(tmp, ["experiment", "samples", "--activation", "tanh;gelu", "--out", out],
                ["--activation", "needs --hidden"], out)
    good = os.path.join(tmp, "good.h5")
    run("features", "--data", data, "--widths", "4,5,3,1", "--activation", "tanh", "--bias=1,3",
        "-o", out, "--save-mlp", good)
    os.remove(out)
    expect_fail(tmp, ["features", "--data", data, "--mlp", good, "--activation", "gelu", "-o",
                      out], ["activation", "not allowed with", "good.h5"], out)
    cases = [
        ("activation", "swish", ["bad.h5", "'activation'", "swish"]),
        ("activation", "tanh;tanh;tanh", ["bad.h5", "'activation'", "3 specs"]),
        ("bias_layers", "2,7", ["bad.h5", "'bias_layers'", "layer 7"]),
        ("bias_layers", "2", ["bad.h5", "/b1", "missing"]),  # /b0 present, /b1 absent
        ("bias", 3, ["bad.h5", "'bias'", "expected 0 or 1"]),
    ]
    for attr, value, needles in cases:
        bad = os.path.join(tmp, "bad.h5")
        with h5py.File(good) as g, h5py.File(bad, "w") as f:
            for k in g:
                f[k] = g[k][()]
            f.attrs.update(dict(g.attrs))
            f.attrs[attr] = value
            if attr == "bias":
                del f.attrs["bias_layers"]
        expect_fail(tmp, ["features", "--data", data, "--mlp", bad, "-o", out], needles, out)


if __name__ == "__main__":
    group = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        {"torch": test_torch, "train": test_train, "kernel": test_kernel, "files": test_files,
         "bad": test_bad}[group](tmp)
