"""The general path: a small CNN (conv + relu + linear) through atf.features, atf.ntk,
Result.predict and Result.kernel — dense blocks for the convolution, factored ones for the Linear
layer — against functorch in float64 (to 1e-12 relative)."""
import warnings

import numpy as np
import torch

import atf
import atf_env
import torchref
from torchref import rel

TOL = 1e-12
nn = torch.nn
check = atf_env.check


def close(a, b, what, tol=TOL):
    torchref.close(a, b, what, tol)


torch.manual_seed(11)
cnn = nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, 2)).double()
rng = np.random.default_rng(2)
X, X2 = rng.standard_normal((6, 1, 6, 6)), rng.standard_normal((4, 1, 6, 6))
labels = np.array([0, 1, 1, 0, 1, 0])

try:
    atf.from_torch(cnn)
    check(False, "from_torch refuses a CNN")
except atf.InputError as e:
    check("Conv2d" in str(e) and "'0'" in str(e), f"from_torch names the module: {e}")

prob = atf.features(cnn, X, labels, X_test=X2, Y_test=np.array([1, 0, 0, 1]))
f_t, J_t = torchref.jacobians(cnn, X)
N, C = f_t.shape
blocks = {b.name: b for b in prob.blocks}
check(sorted(blocks) == sorted(J_t), f"block names are the parameter names: {sorted(blocks)}")
shapes = {n: (b.rows, b.cols) for n, b in blocks.items()}
check(shapes == {"0.weight": (9, 3), "0.bias": (1, 3), "3.weight": (48, 2), "3.bias": (1, 2)},
      f"parameter matrices: conv weight (C_in·k·k) × C_out, Linear [in, out]: {shapes}")
y = np.zeros((N, 2))
y[np.arange(N), labels] = 1.0
check(np.array_equal(prob.labels, labels) and np.array_equal(prob.y, y),
      "two classes and two outputs: one-hot targets, labels kept")
close(prob.f0, f_t, "CNN: f0")
close(prob.r, (y - f_t).reshape(-1), "CNN: residual")
kinds = {n: "dense" if b.J is not None else "factored" for n, b in blocks.items()}
check(kinds == {"0.weight": "dense", "0.bias": "dense", "3.weight": "factored",
                "3.bias": "factored"}, f"conv blocks dense, the Linear layer factored: {kinds}")
dense = {}
for n, b in blocks.items():
    dense[n] = b.J if b.J is not None else np.einsum(
        "ia,ikb->ikab", b.H, b.D.reshape(N, C, b.cols)).reshape(N * C, -1)
    close(dense[n], J_t[n], f"CNN: Jacobian block {n} ({kinds[n]})")
A = np.hstack([J_t[n] for n in J_t])
close(sum(J @ J.T for J in dense.values()), A @ A.T, "CNN: Σ J_ℓ J_ℓᵀ vs functorch J Jᵀ")
K2, parts2 = torchref.ntk(cnn, X, X2)
close(atf.ntk(cnn, X, X2), K2, "CNN: ntk(X, X2) [N1, N2, C, C]")
close(atf.ntk(cnn, X), torchref.to_layout(A @ A.T, N, N, C), "CNN: ntk(X)")
per = atf.ntk(cnn, X, X2, per_layer=True)
for n in parts2:
    close(per[n], parts2[n], f"CNN: ntk per layer {n}")

_, J2_t = torchref.jacobians(cnn, X2)
for structure in ["layer", "diagonal"]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", atf.IterationLimitWarning)
        res = atf.solve(prob, penalty="sq+pow:p=1.5", structure=structure, tol=1e-9)
    deltas = {n: torchref.delta_of(res.blocks[n].B, p.shape) for n, p in cnn.named_parameters()}
    f2, df2 = torchref.jvp(cnn, X2, deltas)
    close(res.predict(X2), f2 + df2, f"CNN {structure}: predict(X_new) vs torch f0 + J δ")
    close(res.predict(X), y, f"CNN {structure}: predict(X) interpolates", tol=1e-5)
    Msq = []
    for n in J_t:
        rb = res.blocks[n]
        if rb.layout == "entrywise":
            Msq.append(np.diag((rb.s1 * rb.s2) ** 2))
        else:
            M1 = rb.U @ np.diag(rb.s1 ** 2) @ rb.U.T + np.eye(rb.rows) - rb.U @ rb.U.T
            M2 = rb.V @ np.diag(rb.s2 ** 2) @ rb.V.T + np.eye(rb.cols) - rb.V @ rb.V.T
            Msq.append(np.kron(M1, M2))
    import scipy.linalg
    Msq = scipy.linalg.block_diag(*Msq)
    A2 = np.hstack([J2_t[n] for n in J_t])
    close(res.kernel(X, X2), torchref.to_layout(A @ Msq @ A2.T, N, len(X2), C),
          f"CNN {structure}: adapted kernel vs J M̂² Jᵀ")


# other modules on the general path: a Linear layer used twice (dense: its Jacobian is not one
# h δᵀ per row) next to one used once (factored), and a Sequential from_torch refuses
class Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 2, bias=False)

    def forward(self, x):
        return self.b(torch.tanh(self.a(torch.tanh(self.a(x)))))


Xs, Xs2 = rng.standard_normal((5, 4)), rng.standard_normal((3, 4))
for label, model, want in [
        ("shared Linear", Shared().double(), {"a.weight": "dense", "a.bias": "dense",
                                              "b.weight": "factored"}),
        ("GELU(approximate='tanh')", nn.Sequential(nn.Linear(4, 5), nn.GELU(approximate="tanh"),
                                                   nn.Linear(5, 2)).double(),
         {"0.weight": "factored", "0.bias": "factored", "2.weight": "factored",
          "2.bias": "factored"})]:
    p = atf.features(model, Xs, rng.standard_normal((5, 2)))
    f_t, J_t = torchref.jacobians(model, Xs)
    got = {b.name: "dense" if b.J is not None else "factored" for b in p.blocks}
    check(got == want, f"{label}: block kinds {got}")
    for b in p.blocks:
        J = b.J if b.J is not None else np.einsum(
            "ia,ikb->ikab", b.H, b.D.reshape(5, 2, b.cols)).reshape(10, -1)
        close(J, J_t[b.name], f"{label}: Jacobian block {b.name}")
    close(atf.ntk(model, Xs, Xs2), torchref.ntk(model, Xs, Xs2)[0], f"{label}: ntk(X, X2)")
    res = atf.solve(p, penalty="sq+sq")
    deltas = {n: torchref.delta_of(res.blocks[n].B, q.shape) for n, q in model.named_parameters()}
    f2, df2 = torchref.jvp(model, Xs2, deltas)
    close(res.predict(Xs2), f2 + df2, f"{label}: predict(X_new) vs torch f0 + J δ")
atf_env.finish("test_torch_cnn")
