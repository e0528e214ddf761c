#!/usr/bin/python3
"""End-to-end tests of atf features / solve / predict / train / kernel.

Usage: test_tangent_cli.py GROUP   (autograd | roundtrip | mnist | fashion | train | kernel | bad)
Independent references: torch autograd for Jacobians, numpy for predictions, kernels and
alignments. Environment: ATF (the binary), ATF_SOURCE_ROOT (the repository)."""
import glob
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

from tangent_cli import ATF, run
ROOT = os.environ.get("ATF_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
FASHION = "/usr/share/datasets/fashion-mnist"




def read_problem(path):
    with h5py.File(path, "r") as f:
        def split(g):
            blocks = {n: (g["blocks"][n]["H"][()], g["blocks"][n]["D"][()]) for n in g["blocks"]}
            return {"y": g["y"][()], "f0": g["f0"][()], "blocks": blocks,
                    "labels": g["labels"][()] if "labels" in g else None}
        prob = split(f)
        prob["r"] = f["r"][()]
        prob["test"] = split(f["test"]) if "test" in f else None
        return prob


def read_mlp(path):
    with h5py.File(path, "r") as f:
        L = sum(1 for k in f if k.startswith("W"))
        W = [f[f"W{l}"][()] for l in range(L)]
        b = [f[f"b{l}"][()] for l in range(L)] if int(f.attrs["bias"]) else None
        return W, b, f.attrs["parameterization"]


def scales(W, param):
    """c_l of the NTK parameterisation (He gain 2 for hidden layers, 1 for the output)."""
    if param != "ntk":
        return [1.0] * len(W)
    return [np.sqrt((2.0 if l < len(W) - 1 else 1.0) / W[l].shape[0]) for l in range(len(W))]


def apply_blocks(blocks, Bs, C):
    """Σ_ℓ A_ℓ vec B_ℓ with (A vec B)_m = h_iᵀ B δ_m, by numpy."""
    out = 0.0
    for name, (H, D) in blocks.items():
        HB = H @ Bs[name]                       # N × Q
        out = out + np.einsum("mq,mq->m", np.repeat(HB, C, axis=0), D)
    return out


def read_result(path):
    with h5py.File(path, "r") as f:
        return {n: f["blocks"][n]["B"][()] for n in f["blocks"]}


# ------------------------------------------------------------------ autograd

def test_autograd(tmp):
    try:
        import torch
    except ImportError:
        print("SKIP: torch not importable")
        sys.exit(77)
    rng = np.random.default_rng(0)
    data = os.path.join(tmp, "data.h5")
    with h5py.File(data, "w") as f:
        f["X"] = rng.standard_normal((5, 6))
        f["Y"] = rng.standard_normal((5, 2))
    for param in ("standard", "ntk"):
        for bias in (False, True):
            prob, mlp = os.path.join(tmp, "p.h5"), os.path.join(tmp, "m.h5")
            run("features", "--data", data, "--widths", "6,7,5,2", "--param", param,
                *(["--bias"] if bias else []), "--seed", 3, "-o", prob, "--save-mlp", mlp)
            W, b, par = read_mlp(mlp)
            assert par == param
            c = scales(W, param)
            if bias:  # give the biases a visible effect
                with h5py.File(mlp, "r+") as f:
                    for l in range(len(W)):
                        f[f"b{l}"][...] = 0.1 * rng.standard_normal(W[l].shape[1])
                W, b, _ = read_mlp(mlp)
                run("features", "--data", data, "--mlp", mlp, "-o", prob)
            P = read_problem(prob)
            with h5py.File(data) as f:
                X = torch.tensor(f["X"][()])
            Wt = [torch.tensor(w, requires_grad=True) for w in W]
            bt = [torch.tensor(v, requires_grad=True) for v in b] if bias else None

            def net(x):
                h = x
                for l in range(len(Wt)):
                    a = c[l] * h @ Wt[l] + (bt[l] if bias else 0.0)
                    h = torch.relu(a) if l < len(Wt) - 1 else a
                return h
            F = net(X)
            assert np.allclose(F.detach().numpy(), P["f0"], rtol=1e-12, atol=1e-12), "f0"
            worst = 0.0
            for i in range(X.shape[0]):
                for k in range(F.shape[1]):
                    params = Wt + (bt or [])
                    grads = torch.autograd.grad(net(X[i:i + 1])[0, k], params)
                    m = i * F.shape[1] + k
                    for l in range(len(Wt)):
                        H, D = P["blocks"][f"W{l + 1}"]
                        G = np.outer(H[i], D[m])
                        ref = grads[l].numpy()
                        worst = max(worst, np.abs(G - ref).max() / max(np.abs(ref).max(), 1e-30))
                        if bias:
                            Hb, Db = P["blocks"][f"b{l + 1}"]
                            assert np.allclose(Hb, 1.0)
                            refb = grads[len(Wt) + l].numpy()
                            worst = max(worst, np.abs(Db[m] - refb).max() /
                                        max(np.abs(refb).max(), 1e-30))
            assert worst < 1e-10, f"{param} bias={bias}: Jacobian vs autograd {worst}"


# ------------------------------------------------------------------ round trips

def roundtrip(tmp, data_args, check_error_below=None):
    prob, res, base = (os.path.join(tmp, n) for n in ("p.h5", "r.h5", "b.h5"))
    pred = os.path.join(tmp, "pred.h5")
    run("features", *data_args, "-o", prob)
    run("solve", prob, "-o", res, "--quiet")
    run("baseline", prob, "-o", base)
    P = read_problem(prob)
    C = P["y"].shape[1]
    for r in (res, base):
        out = run("predict", prob, r, "--json", "-o", pred).stdout
        import json
        js = json.loads(out)
        B = read_result(r)
        # independent prediction with numpy from the files
        ft = P["test"]["f0"].ravel() + apply_blocks(P["test"]["blocks"], B, C)
        with h5py.File(pred) as f:
            assert np.allclose(f["test/f"][()].ravel(), ft, rtol=1e-9, atol=1e-9), "test f"
            ftr = P["f0"].ravel() + apply_blocks(P["blocks"], B, C)
            assert np.allclose(f["train/f"][()].ravel(), ftr, rtol=1e-9, atol=1e-9)
        yt = P["test"]["y"]
        mse = np.mean((ft.reshape(yt.shape) - yt) ** 2)
        assert abs(js["test"]["mse"] - mse) <= 1e-9 * max(1.0, mse), (js, mse)
        if C == 1:
            err = np.mean((ft > 0) != (yt.ravel() > 0))
        else:
            err = np.mean(ft.reshape(yt.shape).argmax(1) != yt.argmax(1))
        assert abs(js["test"]["error"] - err) < 1e-9, (js, err)
        # the solution interpolates the training targets
        assert js["train"]["mse"] < 1e-10 * max(1.0, np.mean(P["y"] ** 2)), js
        if check_error_below is not None:
            assert js["test"]["error"] < check_error_below, js
    return P


def test_roundtrip(tmp):
    roundtrip(tmp, ["--data", "synthetic:d=6,r=2,noise=0.1", "--n-train", 40, "--n-test", 30,
                    "--widths", "6,12,12,1"])
    # multi-output with biases and the NTK parameterisation on user HDF5 data
    rng = np.random.default_rng(1)
    data = os.path.join(tmp, "d.h5")
    with h5py.File(data, "w") as f:
        f["X"] = rng.standard_normal((50, 5))
        f["labels"] = rng.integers(0, 3, 50)
    P = roundtrip(tmp, ["--data", data, "--n-train", 30, "--n-test", 20, "--widths", "5,40,3",
                        "--bias", "--param", "ntk"])
    assert P["y"].shape == (30, 3) and set(np.unique(P["y"])) == {0.0, 1.0}, "one-hot"


def test_mnist(tmp):
    fetch = subprocess.run(["bash", os.path.join(ROOT, "scripts", "fetch_mnist.sh")],
                           capture_output=True, text=True)
    assert fetch.returncode == 0, f"fetch_mnist.sh failed: {fetch.stderr}"
    mdir = os.path.join(ROOT, "data", "mnist")
    P = roundtrip(tmp, ["--data", f"mnist:{mdir}", "--classes", "2,3", "--n-train", 60,
                        "--n-test", 60, "--widths", "784,16,16,1"], check_error_below=0.3)
    assert set(np.unique(P["y"])) == {-1.0, 1.0}
    # per-image standardisation: W1's H rows are the images, zero mean and unit variance
    H = P["blocks"]["W1"][0]
    assert np.allclose(H.mean(1), 0, atol=1e-12) and np.allclose(H.var(1), 1, atol=1e-9)
    # the teacher targets: a summary with its accuracy
    out = run("features", "--data", f"mnist:{mdir}", "--classes", "2,3", "--n-train", 100,
              "--n-test", 0, "--widths", "784,32,32,1", "--targets", "teacher-sign",
              "-o", os.path.join(tmp, "t.h5")).stdout
    assert "teacher accuracy" in out, out


def test_fashion(tmp):
    assert os.path.exists(os.path.join(FASHION, "train-images-idx3-ubyte.gz")), \
        "dataset-fashion-mnist is not installed (scripts/setup.sh)"
    roundtrip(tmp, ["--data", "fashion-mnist", "--classes", "0,1,7", "--n-train", 45,
                    "--n-test", 45, "--widths", "784,16,3"], check_error_below=0.5)
    # the official split: training examples from train-*, the test split is t10k-* (all of it
    # here, so its label counts are those of the t10k labels file)
    import gzip
    out = os.path.join(tmp, "official.h5")
    run("features", "--data", "fashion-mnist", "--split", "official", "--n-train", 30,
        "--n-test", 10000, "--widths", "784,10", "-o", out)
    with gzip.open(os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz")) as f:
        t10k = np.frombuffer(f.read()[8:], dtype=np.uint8)
    with h5py.File(out, "r") as f:
        test_labels = f["test"]["labels"][()]
        assert f["labels"].shape == (30,)
    assert np.array_equal(np.bincount(test_labels, minlength=10), np.bincount(t10k, minlength=10))
    p = run("features", "--data", "fashion-mnist", "--split", "official", "--n-train", 30,
            "--n-test", 10001, "-o", out, expect=2)
    assert "official split has 60000 + 10000" in p.stderr, p.stderr
    p = run("features", "--data", "fashion-mnist", "--split", "halves", "-o", out, expect=2)
    assert "--split" in p.stderr and "pooled or official" in p.stderr, p.stderr


# ------------------------------------------------------------------ training

def test_train(tmp):
    args = ["--data", "synthetic:d=5,r=2", "--n-train", 64, "--n-test", 32, "--widths",
            "5,16,16,1", "--epochs", 30, "--batch", 16, "--lr", 0.05, "--quiet", "--json"]
    import json
    m1, m2, m0 = (os.path.join(tmp, n) for n in ("a.h5", "b.h5", "init.h5"))
    js = json.loads(run("train", *args, "-o", m1, "--save-init", m0).stdout)
    run("train", *args, "-o", m2)
    W1, _, _ = read_mlp(m1)
    W2, _, _ = read_mlp(m2)
    for a, b in zip(W1, W2):
        assert a.tobytes() == b.tobytes(), "training is not bit-reproducible"
    W0, _, _ = read_mlp(m0)
    assert any(not np.array_equal(a, b) for a, b in zip(W0, W1)), "weights did not change"
    # the loss went down: initial network's loss vs trained
    p0 = json.loads(run("predict", "--mlp", m0, *args[:6], "--json").stdout)
    assert js["train_loss"] < 0.5 * p0["train"]["mse"], (js, p0)
    # a different shuffle seed gives different weights
    run("train", *args, "-o", m2, "--shuffle-seed", 2)
    W3, _, _ = read_mlp(m2)
    assert any(a.tobytes() != b.tobytes() for a, b in zip(W1, W3))
    # PyTorch's default initialisation: uniform within ±1/√fan_in, biases too
    run("train", *args, "--init", "torch", "--bias", "--epochs", 1, "-o", m2, "--save-init", m0)
    W, b, _ = read_mlp(m0)
    for w, v in zip(W, b):
        bound = 1 / np.sqrt(w.shape[0])
        assert np.abs(w).max() <= bound and np.abs(v).max() <= bound
        assert np.abs(w).max() > 0.8 * bound and abs(w.std() - bound / np.sqrt(3)) < 0.2 * bound


# ------------------------------------------------------------------ kernels

def cosine(A, B):
    return np.sum(A * B) / np.sqrt(np.sum(A * A) * np.sum(B * B))


def cka(A, B):
    n = A.shape[0]
    H = np.eye(n) - 1.0 / n
    return cosine(H @ A @ H, H @ B @ H)


def test_kernel(tmp):
    prob, res, m0, m1, ker = (os.path.join(tmp, n) for n in ("p.h5", "r.h5", "m0.h5", "m1.h5", "k.h5"))
    data = ["--data", "synthetic:d=4,r=2", "--n-train", 20, "--n-test", 5, "--widths", "4,6,6,1"]
    run("features", *data, "-o", prob, "--save-mlp", m0)
    run("solve", prob, "-o", res, "--quiet")
    run("train", *data, "--epochs", 10, "--batch", 5, "--lr", 0.01, "-o", m1, "--quiet")
    run("kernel", prob, res, "--mlp0", m0, "--mlp", m1, "--path-points", 3, "-o", ker)
    P = read_problem(prob)
    with h5py.File(ker) as f:
        names = f["alignment"].attrs["kernels"].split(",")
        assert names == ["K0", "adapted", "paper17", "theorem1", "label", "final",
                         "path_average"], names
        K = {n: f[n][()] for n in names}
        cos, ck = f["alignment/cosine"][()], f["alignment/cka"][()]
    K0 = sum((H @ H.T) * (D @ D.T) for H, D in P["blocks"].values())
    assert np.allclose(K["K0"], K0, rtol=1e-12, atol=1e-12), "K0"
    assert np.allclose(K["label"], np.outer(P["r"], P["r"])), "label kernel"
    for a, na in enumerate(names):
        for b, nb in enumerate(names):
            assert abs(cos[a, b] - cosine(K[na], K[nb])) < 1e-10, (na, nb)
            assert abs(ck[a, b] - cka(K[na], K[nb])) < 1e-8, (na, nb)
    # the path average with T = 1 is K0 (the trained network's path starts at θ0)
    run("kernel", prob, "--mlp0", m0, "--mlp", m1, "--path-points", 1, "-o", ker)
    with h5py.File(ker) as f:
        assert np.allclose(f["path_average"][()], K0, rtol=1e-12, atol=1e-12)
    # adapted kernel from the result's factors, by numpy (M̂² = I + U diag(s²−1) Uᵀ)
    with h5py.File(res) as f:
        Kad = 0.0
        for n, (H, D) in P["blocks"].items():
            B = f["blocks"][n]["B"][()]
            U, d, Vt = np.linalg.svd(B, full_matrices=False)
            s1, s2 = f["blocks"][n]["s1"][()], f["blocks"][n]["s2"][()]
            M1 = np.eye(B.shape[0]) + U @ np.diag(s1 ** 2 - 1) @ U.T
            M2 = np.eye(B.shape[1]) + Vt.T @ np.diag(s2 ** 2 - 1) @ Vt
            Kad = Kad + (H @ M1 @ H.T) * (D @ M2 @ D.T)
    assert np.allclose(K["adapted"], Kad, rtol=1e-8, atol=1e-8 * np.abs(Kad).max()), "adapted"
    js = run("kernel", prob, res, "-o", ker, "--json").stdout
    assert '"cosine"' in js and '"theorem1_s"' in js


# ------------------------------------------------------------------ bad input

def expect_fail(tmp, args, needle, out):
    p = run(*args, expect=2)
    msg = p.stderr.strip()
    assert msg.count("\n") == 0 and msg, f"not one line: {msg!r}"
    assert needle in msg, f"message {msg!r} does not mention {needle!r}"
    leftovers = glob.glob(out + "*")
    assert not leftovers, f"output left behind: {leftovers}"


def write_idx(d, images, labels, gz):
    import gzip
    import struct
    os.makedirs(d, exist_ok=True)
    op = gzip.open if gz else open
    sfx = ".gz" if gz else ""
    with op(os.path.join(d, "train-images-idx3-ubyte" + sfx), "wb") as f:
        f.write(struct.pack(">BBBBIII", 0, 0, 8, 3, len(images), 4, 4) + images.tobytes())
    with op(os.path.join(d, "train-labels-idx1-ubyte" + sfx), "wb") as f:
        f.write(struct.pack(">BBBBI", 0, 0, 8, 1, len(labels)) + labels.tobytes())
    return os.path.join(d, "train-images-idx3-ubyte" + sfx)


def test_bad(tmp):
    out = os.path.join(tmp, "out.h5")
    rng = np.random.default_rng(2)
    images = rng.integers(0, 256, (40, 4, 4), dtype=np.uint8)
    labels = (np.arange(40) % 2).astype(np.uint8)
    base = ["features", "-o", out, "--n-train", 10, "--n-test", 5, "--widths", "16,4,1"]
    for gz in (False, True):
        d = os.path.join(tmp, f"idx{int(gz)}")
        path = write_idx(d, images, labels, gz)
        run(*base, "--data", f"mnist:{d}")  # the good files work
        os.remove(out)
        raw = open(path, "rb").read()
        with open(path, "wb") as f:        # truncated
            f.write(raw[: len(raw) // 2])
        expect_fail(tmp, base + ["--data", f"mnist:{d}"], "train-images-idx3-ubyte", out)
        with open(path, "wb") as f:        # corrupt: bad magic (plain) / garbage stream (gz)
            f.write(b"\x01\x02" + raw[2:] if not gz else raw[:20] + b"\xff" * 50 + raw[70:])
        expect_fail(tmp, base + ["--data", f"mnist:{d}"], "train-images-idx3-ubyte", out)
    d = os.path.join(tmp, "idxok")
    write_idx(d, images, labels, False)
    expect_fail(tmp, base + ["--data", f"mnist:{d}", "--classes", "1,7"], "class 7 absent", out)
    expect_fail(tmp, ["features", "-o", out, "--data", f"mnist:{d}", "--n-train", 10,
                      "--n-test", 5, "--widths", "784,4,1"], "input width 784", out)
    expect_fail(tmp, base + ["--data", "nosuchsource"], "unknown data source", out)
    expect_fail(tmp, base + ["--data", os.path.join(tmp, "missing.h5")], "missing.h5", out)
    h5 = os.path.join(tmp, "data.h5")
    with h5py.File(h5, "w") as f:
        f["X"] = rng.standard_normal((30, 16))
        f["Y"] = rng.standard_normal((30, 1))
    raw = open(h5, "rb").read()
    with open(h5, "wb") as f:
        f.write(raw[: len(raw) // 3])
    expect_fail(tmp, base + ["--data", h5], "data.h5", out)
    with h5py.File(h5, "w") as f:
        f["X"] = rng.standard_normal((30, 16))
        f["Y"] = rng.standard_normal((29, 1))
    expect_fail(tmp, base + ["--data", h5], "/Y", out)
    # kernels: T <= 0, and a network that is not the problem's
    prob, m0 = os.path.join(tmp, "p.h5"), os.path.join(tmp, "m0.h5")
    run("features", "--data", "synthetic:d=4", "--n-train", 10, "--n-test", 0, "--widths",
        "4,5,1", "-o", prob, "--save-mlp", m0)
    expect_fail(tmp, ["kernel", prob, "--mlp0", m0, "--mlp", m0, "--path-points", 0, "-o", out],
                "--path-points", out)
    other = os.path.join(tmp, "m1.h5")
    run("features", "--data", "synthetic:d=4", "--n-train", 10, "--n-test", 0, "--widths",
        "4,5,1", "--seed", 9, "-o", os.path.join(tmp, "p2.h5"), "--save-mlp", other)
    expect_fail(tmp, ["kernel", prob, "--mlp0", other, "-o", out], "/f0", out)
    expect_fail(tmp, ["train", "--data", "synthetic:d=4", "--widths", "3,5,1", "-o", out],
                "input width 3", out)
    expect_fail(tmp, ["predict", prob], "expected PROBLEM.h5 RESULT.h5", out)
    expect_fail(tmp, ["features", "--data", "synthetic", "--init", "torch", "--param", "ntk",
                      "-o", out], "init torch needs param standard", out)


GROUPS = {"autograd": test_autograd, "roundtrip": test_roundtrip, "mnist": test_mnist,
          "fashion": test_fashion, "train": test_train, "kernel": test_kernel, "bad": test_bad}

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        GROUPS[sys.argv[1]](tmp)
    print(f"tangent {sys.argv[1]}: ok")
