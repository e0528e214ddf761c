"""A torch MLP through atf: train it for a few epochs, build problem (16) at its weights, solve it,
compare with the NTK baseline, and look at kernels and predictions at new inputs.
Run from the repository root:  PYTHONPATH=drivers/python python3 drivers/python/examples/torch_mlp.py"""
import numpy as np
import torch

import atf

torch.manual_seed(0)
rng = np.random.default_rng(0)


def task(n):  # two classes, a nonlinear boundary in 8 dimensions
    X = rng.standard_normal((n, 8))
    return X, (X[:, 0] * X[:, 1] + 0.5 * X[:, 2] > 0).astype(np.int64)


X, labels = task(200)
X_test, labels_test = task(1000)

# a torch MLP with tanh and GELU, a bias on the first layer only, trained for a few epochs
net = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.Tanh(),
                          torch.nn.Linear(64, 64, bias=False), torch.nn.GELU(),
                          torch.nn.Linear(64, 1, bias=False))
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
Xt, yt = torch.tensor(X, dtype=torch.float32), torch.tensor(2.0 * labels - 1.0).float()
for epoch in range(5):
    for batch in torch.randperm(200).split(20):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(net(Xt[batch])[:, 0], yt[batch])
        loss.backward()
        opt.step()

mlp = atf.from_torch(net)                      # weights [in, out], float64
print(mlp)
# problem (16) at the trained weights: class indices become ±1 targets (one output)
prob = atf.features(net, X, labels, X_test=X_test, Y_test=labels_test)
print(prob, [(b.name, b.rows, b.cols) for b in prob.blocks])

res = atf.solve(prob, penalty="sq+sq")         # adaptive tangent features
base = atf.baseline(prob)                      # the NTK min-norm interpolant
print(res)


def error(f):
    return np.mean((f[:, 0] > 0) != (labels_test == 1))


with torch.no_grad():
    f_net = net(torch.tensor(X_test, dtype=torch.float32)).numpy()
print(f"test error: network {error(f_net):.3f}, NTK baseline {error(base.predict(X_test)):.3f}, "
      f"adaptive (sq+sq) {error(res.predict(X_test)):.3f}")

K0 = atf.ntk(net, X_test[:4], X[:3])           # [N1, N2, C, C]: neural-tangents' trace_axes=()
KA = res.kernel(X_test[:4], X[:3])             # the adapted kernel of eq. 7
print("ntk", K0.shape, "adapted", KA.shape)
parts = atf.ntk(net, X[:50], per_layer=True)
print({name: round(float(np.trace(K[:, :, 0, 0])), 2) for name, K in parts.items()})
W1 = res.blocks["W1"]
print("W1: d[:4]", np.round(W1.d[:4], 3), "s1[:4]", np.round(W1.s1[:4], 3))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for r, name in [(base, "NTK baseline"), (res, "adaptive sq+sq")]:
        d = r.blocks["W2"].d
        ax.semilogy(np.arange(1, d.size + 1), d / d[0], ".-", label=name)
    ax.set_xlabel("j")
    ax.set_ylabel("d_j / d_1 of block W2")
    ax.legend()
    fig.tight_layout()
    fig.savefig("torch_mlp.png", dpi=100)
    print("wrote torch_mlp.png")
except ImportError:
    print("matplotlib is not installed: no plot")
