"""Bad input to the network side of the package raises atf.InputError (or atf.FileError) with a
message naming what is wrong: modules from_torch refuses, bad MLPs, wrong shapes, NaN, targets
that do not fit, a result used with another model."""
import numpy as np
import torch

import atf
import atf_env

nn = torch.nn

raises = atf_env.raises


torch.manual_seed(0)
ok = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
raises(lambda: atf.from_torch(nn.Sequential(nn.Linear(3, 4), nn.Dropout(), nn.Linear(4, 1))),
       atf.InputError, ["'1'", "Dropout", "training mode", "eval_mode=True"],
       "from_torch: Dropout in training mode")
raises(lambda: atf.from_torch(nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU())),
       atf.InputError, ["'0'", "Conv2d"], "from_torch: Conv2d")
raises(lambda: atf.from_torch(nn.Sequential(nn.Linear(3, 4), nn.GELU(approximate="tanh"),
                                            nn.Linear(4, 1))),
       atf.InputError, ["approximate='tanh'"], "from_torch: tanh-approximate GELU")
raises(lambda: atf.from_torch(nn.Sequential(nn.Linear(3, 4), nn.ReLU())),
       atf.InputError, ["after the last Linear"], "from_torch: output activation")
raises(lambda: atf.from_torch(nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Tanh(),
                                            nn.Linear(4, 1))),
       atf.InputError, ["two activations"], "from_torch: two activations in a row")
raises(lambda: atf.from_torch(nn.Sequential(nn.Linear(3, 4), nn.Linear(5, 1))),
       atf.InputError, ["4 outputs"], "from_torch: widths that do not chain")
raises(lambda: atf.from_torch(nn.LSTM(3, 4)), atf.InputError, ["LSTM"], "from_torch: LSTM")
raises(lambda: atf.from_torch("net"), atf.InputError,
       ["str"], "from_torch: not a module")

W = [np.ones((3, 4)), np.ones((4, 2))]
raises(lambda: atf.MLP([np.ones((3, 4)), np.ones((5, 2))]), atf.InputError,
       ["weights[1]", "5 inputs"], "MLP: shapes that do not chain")
raises(lambda: atf.MLP(W, biases=[np.ones(3), None]), atf.InputError, ["biases[0]", "3 values"],
       "MLP: bias of the wrong length")
raises(lambda: atf.MLP(W, biases=[None]), atf.InputError, ["1 biases for 2 layers"],
       "MLP: too few biases")
raises(lambda: atf.MLP([np.full((3, 4), np.nan), W[1]]), atf.InputError, ["weights[0]", "NaN"],
       "MLP: NaN weights")
raises(lambda: atf.MLP(W, activation="swish"), atf.InputError, ["swish"],
       "MLP: unknown activation")
raises(lambda: atf.MLP(W, activation=["tanh", "relu"]), atf.InputError, ["2 activations"],
       "MLP: one activation too many")
raises(lambda: atf.MLP.read("/nonexistent/m.h5"), atf.Error, ["/nonexistent/m.h5"],
       "MLP.read: missing file")

X = np.random.default_rng(0).standard_normal((5, 3))
Y = np.random.default_rng(1).standard_normal((5, 2))
bad = X.copy()
bad[2, 1] = np.nan
raises(lambda: atf.features(ok, X[:, :2], Y), atf.InputError, ["X", "(5, 2)", "[N, 3]"],
       "features: X of the wrong width")
raises(lambda: atf.features(ok, bad, Y), atf.InputError, ["X", "NaN"], "features: NaN in X")
Ybad = Y.copy()
Ybad[0, 0] = np.inf
raises(lambda: atf.features(ok, X, Ybad), atf.InputError, ["Y", "NaN or infinite"],
       "features: inf in Y")
raises(lambda: atf.features(ok, X, Y[:4]), atf.InputError, ["Y", "4 rows", "5 inputs"],
       "features: Y of the wrong length")
raises(lambda: atf.features(ok, X, np.array([0, 1, 2, 3, 1])), atf.InputError,
       ["Y", "value 2", "outside 0 … 1", "2 outputs"],
       "features: classes that do not fit the outputs")
raises(lambda: atf.features(ok, X, Y, X_test=X), atf.InputError, ["X_test and Y_test"],
       "features: X_test without Y_test")
raises(lambda: atf.features("net", X, Y), atf.InputError, ["atf.MLP", "str"],
       "features: not a model")
raises(lambda: atf.ntk(ok, X, X[:, :2]), atf.InputError, ["X2", "[N, 3]"],
       "ntk: X2 of the wrong width")
cnn = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(2 * 4 * 4, 1))
raises(lambda: atf.features(cnn, np.zeros((3, 1, 5, 5)), np.zeros(3)), atf.InputError,
       ["cannot be applied", "(1, 5, 5)"], "features (general path): inputs the module refuses")

prob = atf.features(ok, X, Y)
res = atf.solve(prob)
other = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2))
raises(lambda: res.predict(X, model=other), atf.InputError, ["W2 (4x4)", "not in the result"],
       "predict with another model")
raises(lambda: res.predict(X[:, :1]), atf.InputError, ["X_new", "[N, 3]"],
       "predict: X_new of the wrong width")
raises(lambda: res.kernel(X, X[:, :2]), atf.InputError, ["X2"], "kernel: X2 of the wrong width")
raises(lambda: atf.path_kernel(ok, other, X), atf.InputError, ["one architecture"],
       "path_kernel: two architectures")
raises(lambda: atf.path_kernel(ok, cnn, X), atf.InputError, ["MLPs"],
       "path_kernel: a model that is not an MLP")
raises(lambda: atf.path_kernel(ok, ok, X, method="fast"), atf.InputError, ["fast"],
       "path_kernel: unknown method")
atf_env.finish("test_torch_errors")
