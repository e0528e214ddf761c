#!/usr/bin/python3
"""`atf train --model network|linearized|factorized` end to end at a tiny size.

Usage: test_train_cli.py GROUP   (models | protocol | bad)
  models    every model with squared and cross-entropy losses, SGD and Adam, constant and cosine
            schedules, the explicit penalty, --no-output-m2 and --init lecun; the training file
            against numpy and torch: B = M1 W M2 (bias M2ᵀ b), the singular values, and the
            reported test loss recomputed from θ0 and B by torch.func.jvp (the linearisation);
  protocol  fixed / resample-each-epoch (with --pool), final / best-val / test-selected with
            patience: labels in the JSON line and the file, the kept epoch is the history's best,
            same seed → same bytes;
  bad       refused combinations: exit 2, one line naming the option, no output.
Environment: ATF (the binary)."""
import json
import os
import sys
import tempfile

import h5py
import numpy as np

from tangent_cli import run




def write_data(tmp, N=90, D=6, K=3, seed=3):
    """A 3-class data set with a learnable rule (HDF5: /X, /labels)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D))
    labels = np.argmax(X[:, :K] + 0.3 * rng.standard_normal((N, K)), axis=1)
    path = os.path.join(tmp, "data.h5")
    with h5py.File(path, "w") as f:
        f["X"] = X
        f["labels"] = labels.astype(np.int64)
    return path


def train(tmp, data, name, *extra, expect=0):
    out = os.path.join(tmp, name)
    p = run("train", "--data", data, "--n-train", 60, "--n-test", 30, "--widths", "6,8,8,3",
            "--bias", "--epochs", 6, "--batch", 10, "--lr", 0.02, "--quiet", "--json", "-o", out,
            *extra, expect=expect)
    return out, (json.loads(p.stdout) if expect == 0 else p)


def mlp_arrays(group):
    L = sum(1 for k in group if k.startswith("W"))
    W = [group[f"W{l}"][()] for l in range(L)]
    b = [group[f"b{l}"][()] if f"b{l}" in group else None for l in range(L)]
    return W, b


def check_factors(f):
    """B = M1 W M2 and bias M2ᵀ b per layer; the diagnostics' singular values."""
    L = sum(1 for k in f["B"] if k.startswith("W"))
    for l in range(1, L + 1):
        M1, W, M2 = f[f"factors/M1_{l}"][()], f[f"factors/W{l}"][()], f[f"factors/M2_{l}"][()]
        B = f[f"B/W{l}"][()]
        assert np.allclose(B, M1 @ W @ M2, rtol=1e-12, atol=1e-14), f"layer {l}: B != M1 W M2"
        if f"factors/b{l}" in f:
            assert np.allclose(f[f"B/b{l}"][()], M2.T @ f[f"factors/b{l}"][()], atol=1e-14)
        sv = np.linalg.svd(B, compute_uv=False)
        assert np.allclose(f[f"diagnostics/W{l}/sv_B"][()], sv, rtol=1e-10, atol=1e-14)
        K1 = M1.T @ M1 - W @ W.T - np.eye(M1.shape[0])
        drift = np.linalg.norm(K1) / np.linalg.norm(M1.T @ M1)
        assert abs(f[f"diagnostics/W{l}"].attrs["drift1"] - drift) < 1e-10 * max(1, drift)


def linearised_test_loss(f, X, labels):
    """The test cross-entropy of f(θ0) + J(θ0) B, by torch.func.jvp (independent of atf)."""
    import torch
    try:
        from torch.func import jvp
    except ImportError:  # torch < 2.0
        from functorch import jvp
    W0, b0 = mlp_arrays(f["theta0"])
    L = len(W0)
    B = [f[f"B/W{l + 1}"][()] for l in range(L)]
    Bb = [f[f"B/b{l + 1}"][()] if b0[l] is not None else None for l in range(L)]
    keys = [k for l in range(L) for k in ([("W", l)] + ([("b", l)] if b0[l] is not None else []))]
    p0 = tuple(torch.tensor(W0[l] if k == "W" else b0[l]) for k, l in keys)
    dp = tuple(torch.tensor(B[l] if k == "W" else Bb[l]) for k, l in keys)
    Xt = torch.tensor(X)

    def net(*params):
        d = dict(zip(keys, params))
        h = Xt
        for l in range(L):
            a = h @ d[("W", l)] + (d[("b", l)] if ("b", l) in d else 0)
            h = torch.relu(a) if l < L - 1 else a
        return h

    f0, df = jvp(net, p0, dp)
    logits = f0 + df
    return torch.nn.functional.cross_entropy(logits, torch.tensor(labels)).item()


def test_models(tmp):
    data = write_data(tmp)
    with h5py.File(data) as f:
        X, labels = f["X"][()], f["labels"][()]
    Xtest, ltest = X[60:90], labels[60:90]
    variants = [("network", []), ("linearized", ["--loss", "xent"]),
                ("factorized", ["--loss", "xent"]),
                ("factorized", ["--optimizer", "adam", "--lr-schedule", "constant", "--lr", 0.01]),
                ("factorized", ["--penalty", "balanced+balanced", "--penalty-weight", 1e-3,
                                "--no-output-m2", "--loss", "xent", "--init", "lecun"]),
                ("linearized", ["--optimizer", "adam", "--init", "torch"])]
    for i, (model, extra) in enumerate(variants):
        out, js = train(tmp, data, f"{model}{i}.h5", "--model", model, "--stop", "final", *extra)
        assert js["model"] == model and js["stopping"] == "final" and js["sampling"] == "fixed"
        assert js["optimizer"] == ("adam" if "adam" in extra else "sgd"), js
        assert js["loss"] == ("xent" if "xent" in extra else "squared"), js
        if model == "network":
            with h5py.File(out) as f:
                assert f.attrs["format"] == "atf-mlp"
            continue
        with h5py.File(out) as f:
            a = f.attrs
            assert a["format"] == "atf-train" and a["model"] == model and a["stopping"] == "final"
            assert a["loss"] == js["loss"] and a["selected_epoch"] == 6
            assert len(f["history/loss"]) == 6
            assert "data_source" in a and "command" in a and "theta0_fingerprint" in a
            if model == "factorized":
                check_factors(f)
                assert f["history/drift1"].shape == (6, 3)
                if "--no-output-m2" in extra:
                    assert np.array_equal(f["factors/M2_3"][()], np.eye(3)), "output M2 moved"
                    assert a["penalty"] == "balanced+balanced"
            if js["loss"] == "xent":
                try:
                    ref = linearised_test_loss(f, Xtest, ltest)
                except ImportError:
                    print("note: torch not importable, jvp check skipped")
                    continue
                assert abs(ref - js["test_loss"]) < 1e-10 * max(1, ref), (ref, js["test_loss"])
        print(f"ok  {model} {' '.join(map(str, extra))}: test error {js['test_error']:.3f}")
    torch_steps(tmp, data)
    test_b16(tmp)
    # --record writes the training file for the network too
    out, js = train(tmp, data, "net.h5", "--record", os.path.join(tmp, "rec.h5"))
    with h5py.File(os.path.join(tmp, "rec.h5")) as f:
        W0, _ = mlp_arrays(f["theta0"])
        W1, _ = mlp_arrays(f["network"])
        assert np.allclose(f["B/W1"][()], W1[0] - W0[0], atol=1e-15)


def torch_steps(tmp, data):
    """Three full-batch steps of SGD with momentum and of Adam against torch.optim."""
    try:
        import torch
    except ImportError:
        print("note: torch not importable, optimiser check skipped")
        return
    with h5py.File(data) as f:
        X, labels = torch.tensor(f["X"][()][:60]), f["labels"][()][:60]
    Y = torch.nn.functional.one_hot(torch.tensor(labels), 3).double()
    for opt in ("sgd", "adam"):
        m0 = os.path.join(tmp, "m0.h5")
        out, _ = train(tmp, data, f"{opt}.h5", "--optimizer", opt, "--epochs", 3, "--batch", 60,
                       "--lr-schedule", "constant", "--stop", "final", "--momentum", 0.9,
                       "--save-init", m0)
        with h5py.File(m0) as f:
            W0, b0 = mlp_arrays(f)
        with h5py.File(out) as f:
            W1, b1 = mlp_arrays(f)
        params = [torch.tensor(a, requires_grad=True) for pair in zip(W0, b0) for a in pair]
        o = (torch.optim.SGD(params, lr=0.02, momentum=0.9) if opt == "sgd"
             else torch.optim.Adam(params, lr=0.02))
        for _ in range(3):
            o.zero_grad()
            h = X
            for l in range(3):
                h = h @ params[2 * l] + params[2 * l + 1]
                h = torch.relu(h) if l < 2 else h
            torch.nn.functional.mse_loss(h, Y).backward()
            o.step()
        got = [a for pair in zip(W1, b1) for a in pair]
        ref = [p.detach().numpy() for p in params]
        start = [a for pair in zip(W0, b0) for a in pair]
        worst = max(np.abs((g - a) - (r - a)).max() / np.abs(r - a).max()
                    for g, r, a in zip(got, ref, start))
        assert worst < 1e-9, f"{opt}: three steps vs torch.optim: {worst:.3g}"
        print(f"ok  {opt}: three full-batch steps agree with torch.optim (worst {worst:.2g})")


def test_b16(tmp):
    """--b16-problem/--b16-result: the cosine between B and the solution of (16), against numpy."""
    prob, res, m0 = (os.path.join(tmp, n) for n in ("p.h5", "r.h5", "m0.h5"))
    data = ["--data", "synthetic:d=5,r=2", "--n-train", 30, "--n-test", 10, "--widths", "5,8,1"]
    run("features", *data, "-o", prob, "--save-mlp", m0)
    run("solve", prob, "-o", res, "--penalty", "balanced+balanced", "--quiet")
    out = os.path.join(tmp, "f.h5")
    js = json.loads(run("train", *data, "--model", "factorized", "--stop", "final", "--epochs", 20,
                        "--batch", 10, "--lr", 0.02, "-o", out, "--quiet", "--json",
                        "--b16-problem", prob, "--b16-result", res).stdout)
    with h5py.File(out) as f, h5py.File(res) as g:
        B = [f[f"B/W{l}"][()] for l in (1, 2)]
        R = [g[f"blocks/W{l}/B"][()] for l in (1, 2)]
    cos = [np.sum(b * r) / np.linalg.norm(b) / np.linalg.norm(r) for b, r in zip(B, R)]
    assert np.allclose(js["b16"]["cosine"], cos, rtol=1e-12), (js["b16"], cos)
    allb, allr = np.concatenate([b.ravel() for b in B]), np.concatenate([r.ravel() for r in R])
    assert abs(js["b16"]["cosine_all"] - allb @ allr / np.linalg.norm(allb) /
               np.linalg.norm(allr)) < 1e-12
    # another network than the problem's: refused before training, nothing written
    bad = os.path.join(tmp, "bad.h5")
    p = run("train", *data, "--seed", 2, "--model", "factorized", "-o", bad, "--b16-problem",
            prob, "--b16-result", res, expect=2)
    assert "mlp_fingerprint" in p.stderr and not os.path.exists(bad), p.stderr
    print(f"ok  --b16: cosines {js['b16']['cosine']} match numpy")
    # gradient descent on the linearised model from δ = 0 stays in the row space of the Jacobian:
    # it converges to the NTK minimum-norm interpolant, which atf baseline computes directly
    data = ["--data", "synthetic:d=4,r=2", "--n-train", 10, "--n-test", 5, "--widths", "4,6,1"]
    base = os.path.join(tmp, "base.h5")
    run("features", *data, "-o", prob)
    run("baseline", prob, "-o", base)
    js = json.loads(run("train", *data, "--model", "linearized", "--stop", "final", "--epochs",
                        3000, "--batch", 10, "--lr", 0.05, "--lr-schedule", "constant", "-o",
                        out, "--quiet", "--json", "--b16-problem", prob, "--b16-result",
                        base).stdout)
    assert js["train_loss"] < 1e-25 and abs(js["b16"]["cosine_all"] - 1) < 1e-12, js
    print(f"ok  the linearised model trained by GD is the NTK min-norm interpolant "
          f"(cosine {js['b16']['cosine_all']:.15f})")


def test_protocol(tmp):
    data = write_data(tmp, N=150)
    cases = [["--sampling", "fixed", "--stop", "best-val", "--val", 10, "--patience", 2],
             ["--resample-each-epoch", "--pool", 100, "--stop", "best-val"],
             ["--stop", "test-selected", "--patience", 3],
             ["--resample-each-epoch", "--pool", 120, "--stop", "final", "--lr-schedule",
              "constant"],
             ["--resample-each-epoch", "--pool", "all"],
             ["--stop", "best-val", "--eval-every", 4]]
    for model in ("network", "linearized", "factorized"):
        for i, extra in enumerate(cases):
            rec = os.path.join(tmp, f"rec{model}{i}.h5")
            _, js = train(tmp, data, f"{model}{i}.h5", "--model", model, "--loss", "xent",
                          "--record", rec, *extra)
            _, js2 = train(tmp, data, f"{model}{i}b.h5", "--model", model, "--loss", "xent",
                           "--record", rec + "b", *extra)
            resample = "--resample-each-epoch" in extra
            assert js["sampling"] == ("resample-each-epoch" if resample else "fixed"), js
            stop = extra[extra.index("--stop") + 1] if "--stop" in extra else "best-val"
            pool = extra[extra.index("--pool") + 1] if "--pool" in extra else 60
            assert js["n_pool"] == (120 if pool == "all" else pool), js
            assert js["stopping"] == stop and js["test_selected"] == (stop == "test-selected")
            with h5py.File(rec) as f, h5py.File(rec + "b") as g:
                assert f.attrs["sampling"] == js["sampling"] and f.attrs["stopping"] == stop
                for k in f["B"]:
                    assert f[f"B/{k}"][()].tobytes() == g[f"B/{k}"][()].tobytes(), \
                        f"{model} {extra}: same seed, different bytes"
                h = f["history"]
                key = {"best-val": "val_error", "test-selected": "test_error"}.get(stop)
                sel = f.attrs["selected_epoch"]
                if key:
                    errs = h[key][()]
                    assert errs[sel - 1] == np.nanmin(errs), (model, extra, errs, sel)
                    if "--eval-every" in extra:  # scored at epochs 4 and 6 (the last) only
                        assert sel in (4, 6) and np.isnan(errs[[0, 1, 2, 4]]).all(), errs
                    if f.attrs["stopped_by_patience"]:
                        assert f.attrs["epochs_run"] - sel == f.attrs["patience"]
                else:
                    assert sel == f.attrs["epochs_run"]
            # the validation split: n-train/10 by default, or --val
            n_val = 10 if "--val" in extra else (6 if stop == "best-val" else 0)
            assert js["n_val"] == n_val and js["n_train"] == 60 - n_val, js
            print(f"ok  {model} {' '.join(map(str, extra))}: kept epoch {js['selected_epoch']}"
                  f" of {js['epochs_run']}")
    # --n-train 0 means every example of the training split, as for atf features (the later
    # --n-train replaces train()'s 60): 150 examples less 30 test ones
    _, js = train(tmp, data, "all.h5", "--n-train", 0)
    assert js["n_pool"] == 120 and js["n_train"] + js["n_val"] == 120 and js["n_val"] == 12, js


def test_bad(tmp):
    data = write_data(tmp)
    cases = [(["--model", "nope"], "model 'nope' unknown"),
             (["--penalty", "balanced", "--model", "linearized"], "--penalty"),
             (["--no-output-m2"], "--no-output-m2"),
             (["--stop", "final", "--patience", 3], "--patience"),
             (["--val", 60], "--val"),
             (["--optimizer", "rmsprop"], "optimizer"),
             (["--sampling", "bootstrap"], "sampling"),
             (["--init", "lecun", "--param", "ntk"], "lecun"),
             (["--model", "linearized", "--checkpoint-every", 2], "--checkpoint-every")]
    for extra, words in cases:
        out = os.path.join(tmp, "bad.h5")
        _, p = train(tmp, data, "bad.h5", *extra, expect=2)
        assert words in p.stderr and p.stderr.count("\n") == 1, (extra, p.stderr)
        assert not os.path.exists(out), f"{extra}: output left behind"
        print(f"ok  refused {' '.join(map(str, extra))}: {p.stderr.strip()}")
    # cross-entropy needs labels (a regression data set has none)
    p = run("train", "--data", "synthetic:d=4", "--n-train", 20, "--n-test", 5, "--loss", "xent",
            "-o", os.path.join(tmp, "bad.h5"), expect=2)
    assert "xent" in p.stderr and "labels" in p.stderr, p.stderr


if __name__ == "__main__":
    group = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        {"models": test_models, "protocol": test_protocol, "bad": test_bad}[group](tmp)
