"""Python and CLI on the same network and data: atf.MLP.write / `atf features --mlp` against
atf.features (the same fingerprint and the same bits), solves in both, `atf predict` against
Result.predict and `atf kernel` against atf.ntk and Result.kernel; MLP.read round trips."""
import json
import os

import h5py
import numpy as np
import torch

import atf
import atf_env
from torchref import rel

nn = torch.nn
count = 0
d = atf_env.scratch()


def check(cond, what):
    global count
    count += 1
    atf_env.check(cond, what)


torch.manual_seed(7)
NETS = {
    "relu, all biases": (nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1)), 2),
    "tanh+gelu, bias on layers 1 and 3": (nn.Sequential(
        nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 6, bias=False), nn.GELU(), nn.Linear(6, 3)), 3),
}
rng = np.random.default_rng(1)
N, NT = 12, 6
ntk_net = atf.MLP([rng.standard_normal((3, 4)), rng.standard_normal((4, 2))], param="ntk")
ntk_net.write(os.path.join(d, "m-ntk.h5"))
check(atf.MLP.read(os.path.join(d, "m-ntk.h5")).param == "ntk",
      "an NTK-parameterised network reads back as ntk")
rng = np.random.default_rng(1)
for label, (net, K) in NETS.items():
    tag = label.split(",")[0]
    mlp = atf.from_torch(net)
    mpath, dpath = os.path.join(d, f"m-{tag}.h5"), os.path.join(d, f"d-{tag}.h5")
    mlp.write(mpath)
    back = atf.MLP.read(mpath)
    check(back.fingerprint == mlp.fingerprint and back.activations == mlp.activations and
          all(np.array_equal(a, b) for a, b in zip(back.weights, mlp.weights)) and
          [b is None for b in back.biases] == [b is None for b in mlp.biases],
          f"{label}: MLP.write then MLP.read gives the same network")
    check(back.param == "standard", f"{label}: the parameterisation is read back")
    X = rng.standard_normal((N + NT, 5))
    labels = np.arange(N + NT) % K
    rng.shuffle(labels)
    with h5py.File(dpath, "w") as f:
        f["X"] = X
        f["labels"] = labels.astype(np.int32)
    ppath = os.path.join(d, f"p-{tag}.h5")
    atf_env.run("features", "--data", dpath, "--mlp", mpath, "--n-train", N, "--n-test", NT,
                "-o", ppath)
    cli = atf.Problem.read(ppath)
    py = atf.features(mlp, X[:N], labels[:N], X[N:], labels[N:])
    check(py.fingerprint == cli.fingerprint,
          f"{label}: atf.features and `atf features` give the same fingerprint")
    check(np.array_equal(py.r, cli.r) and np.array_equal(py.f0, cli.f0) and
          np.array_equal(py.y, cli.y) and np.array_equal(py.labels, cli.labels),
          f"{label}: r, f0, y and labels bitwise equal")
    check(all(a.name == b.name and np.array_equal(a.H, b.H) and np.array_equal(a.D, b.D)
              for a, b in zip(py.blocks, cli.blocks)) and len(py.blocks) == len(cli.blocks),
          f"{label}: blocks {[b.name for b in py.blocks]} bitwise equal")
    with h5py.File(ppath, "r") as f:
        mfp = f.attrs.get("mlp_fingerprint")
        mfp = mfp.decode() if isinstance(mfp, bytes) else str(mfp)
    check(mfp == mlp.fingerprint, f"{label}: the problem records the network's fingerprint")
    py.write(os.path.join(d, f"pw-{tag}.h5"))
    check(atf.Problem.read(os.path.join(d, f"pw-{tag}.h5")).fingerprint == cli.fingerprint,
          f"{label}: the written Python problem reads back with the same fingerprint")
    # solve both ways
    rpath = os.path.join(d, f"r-{tag}.h5")
    atf_env.run("solve", ppath, "-o", rpath, "--quiet", "--penalty", "sq+sq")
    res = atf.solve(py, penalty="sq+sq")
    with h5py.File(rpath, "r") as f:
        same = all(np.array_equal(res.blocks[n].B, f["blocks"][n]["B"][...]) for n in res.blocks)
    check(same, f"{label}: atf.solve and `atf solve` give the same B bits")
    # predictions on the test split
    out = json.loads(atf_env.run("predict", ppath, rpath, "--json").stdout)
    test = out["test"] if "test" in out else out
    f = res.predict(X[N:])
    if K == 2:  # the targets of `atf features` for class indices: ±1, or one-hot
        y = np.where(labels[N:] == 1, 1.0, -1.0).reshape(NT, 1)
    else:
        y = np.zeros((NT, K))
        y[np.arange(NT), labels[N:]] = 1.0
    mse = float(np.mean((f - y) ** 2))
    r = abs(test["mse"] - mse) / mse
    check(r < 1e-12, f"{label}: Result.predict(X_test) MSE {mse!r} vs atf predict "
          f"{test['mse']!r} (rel {r:.1e})")
    # kernels over the training rows
    kpath = os.path.join(d, f"k-{tag}.h5")
    atf_env.run("kernel", ppath, rpath, "-o", kpath)
    C = y.shape[1]
    with h5py.File(kpath, "r") as f:
        K0, KA = f["K0"][...], f["adapted"][...]
    to_rows = lambda K4: K4.transpose(0, 2, 1, 3).reshape(N * C, N * C)  # noqa: E731
    r0 = rel(to_rows(atf.ntk(mlp, X[:N])), K0)
    check(r0 < 1e-12, f"{label}: atf.ntk vs atf kernel /K0 (rel {r0:.1e})")
    ra = rel(to_rows(res.kernel(X[:N])), KA)
    check(ra < 1e-12, f"{label}: Result.kernel vs atf kernel /adapted (rel {ra:.1e})")
atf_env.finish("test_features_cli", count)
