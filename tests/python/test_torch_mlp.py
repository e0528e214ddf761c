"""atf.from_torch, atf.features, atf.ntk, Result.predict, Result.kernel and atf.path_kernel on
torch MLPs (with and without bias, bias on a subset of layers; relu, tanh, GELU, leaky_relu,
sigmoid, softplus) against torch/functorch in float64, to 1e-12 relative."""
import copy
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


torch.manual_seed(3)
NETS = {
    "relu, no bias": nn.Sequential(nn.Linear(4, 6, bias=False), nn.ReLU(),
                                   nn.Linear(6, 1, bias=False)),
    "tanh+gelu, bias on layers 1 and 3": nn.Sequential(
        nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 5, bias=False), nn.GELU(), nn.Linear(5, 3)),
    "leaky_relu+sigmoid+softplus, bias on 1-3": nn.Sequential(
        nn.Linear(4, 5), nn.LeakyReLU(0.1), nn.Linear(5, 5), nn.Sigmoid(), nn.Identity(),
        nn.Linear(5, 4), nn.Softplus(beta=2.0), nn.Linear(4, 2, bias=False)),
}
rng = np.random.default_rng(5)
X, X2 = rng.standard_normal((7, 4)), rng.standard_normal((5, 4))


def mhat_sq(rb):
    """M̂² of one block on vec(B) (row-major), formed densely: (U S1² Uᵀ + I − UUᵀ) ⊗ (same)."""
    if rb.layout == "entrywise":
        return np.diag((rb.s1 * rb.s2) ** 2)
    U, V = rb.U, rb.V
    M1 = U @ np.diag(rb.s1 ** 2) @ U.T + np.eye(rb.rows) - U @ U.T
    M2 = V @ np.diag(rb.s2 ** 2) @ V.T + np.eye(rb.cols) - V @ V.T
    return np.kron(M1, M2)


def adapted_reference(J1, J2, res, order, N1, N2, C):
    """Eq. 7 from torch Jacobians and the result's factors, with M̂² formed densely."""
    A1 = np.hstack([J1[n] for n in order])
    A2 = np.hstack([J2[n] for n in order])
    names = [torchref_names[n] for n in order]
    if res.structure == "full":
        beta = np.concatenate([res.blocks[n].B.reshape(-1) for n in names])
        rb = res.blocks[names[0]]
        s1, s2 = rb.s1[0], rb.s2[0]
        Msq = s2 ** 2 * (np.eye(beta.size) + (s1 ** 2 - 1) * np.outer(beta, beta) / (beta @ beta))
    else:
        sizes = [res.blocks[n].B.size for n in names]
        Msq = np.zeros((sum(sizes), sum(sizes)))
        o = 0
        for n, sz in zip(names, sizes):
            Msq[o:o + sz, o:o + sz] = mhat_sq(res.blocks[n])
            o += sz
    return torchref.to_layout(A1 @ Msq @ A2.T, N1, N2, C)


for label, net in NETS.items():
    net = net.double()
    m = atf.from_torch(net)
    torchref_names = torchref.mlp_names(net)
    order = [n for n, _ in net.named_parameters()]
    lin = [mod for mod in net if isinstance(mod, nn.Linear)]
    check(all(np.array_equal(w, l.weight.detach().numpy().T) for w, l in zip(m.weights, lin))
          and all((b is None) == (l.bias is None) for b, l in zip(m.biases, lin)),
          f"{label}: from_torch weights are nn.Linear.weight transposed, biases where torch has")
    check(m.block_names() == [torchref_names[n] for n in order],
          f"{label}: block names {m.block_names()}")
    f_t, J_t = torchref.jacobians(net, X)
    N, C = f_t.shape
    Y = rng.standard_normal((N, C))
    close(m(X), f_t, f"{label}: forward")
    prob = atf.features(net, X, Y, X_test=X2, Y_test=rng.standard_normal((len(X2), C)))
    close(prob.f0, f_t, f"{label}: f0")
    close(prob.r, (Y - f_t).reshape(-1), f"{label}: residual r = y − f0")
    blocks = {b.name: b for b in prob.blocks}
    for tn in order:
        b = blocks[torchref_names[tn]]
        Jb = np.einsum("ia,ikb->ikab", b.H, b.D.reshape(N, C, b.cols)).reshape(N * C, -1)
        close(Jb, J_t[tn], f"{label}: Jacobian block {b.name} (factored H, D)")
    # the NTK, same and cross inputs, whole and per layer
    K_t, parts_t = torchref.ntk(net, X, X)
    close(atf.ntk(net, X), K_t, f"{label}: ntk(X) [N, N, C, C]")
    K2_t, parts2_t = torchref.ntk(net, X, X2)
    close(atf.ntk(m, X, X2), K2_t, f"{label}: ntk(X, X2) [N1, N2, C, C]")
    per = atf.ntk(net, X, X2, per_layer=True)
    check(sorted(per) == sorted(torchref_names.values()), f"{label}: per-layer names")
    for tn in order:
        close(per[torchref_names[tn]], parts2_t[tn], f"{label}: ntk per layer {tn}")
    per_same = atf.ntk(net, X, per_layer=True)
    for tn in order:
        close(per_same[torchref_names[tn]], parts_t[tn], f"{label}: ntk(X) per layer {tn}")
    # solutions: the linearised model at new inputs and the adapted kernel
    _, J2_t = torchref.jacobians(net, X2)
    for structure in ["layer", "diagonal", "full"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", atf.IterationLimitWarning)
            res = atf.solve(prob, penalty="sq+abs", structure=structure, tol=1e-9)
        what = f"{label}, {structure}"
        deltas = {tn: torchref.delta_of(res.blocks[torchref_names[tn]].B, p.shape)
                  for tn, p in net.named_parameters()}
        f2, df2 = torchref.jvp(net, X2, deltas)
        close(res.predict(X2), f2 + df2, f"{what}: predict(X_new) vs torch f0 + J δ (jvp)")
        close(res.predict(X2, model=m), f2 + df2, f"{what}: predict with model=")
        close(res.predict(X), Y, f"{what}: predict(X) interpolates Y", tol=1e-5)
        ref = adapted_reference(J_t, J2_t, res, order, N, len(X2), C)
        close(res.kernel(X, X2), ref, f"{what}: adapted kernel (eq. 7) vs J M̂² Jᵀ")
        refxx = adapted_reference(J_t, J_t, res, order, N, N, C)
        close(res.kernel(X), refxx, f"{what}: adapted kernel K(X, X)")
        s1 = np.concatenate([res.blocks[n].s1 for n in res.blocks])
        s2 = np.concatenate([res.blocks[n].s2 for n in res.blocks])
        check(np.max(s1) > 1.0 + 1e-6 and np.max(np.abs(s1 - s2)) > 1e-3,
              f"{what}: some s1 > 1 and s1 ≠ s2 (the kernel is not the NTK, and the two sides "
              "are told apart)")
    # path-averaged kernel between θ0 and a moved θ1, both methods, against torch
    net1 = copy.deepcopy(net)
    with torch.no_grad():
        for p in net1.parameters():
            p.add_(0.3 * torch.randn_like(p))
    T = 4
    Jbar = None
    for j in range(T):
        _, Jt = torchref.jacobians(torchref.interpolate(net, net1, j / (T - 1)), X)
        A = np.hstack([Jt[n] for n in order]) / T
        Jbar = A if Jbar is None else Jbar + A
    Kbar = torchref.to_layout(Jbar @ Jbar.T, N, N, C)
    for method in ["materialize", "hadamard"]:
        close(atf.path_kernel(net, net1, X, T=T, method=method), Kbar,
              f"{label}: path_kernel T={T} {method} vs torch")
    close(atf.path_kernel(net, net1, X, T=1), K_t, f"{label}: path_kernel T=1 is the NTK")

# a result read back from a file needs model=; with it, the same numbers
d = atf_env.scratch()
net = NETS["tanh+gelu, bias on layers 1 and 3"].double()
prob = atf.features(net, X, rng.standard_normal((len(X), 3)))
res = atf.solve(prob, penalty="sq+sq")
res.write(f"{d}/r.h5")
back = atf.Result.read(f"{d}/r.h5")
try:
    back.predict(X2)
    check(False, "predict without a model on a result read from a file raises")
except atf.InputError as e:
    check("model=" in str(e), f"predict without a model: message names model= ({e})")
check(np.array_equal(back.predict(X2, model=net), res.predict(X2)),
      "a result read back predicts the same bits with model=")
check(np.array_equal(back.kernel(X2, model=net), res.kernel(X2)),
      "a result read back gives the same kernel with model=")
# the problem remembers a snapshot: training the torch model afterwards changes nothing
before = res.predict(X2)
with torch.no_grad():
    for p in net.parameters():
        p.mul_(2.0)
check(np.array_equal(res.predict(X2), before), "the problem keeps θ0 (a snapshot of the model)")
# center=True: f0 = 0, r = y, predictions without f0
Yc = rng.standard_normal((len(X), 3))
pc = atf.features(net, X, Yc, center=True)
check(np.all(pc.f0 == 0) and np.array_equal(pc.r, Yc.reshape(-1)) and pc.centered,
      "center=True: f0 = 0 and r = y")
rc = atf.solve(pc)
close(rc.predict(X), Yc, "centered: predict(X) interpolates Y without f0", tol=1e-5)
atf_env.finish("test_torch_mlp")
