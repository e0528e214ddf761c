"""Problem.test (the /test split of a problem file, and of atf.features) and atf.score against
`atf predict --json`: a result scored on a problem or its test split gives the command's numbers
bit for bit (the same library function, atf_predict_result); predictions passed as arrays are
scored with the library's metric functions (bitwise for a network's outputs, which are
atf_mlp_forward in both; 1e-12 for Result.predict, whose sums are numpy's)."""
import json
import math
import os

import h5py
import numpy as np
import torch

import atf
import atf_env

nn = torch.nn
d = atf_env.scratch()
check = atf_env.check


def same(a, b):
    """Bitwise equal floats, NaN equal to NaN (the JSON writes NaN as null)."""
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return b is not None and float(a) == float(b)


def close(a, b, tol=1e-12):
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return b is not None and abs(a - b) <= tol * max(1.0, abs(a), abs(b))


FIELDS = ("mse", "error", "class_error", "xent")


def agrees(score, split, cmp, what):
    for k in FIELDS:
        check(cmp(getattr(score, k), split[k]), f"{what}: {k} {getattr(score, k)!r} vs atf "
              f"predict {split[k]!r}")
    check(score.samples == split["samples"], f"{what}: samples")


torch.manual_seed(3)
rng = np.random.default_rng(5)
N, NT = 14, 9
CASES = {  # classes K, network outputs C
    "two classes, one output": (2, nn.Sequential(nn.Linear(4, 7), nn.Tanh(), nn.Linear(7, 1))),
    "three classes": (3, nn.Sequential(nn.Linear(4, 7), nn.ReLU(), nn.Linear(7, 3))),
}
for label, (K, net) in CASES.items():
    tag = label.split(",")[0].replace(" ", "-")
    X = rng.standard_normal((N + NT, 4))
    labels = np.arange(N + NT) % K
    rng.shuffle(labels)
    mlp = atf.from_torch(net)
    mpath, dpath = os.path.join(d, f"m-{tag}.h5"), os.path.join(d, f"d-{tag}.h5")
    ppath, rpath = os.path.join(d, f"p-{tag}.h5"), os.path.join(d, f"r-{tag}.h5")
    mlp.write(mpath)
    with h5py.File(dpath, "w") as f:
        f["X"] = X
        f["labels"] = labels.astype(np.int32)
    atf_env.run("features", "--data", dpath, "--mlp", mpath, "--n-train", N, "--n-test", NT,
                "-o", ppath)
    atf_env.run("solve", ppath, "-o", rpath, "--quiet", "--penalty", "sq+sq")
    prob, res = atf.Problem.read(ppath), atf.Result.read(rpath)

    # Problem.test: the file's /test split
    test = prob.test
    check(test is not None and test.samples == NT and test.outputs == prob.outputs,
          f"{label}: Problem.test has the {NT} test examples")
    with h5py.File(ppath, "r") as f:
        check(np.array_equal(test.y, f["test/y"][...]) and
              np.array_equal(test.f0, f["test/f0"][...]) and
              np.array_equal(test.labels, f["test/labels"][...]),
              f"{label}: Problem.test's y, f0 and labels are the file's /test items")
        check([b.name for b in test.blocks] == list(f["test/blocks"].keys()) or
              sorted(b.name for b in test.blocks) == sorted(f["test/blocks"].keys()),
              f"{label}: Problem.test has the /test blocks")
    check(test.test is None and test.parent is prob and prob.parent is None,
          f"{label}: a test split has no test split, and knows its problem")
    py = atf.features(mlp, X[:N], labels[:N], X[N:], labels[N:])
    check(py.test is not None and py.test.fingerprint == test.fingerprint,
          f"{label}: atf.features' test split equals the file's (fingerprint)")

    # score of a result: the command's numbers, bit for bit
    out = json.loads(atf_env.run("predict", ppath, rpath, "--json").stdout)
    agrees(atf.score(prob.test, res), out["test"], same, f"{label}: score(prob.test, result)")
    agrees(atf.score(prob, res), out["train"], same, f"{label}: score(prob, result)")
    s = atf.score(prob.test, res)
    check(s.predictions.shape == (NT, prob.outputs), f"{label}: the scored predictions")
    check(set(s.as_dict()) >= set(FIELDS) | {"samples"}, f"{label}: Score.as_dict keys")
    # predictions of Result.predict at the test inputs: the same numbers to 1e-12
    f_test = res.predict(X[N:], model=mlp)
    agrees(atf.score(prob.test, f_test), out["test"], close,
           f"{label}: score(prob.test, Result.predict(X_test))")
    # against bare targets: class indices give class_error and xent, float targets mse/error
    by_labels = atf.score(labels[N:], f_test)
    check(close(by_labels.class_error, out["test"]["class_error"]) and
          close(by_labels.xent, out["test"]["xent"]) and math.isnan(by_labels.mse),
          f"{label}: score(labels, f): class error and xent, no mse")
    by_y = atf.score(test.y, torch.tensor(f_test))
    check(close(by_y.mse, out["test"]["mse"]) and close(by_y.error, out["test"]["error"]) and
          math.isnan(by_y.class_error), f"{label}: score(y, f as a torch tensor): mse, error")

    # a network's own outputs: atf predict --mlp (the same forward pass: bitwise)
    outn = json.loads(atf_env.run("predict", "--mlp", mpath, "--data", dpath, "--n-train", N,
                                  "--n-test", NT, "--json").stdout)
    agrees(atf.score(prob.test, mlp(X[N:])), outn["test"], same,
           f"{label}: score(prob.test, network outputs) vs atf predict --mlp")

# a regression problem (float targets, no labels): mse and error, NaN class error and xent
Xr = rng.standard_normal((N + NT, 4))
Yr = np.sin(Xr[:, :2])
net = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
reg = atf.features(net, Xr[:N], Yr[:N], Xr[N:], Yr[N:])
check(reg.labels is None and reg.test.labels is None, "regression: no labels")
rp, rr = os.path.join(d, "p-reg.h5"), os.path.join(d, "r-reg.h5")
reg.write(rp)
rres = atf.solve(reg)
rres.write(rr)
out = json.loads(atf_env.run("predict", rp, rr, "--json").stdout)
agrees(atf.score(reg.test, rres), out["test"], same, "regression: score(test, result)")
agrees(atf.score(atf.Problem.read(rp).test, atf.Result.read(rr)), out["test"], same,
       "regression: score of the files read back")
s = atf.score(reg.test, rres)
check(math.isnan(s.class_error) and math.isnan(s.xent) and s.mse > 0,
      "regression: class_error and xent are NaN")

# without a test split
nt = atf.features(net, Xr[:N], Yr[:N])
check(nt.test is None, "Problem.test is None without a test split")
check(atf.Problem.read(os.path.join(d, "p-reg.h5")).test is not None, "the file keeps /test")

# refusals
other = atf.features(net, Xr[1:N + 1], Yr[1:N + 1])
for what, fn, needles in [
        ("a result of another problem", lambda: atf.score(other, rres), ["fingerprint"]),
        ("a result on bare targets", lambda: atf.score(Yr[N:], rres), ["atf.Problem"]),
        ("predictions of the wrong shape", lambda: atf.score(reg.test, np.zeros((NT, 3))),
         ["predictions", "2 outputs"]),
        ("NaN predictions", lambda: atf.score(reg.test, np.full((NT, 2), np.nan)),
         ["predictions", "non-finite"]),
        ("complex predictions", lambda: atf.score(reg.test, np.zeros((NT, 2), complex)),
         ["predictions", "complex"]),
        ("labels outside 0 … C−1", lambda: atf.score(np.array([0, 1, 2]), np.zeros((3, 2))),
         ["labels", "value 2", "outside 0 … 1"]),
        ("labels that do not fit a C int",
         lambda: atf.score(np.array([0, 2**40 + 1]), np.zeros((2, 2))), ["labels", "C int"]),
        ("bool labels", lambda: atf.score(np.array([True, False]), np.zeros((2, 2))),
         ["targets", "bool"]),
        ("not a problem", lambda: atf.score("p.h5", rres), ["atf.Problem"])]:
    atf_env.raises(fn, atf.InputError, needles, f"score: {what}")
atf_env.finish("test_score")
