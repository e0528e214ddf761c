"""atf.AdaptiveClassifier and atf.AdaptiveRegressor: scikit-learn's conventions over the same
calls (fit = atf.features + atf.solve or atf.baseline, predict = Result.predict) — their numbers
equal the direct calls' bit for bit, score is the accuracy or R² computed here with numpy, the
parameter protocol round-trips (a clone from get_params fits the same), and misuse is refused."""
import pickle

import numpy as np
import torch

import atf
import atf_env

check, raises = atf_env.check, atf_env.raises
rng = np.random.default_rng(3)
X, Xt = rng.standard_normal((50, 6)), rng.standard_normal((20, 6))
w = rng.standard_normal(6)
names = np.array(["cat", "dog", "eel"])
y, yt = names[np.digitize(X @ w, [-0.5, 0.5])], names[np.digitize(Xt @ w, [-0.5, 0.5])]
torch.manual_seed(0)
net3 = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh(), torch.nn.Linear(12, 3))
net1 = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh(), torch.nn.Linear(12, 1))

# the classifier: labels of any kind, mapped to indices in sorted order
clf = atf.AdaptiveClassifier(net3, "sq", "xent:lambda=0.5", progress=False)
check(clf.fit(X, y) is clf, "fit returns the estimator")
index = np.searchsorted(names, y)
prob = atf.features(net3, X, index)
res = atf.solve(prob, "sq", loss="xent:lambda=0.5")
check(list(clf.classes_) == list(names), f"classes_ sorted: {clf.classes_}")
f = res.predict(Xt)
check(np.array_equal(clf.decision_function(Xt), f),
      "decision_function: the direct calls' Result.predict, bit for bit")
check(np.array_equal(clf.predict(Xt), names[np.argmax(f, axis=1)]), "predict: argmax labels")
check(clf.score(Xt, yt) == np.mean(names[np.argmax(f, axis=1)] == yt), "score: the accuracy")
check(clf.result_.status == "solved" and clf.problem_.fingerprint == prob.fingerprint,
      "fitted attributes: the problem and the certified result")

# two classes on one output: ±1 targets, the sign decides
two = np.where(X @ w > 0, 7, 3)
clf1 = atf.AdaptiveClassifier(net1, "sq", progress=False).fit(X, two)
f1 = atf.solve(atf.features(net1, X, (two == 7).astype(int)), "sq").predict(Xt)[:, 0]
check(np.array_equal(clf1.decision_function(Xt), f1) and
      np.array_equal(clf1.predict(Xt), np.where(f1 > 0, 7, 3)), "one output: sign of f")

# the regressor: R² as scikit-learn's r2_score, shapes as y's
yr, ytr = np.tanh(X @ w), np.tanh(Xt @ w)
reg = atf.AdaptiveRegressor(net1, "sq+sq", baseline=True, progress=False).fit(X, yr)
fb = atf.baseline(atf.features(net1, X, yr.reshape(-1, 1), penalty="sq+sq")).predict(Xt)[:, 0]
check(np.array_equal(reg.predict(Xt), fb) and reg.predict(Xt).shape == (20,),
      "regressor predict: the baseline's, [N] for y [N]")
r2 = 1 - np.sum((ytr - fb) ** 2) / np.sum((ytr - ytr.mean()) ** 2)
check(abs(reg.score(Xt, ytr) - r2) <= 1e-15, f"R²: {reg.score(Xt, ytr)} vs {r2}")
check(reg.result_.method == "baseline", f"baseline=True: {reg.result_.method}")

# the parameter protocol: get_params, set_params, a clone fits the same
params = clf.get_params()
check(params["loss"] == "xent:lambda=0.5" and params["model"] is net3, f"get_params: {params}")
clone = type(clf)(**params).fit(X, y)
check(np.array_equal(clone.decision_function(Xt), f), "a clone from get_params: the same fit")
check(clone.set_params(loss="interpolate") is clone and clone.loss == "interpolate",
      "set_params sets and returns the estimator")
raises(lambda: clone.set_params(lam=1), atf.InputError, ["unknown parameter 'lam'"],
       "set_params: an unknown name")
check("loss='xent:lambda=0.5'" in repr(clf) and "tol=" not in repr(clf),
      f"repr shows the parameters set: {repr(clf)[-80:]}")

# misuse
raises(lambda: atf.AdaptiveRegressor(net1).predict(Xt), atf.InputError, ["not fitted"],
       "predict before fit")
raises(lambda: atf.AdaptiveClassifier(net3).fit(X, np.zeros(50)), atf.InputError,
       ["one class only"], "a single class")
raises(lambda: atf.AdaptiveClassifier(net3).fit(X, np.zeros((50, 2))), atf.InputError,
       ["expected labels [N]"], "labels of two dimensions")

# a fitted estimator pickles with its problem and result
again = pickle.loads(pickle.dumps(clf))
check(np.array_equal(again.decision_function(Xt), f), "pickled and loaded: the same predictions")
atf_env.finish("test_estimator")
