"""Penalized problem (16) and its λ path from Python: a small torch MLP on a three-class task,
problem (16) at its initial weights with the cross-entropy loss, one penalized solve, the λ path
scored on validation examples carved from the training set, and the chosen λ on the test set."""
import tempfile

import numpy as np
import torch

import atf

torch.manual_seed(0)
rng = np.random.default_rng(0)


def task(n):  # three classes in 10 dimensions, separated by two nonlinear features
    X = rng.standard_normal((n, 10))
    s = np.stack([X[:, 0] * X[:, 1], X[:, 2] + 0.5 * X[:, 3] ** 2], axis=1)
    return X, np.argmax(np.c_[s, 0.3 * np.ones(n)], axis=1)


X, labels = task(300)
X_test, labels_test = task(2000)
net = torch.nn.Sequential(torch.nn.Linear(10, 64), torch.nn.ReLU(),
                          torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 3))

# problem (16) at θ0: three outputs, /labels for the cross-entropy, the test split beside it
prob = atf.features(net, X, labels, X_test=X_test, Y_test=labels_test)
print(prob)

res = atf.solve(prob, loss="xent:lambda=0.3", penalty="sq+sq")   # Newton, certified
print(res, f"duality gap {res.duality_gap:.1e}")
s = atf.score(prob.test, res)         # the numbers of `atf predict` on the test split
print(f"test error {s.class_error:.3f}, cross-entropy {s.xent:.3f}")

# the λ path, largest first, warm-started; scored on 20 % of the training rows
with tempfile.TemporaryDirectory() as out:
    path = atf.path(prob, "xent", [3, 1, 0.3, 0.1, 0.03], out, validation_fraction=0.2,
                    penalty="sq+sq", progress=False)
    for lam, err, xent in zip(path.lambdas, path.error, path.xent):
        print(f"lambda {lam:5g}: validation error {err:.3f}, cross-entropy {xent:.3f}")
    best = path.result()             # the chosen λ's result (fitted on the other 80 %)
    s = atf.score(path.problem().test, best)
    print(f"best lambda {path.best_lambda:g}: test error {s.class_error:.3f}, "
          f"cross-entropy {s.xent:.3f}")
