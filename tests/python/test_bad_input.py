"""Bad input from Python (issue 16): every refusal raises atf.InputError with a message naming
the module, parameter or item — torch models atf cannot handle (nn.LSTM, tuple/dict outputs,
unsupported layers), NaN parameters, train-mode BatchNorm/Dropout, labels outside 0 … C−1,
integers that do not fit a C int, complex/bool/object/string arrays, NUL characters, bad prox
steps — and what is accepted instead: frozen parameters left out (trainable_only), eval_mode,
float32 arrays and torch tensors, equal to float64 input."""
import numpy as np
import torch

import atf
import atf_env

nn = torch.nn


check = atf_env.check


def raises(fn, needles, what, cls=atf.InputError):
    """fn() raises cls (atf.InputError) with every needle in its message."""
    atf_env.raises(fn, cls, needles, what)


torch.manual_seed(0)
rng = np.random.default_rng(0)
X = rng.standard_normal((6, 3))
Y = rng.standard_normal((6, 2))
lab = np.array([0, 1, 1, 0, 1, 0])


def mlp_net():
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))


class Recurrent(nn.Module):  # an LSTM whose output is selected correctly: functorch fails on it
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, batch_first=True)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        out, _ = self.lstm(x.unsqueeze(1))
        return self.head(out[:, -1])


class Pair(nn.Module):  # returns a tuple
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x):
        return self.lin(x), x


class Named(nn.Module):  # returns a dict
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x):
        return {"logits": self.lin(x)}


class Passthrough(nn.Module):  # returns what its LSTM returns
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 2)

    def forward(self, x):
        return self.lstm(x)


class Reduce(nn.Module):  # one number for the whole batch
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x):
        return self.lin(x).sum()


class LogOut(nn.Module):  # NaN outputs
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x):
        return torch.log(self.lin(x) - 100.0)


# ---- 1. torch models ----------------------------------------------------------------------------
CALLS = {"features": lambda m: atf.features(m, X, Y), "ntk": lambda m: atf.ntk(m, X)}
for call, fn in CALLS.items():
    raises(lambda: fn(nn.LSTM(3, 2)), ["the model (LSTM)", "tuple", "not a tensor"],
           f"{call}: nn.LSTM itself")
    raises(lambda: fn(nn.Sequential(nn.LSTM(3, 4), nn.Linear(4, 2))),
           ["module '0' (LSTM)", "tuple"], f"{call}: an LSTM inside a Sequential")
    raises(lambda: fn(Recurrent()), ["module 'lstm' (LSTM)", "functorch", "recurrent"],
           f"{call}: an LSTM functorch cannot differentiate")
    raises(lambda: fn(Passthrough()), ["module 'lstm' (LSTM)", "tuple"],
           f"{call}: a model returning its LSTM's tuple")
    raises(lambda: fn(Pair()), ["the model (Pair)", "tuple"], f"{call}: a tuple output")
    raises(lambda: fn(Named()), ["the model (Named)", "dict"], f"{call}: a dict output")
    raises(lambda: fn(Reduce()), ["output", "shape ()", "one row per example"],
           f"{call}: an output without one row per example")
    raises(lambda: fn(nn.Sequential(nn.Embedding(5, 3), nn.Flatten(), nn.Linear(9, 2))),
           ["module '0' (Embedding)", "cannot be applied"], f"{call}: an unsupported layer")
    raises(lambda: fn(LogOut()), ["output", "nan"], f"{call}: NaN outputs")
raises(lambda: atf.from_torch(nn.LSTM(3, 2)), ["the model (LSTM)", "nn.Sequential"],
       "from_torch: nn.LSTM")
raises(lambda: atf.from_torch(nn.Sequential(nn.Linear(3, 4), nn.LSTM(4, 2))),
       ["module '1' (LSTM)", "not supported"], "from_torch: an LSTM inside a Sequential")

# NaN / inf in a parameter or a buffer: named
bad = mlp_net()
with torch.no_grad():
    bad[2].weight[1, 3] = float("nan")
for call, fn in {**CALLS, "from_torch": atf.from_torch,
                 "path_kernel": lambda m: atf.path_kernel(mlp_net(), m, X, T=2)}.items():
    raises(lambda: fn(bad), ["parameter '2.weight'", "NaN", "[1, 3]"], f"{call}: NaN weight")
cnn = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(2 * 4 * 4, 2))
with torch.no_grad():
    cnn[0].bias[0] = float("inf")
raises(lambda: atf.features(cnn, rng.standard_normal((4, 1, 6, 6)), lab[:4]),
       ["parameter '0.bias'", "NaN or infinite"], "features: inf in a conv bias")
bn = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)).eval()
bn[1].running_var[2] = float("inf")
raises(lambda: atf.ntk(bn, X), ["buffer '1.running_var'"], "ntk: inf in a BatchNorm buffer")

# training mode: refused unless eval_mode=True
bn = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
with torch.no_grad():
    bn[1].running_mean.copy_(torch.randn(4))
    bn[1].running_var.copy_(torch.rand(4) + 0.5)
drop = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Dropout(0.5), nn.Linear(5, 2))
for call, fn in {**CALLS, "from_torch": atf.from_torch}.items():
    raises(lambda: fn(bn), ["module '1' (BatchNorm1d)", "training mode", "eval_mode=True"],
           f"{call}: BatchNorm in training mode")
    raises(lambda: fn(drop), ["module '2' (Dropout)", "training mode", "eval_mode=True"],
           f"{call}: Dropout in training mode")
raises(lambda: atf.features(nn.Sequential(nn.Linear(3, 4), nn.RReLU(), nn.Linear(4, 2)), X, Y),
       ["module '1' (RReLU)", "training mode"], "features: RReLU in training mode")
nostats = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, track_running_stats=False),
                        nn.Linear(4, 2)).eval()
raises(lambda: atf.features(nostats, X, Y, eval_mode=True),
       ["module '1' (BatchNorm1d)", "track_running_stats=False"],
       "features: BatchNorm without running statistics, even in eval mode")
p_flag = atf.features(bn, X, Y, eval_mode=True)
bn_eval = bn.eval()
p_eval = atf.features(bn_eval, X, Y)
check(p_flag.fingerprint == p_eval.fingerprint and bn.training is False,
      "eval_mode=True equals the model in eval mode (BatchNorm)")
bn.train()
check(bn.training and atf.features(bn, X, Y, eval_mode=True).fingerprint == p_flag.fingerprint,
      "eval_mode=True leaves the caller's model in training mode")
K_flag = atf.ntk(drop, X, eval_mode=True)
nodrop = nn.Sequential(drop[0], drop[1], drop[3])
check(np.array_equal(K_flag, atf.ntk(nodrop, X)), "eval_mode=True: Dropout is the identity")
check(atf.from_torch(drop, eval_mode=True).widths == [3, 5, 2] and drop.training,
      "from_torch(eval_mode=True) leaves Dropout out")
check([b.name for b in atf.features(drop.eval(), X, Y).blocks] == ["W1", "b1", "W2", "b2"],
      "a Sequential MLP with Dropout in eval mode gives the factored MLP blocks")
drop.train()

# labels outside 0 … C−1 where C is known
net = mlp_net()
raises(lambda: atf.features(net, X, np.array([0, 1, 2, 0, 1, 0])),
       ["Y", "value 2", "outside 0 … 1", "2 outputs"], "features: label 2 with 2 outputs")
raises(lambda: atf.features(net, X, np.array([0, 1, -1, 0, 1, 0])),
       ["Y", "value -1", "outside 0 … 1"], "features: a negative label")
raises(lambda: atf.features(net, X, lab, X[:3], np.array([0, 5, 1])),
       ["Y_test", "value 5"], "features: a test label outside 0 … C−1")
net1 = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
raises(lambda: atf.features(net1, X, np.array([0, 1, 2, 0, 1, 0])),
       ["Y", "value 2", "one output"], "features: label 2 with one output")
p1 = atf.features(net1, X, np.array([-1, 1, 1, -1, 1, -1]))
check(np.array_equal(p1.labels, lab) and np.array_equal(p1.y[:, 0], 2.0 * lab - 1),
      "one output: integer ±1 targets are the classes 0 and 1")
p3 = atf.features(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 3)), X,
                  np.array([0, 2, 2, 0, 2, 0]))
check(np.array_equal(p3.labels, [0, 2, 2, 0, 2, 0]) and p3.y[1, 2] == 1.0,
      "three outputs: labels are class indices, even when a class is absent")
raises(lambda: atf.features(net, X, lab.astype(bool)), ["Y", "bool"], "features: bool labels")

# frozen parameters: left out by default, kept with trainable_only=False
fz = mlp_net()
fz[0].weight.requires_grad_(False)
check([b.name for b in atf.features(fz, X, Y).blocks] == ["b1", "W2", "b2"],
      "features: a frozen weight is left out")
check([b.name for b in atf.features(fz, X, Y, trainable_only=False).blocks] ==
      ["W1", "b1", "W2", "b2"], "features(trainable_only=False) keeps it")
m_fz = atf.from_torch(fz)
check(m_fz.frozen == ("W1",) and atf.from_torch(fz, trainable_only=False).frozen == (),
      "from_torch records the frozen blocks (none with trainable_only=False)")
parts = atf.ntk(fz, X, per_layer=True, trainable_only=False)
K = atf.ntk(fz, X)
check(sorted(atf.ntk(fz, X, per_layer=True)) == ["W2", "b1", "b2"] and
      np.allclose(K, parts["b1"] + parts["W2"] + parts["b2"], rtol=1e-13, atol=1e-13),
      "ntk: the frozen block is left out of the sum")
check(np.allclose(atf.ntk(fz, X, X[:2]), K[:, :2], rtol=1e-12, atol=1e-12),
      "ntk with X2: the frozen block is left out there too")
Kp = atf.path_kernel(fz, fz, X, T=2, per_layer=True, trainable_only=False)
check(np.allclose(atf.path_kernel(fz, fz, X, T=2), Kp["b1"] + Kp["W2"] + Kp["b2"],
                  rtol=1e-13, atol=1e-13), "path_kernel: the frozen block is left out")
prob = atf.features(fz, X, Y)
res = atf.solve(prob)
check(res.predict(X).shape == (6, 2) and res.kernel(X[:2]).shape == (2, 2, 2, 2),
      "a result without the frozen block predicts with its model")
# a finite model whose kernel overflows: refused, naming the block (not inf without a word)
big = mlp_net().double()
with torch.no_grad():
    big[2].weight.fill_(1e308)
raises(lambda: atf.ntk(big, X), ["atf.ntk", "non-finite"], "ntk: an overflowing kernel",
       cls=atf.NumericalError)
raises(lambda: atf.ntk(big, X, per_layer=True), ["atf.ntk", "non-finite"],
       "ntk per layer: an overflowing block", cls=atf.NumericalError)
# the files a solve writes later (its first checkpoint may come hours in) are checked first
raises(lambda: atf.solve(prob, checkpoint="/nonexistent-dir/ck.h5"),
       ["checkpoint", "/nonexistent-dir/ck.h5", "does not exist"], "solve: checkpoint location")
raises(lambda: atf.baseline(prob, method="cg", checkpoint="/nonexistent-dir/ck.h5"),
       ["checkpoint", "does not exist"], "baseline: checkpoint location")
raises(lambda: atf.solve(prob, method="admm", precond_file="/"),
       ["precond_file", "is a directory"], "solve: precond_file location")
cnn = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(2 * 4 * 4, 2))
cnn[2].bias.requires_grad_(False)
Xc = rng.standard_normal((4, 1, 6, 6))
check([b.name for b in atf.features(cnn, Xc, lab[:4]).blocks] == ["0.weight", "0.bias",
                                                                    "2.weight"],
      "features (general path): a frozen bias is left out")
for p in cnn.parameters():
    p.requires_grad_(False)
raises(lambda: atf.features(cnn, Xc, lab[:4]), ["requires_grad=False", "trainable_only=False"],
       "features: every parameter frozen")
check(len(atf.features(cnn, Xc, lab[:4], trainable_only=False).blocks) == 4,
      "features(trainable_only=False) of a frozen model")

# ---- 2. integers, dtypes, NUL, prox steps -------------------------------------------------------
H, D, r = rng.standard_normal((6, 3)), rng.standard_normal((12, 2)), rng.standard_normal(12)
blk = atf.Block.factored("W", H, D)
raises(lambda: atf.Problem(r, [blk], 6, 2, labels=[2**40 + 1, 0, 1, 0, 1, 0]),
       ["/labels", "1099511627777", "does not fit a C int"], "Problem: a label beyond a C int")
raises(lambda: atf.Problem(r, [blk], 6, 2, labels=[0, 1, 2, 0, 1, 0]),
       ["/labels", "value 2", "outside 0 … 1"], "Problem: a label outside 0 … C−1")
raises(lambda: atf.Problem(r, [blk], 6, 2, labels=[0.0, 1, 1, 0, 1, 0]),
       ["/labels", "integers"], "Problem: float labels")
raises(lambda: atf.Problem(r, [blk], 2**40 + 6, 2), ["samples", "does not fit a C int"],
       "Problem: samples beyond a C int")
raises(lambda: atf.Problem(r, [blk], 6, 2**31), ["outputs", "does not fit a C int"],
       "Problem: outputs beyond a C int")
raises(lambda: atf.Problem(r, [blk], 2**16, 2**16), ["samples·outputs", "C int"],
       "Problem: samples·outputs beyond a C int")
raises(lambda: atf.Problem(r, [blk], True, 2), ["samples", "not an integer"],
       "Problem: a bool count")
raises(lambda: atf.Problem(r, [blk], 6.5, 2), ["samples", "not an integer"],
       "Problem: a fractional count")
raises(lambda: atf.Block.dense("W", np.zeros((12, 4)), 2**32 + 2, 2), ["rows", "C int"],
       "Block: rows beyond a C int")
raises(lambda: atf.path_kernel(net, net, X, T=2**40), ["T", "C int"], "path_kernel: T = 2**40")
raises(lambda: atf.path_kernel(net, net, X, T=0), ["T", "outside 1"], "path_kernel: T = 0")
raises(lambda: atf.path_kernel(net, net, X, T=2.5), ["T", "not an integer"],
       "path_kernel: T = 2.5")
# complex, bool, object and string arrays
raises(lambda: atf.Problem(r + 1j, [blk], 6, 2), ["/r", "complex"], "Problem: complex r")
# per-example arrays of exactly [samples, outputs] or flat: a transposed f0 or an extra axis is
# refused, not reshaped
raises(lambda: atf.Problem(r, [blk], 6, 2, f0=np.zeros((2, 6))), ["/f0", "(2, 6)", "(6, 2)"],
       "Problem: f0 of shape [outputs, samples]")
raises(lambda: atf.Problem(r.reshape(12, 1), [blk], 6, 2), ["/r", "(12, 1)"],
       "Problem: r of shape [M, 1]")
check(np.array_equal(atf.Problem(r.reshape(6, 2), [blk], 6, 2, f0=np.ones(12)).f0, np.ones((6, 2))),
      "Problem: r as [samples, outputs] and a flat f0 accepted")
raises(lambda: atf.Block.dense("W", np.zeros((12, 4), complex), 2, 2), ["J", "complex"],
       "Block.dense: complex J")
raises(lambda: atf.Block.factored("W", H.astype(bool), D), ["H", "bool"],
       "Block.factored: bool H")
raises(lambda: atf.Problem([0.0, None] * 6, [blk], 6, 2), ["/r", "object"],
       "Problem: an object array")
raises(lambda: atf.features(net, X.astype(complex), Y), ["X", "complex"], "features: complex X")
raises(lambda: atf.features(net, X.astype(str), Y), ["X", "string"], "features: string X")
raises(lambda: atf.features(net, X, Y.astype(complex)), ["Y", "complex"], "features: complex Y")
raises(lambda: atf.ntk(net, torch.tensor(X, dtype=torch.complex128)), ["X1", "complex"],
       "ntk: a complex tensor")
raises(lambda: atf.ntk(net, torch.tensor(X) > 0), ["X1", "bool"], "ntk: a bool tensor")
raises(lambda: atf.MLP([np.ones((3, 4), complex), np.ones((4, 1))]), ["weights[0]", "complex"],
       "MLP: complex weights")
raises(lambda: atf.Penalty("sq").omega_tilde(np.array([1 + 1j])), ["values", "complex"],
       "Penalty: complex values")
# NUL characters
raises(lambda: atf.Block.factored("W\0x", H, D), ["name", "NUL"], "Block: NUL in the name")
raises(lambda: atf.Block.factored("W", H, D, penalty="sq\0abs"), ["penalty", "NUL"],
       "Block: NUL in the penalty spec")
raises(lambda: atf.Penalty("sq\0abs"), ["spec", "NUL"], "Penalty: NUL in the spec")
raises(lambda: atf.features(net, X, Y, penalty="sq\0abs"), ["penalty", "NUL"],
       "features: NUL in the penalty")
raises(lambda: atf.Problem.read("p\0.h5"), ["NUL"], "Problem.read: NUL in the path")
raises(lambda: atf.MLP([np.ones((3, 4)), np.ones((4, 1))], activation="tanh\0x"),
       ["activation", "NUL"], "MLP: NUL in an activation")
# prox steps and values
pen = atf.Penalty("pow:p=1.5")
raises(lambda: pen.prox([1.0, 2.0], -0.5), ["prox", "t = -0.5", "≥ 0"], "prox: t < 0")
raises(lambda: pen.prox([1.0, 2.0], float("nan")), ["prox", "t = nan"], "prox: t NaN")
raises(lambda: pen.prox([1.0, 2.0], float("inf")), ["prox", "t = inf"], "prox: t infinite")
raises(lambda: pen.prox([1.0, float("nan")], 0.5), ["prox", "values", "nan", "[1]"],
       "prox: a NaN value")
raises(lambda: pen.omega_tilde([float("inf")]), ["omega_tilde", "values", "inf"],
       "omega_tilde: an infinite value")
check(np.array_equal(pen.prox([0.5, -2.0], 0.0), [0.5, -2.0]), "prox with t = 0: the identity")

# ---- accepted: float32 and torch tensors, equal to float64 input --------------------------------
X32 = X.astype(np.float32)
X64 = X32.astype(np.float64)  # the same values in float64
ref = atf.features(net, X64, lab, X64[:3], lab[:3])
for what, Xin, Yin in [("float32 arrays", X32, lab),
                       ("torch float32 tensors", torch.tensor(X32), torch.tensor(lab)),
                       ("torch float64 tensors requiring grad",
                        torch.tensor(X64, requires_grad=True), torch.tensor(lab))]:
    got = atf.features(net, Xin, Yin, Xin[:3], Yin[:3])
    check(got.fingerprint == ref.fingerprint and np.array_equal(got.r, ref.r),
          f"features: {what} equal float64 input")
Kref = atf.ntk(net, X64, X64[:2])
check(np.array_equal(atf.ntk(net, torch.tensor(X32), torch.tensor(X32[:2])), Kref),
      "ntk: torch float32 tensors equal float64 input")
check(np.array_equal(atf.ntk(cnn, torch.tensor(Xc, dtype=torch.float32),
                             trainable_only=False),
                     atf.ntk(cnn, Xc.astype(np.float32).astype(np.float64),
                             trainable_only=False)),
      "ntk (general path): float32 tensors equal float64 input")
res = atf.solve(ref)
check(np.array_equal(res.predict(torch.tensor(X32)), res.predict(X64)),
      "Result.predict: a float32 tensor equals float64 input")
H32, D32, r32 = H.astype(np.float32), D.astype(np.float32), r.astype(np.float32)
pa = atf.Problem(r32, [atf.Block.factored("W", H32, torch.tensor(D32))], 6, 2,
                 labels=torch.tensor(lab))
pb = atf.Problem(r32.astype(float), [atf.Block.factored("W", H32.astype(float),
                                                        D32.astype(float))], 6, 2, labels=lab)
check(pa.fingerprint == pb.fingerprint, "Problem: float32 arrays and tensors equal float64")
v = np.linspace(0, 3, 7, dtype=np.float32)
check(np.array_equal(pen.prox(torch.tensor(v), 0.5), pen.prox(v.astype(float), 0.5)),
      "Penalty: a float32 tensor equals float64 values")
mt = atf.MLP([torch.ones(3, 4), torch.ones(4, 1, dtype=torch.float32)])
check(mt.weights[0].dtype == np.float64 and np.array_equal(mt(X32), mt(X64)),
      "MLP: torch float32 weights and inputs")
check(atf.Problem(r, [blk], np.int64(6), torch.tensor(2)).M == 12,
      "Problem: numpy and torch integer counts")
# r deep in the subnormal range: the answer cannot hold the constraints' bits, and the message
# says why and what to do (before: "not representable" alone); r × 2^600 of the same problem
# is solved
rng = np.random.default_rng(11)
Hs, Ds, rs = rng.standard_normal((10, 8)), rng.standard_normal((10, 6)), rng.standard_normal(10)
tiny = atf.Problem(rs * 1e-318, [atf.Block.factored("W1", Hs, Ds)], samples=10, outputs=1)
try:
    atf.solve(tiny)
    check(False, "r ~ 1e-318: refused")
except atf.NumericalError as e:
    check("below the normal range of doubles" in str(e) and "scale r by a power of two" in str(e)
          and "\n" not in str(e), f"r ~ 1e-318: the reason and the cure, got {e}")
check(atf.solve(atf.Problem(rs * 1e-318 * 2.0**600, [atf.Block.factored("W1", Hs, Ds)],
                            samples=10, outputs=1)).status == "solved",
      "the same r × 2^600: solved")
atf_env.finish("test_bad_input")
