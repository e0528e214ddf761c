"""Independent references computed with torch/functorch in float64, for the Python-package tests:
per-example Jacobians in atf's layout (row m = i·C + k; a parameter tensor seen as the matrix
[prod(shape[1:]), shape[0]], entry (a, b) at column a·cols + b), NTKs, JVPs, path averages."""
import functorch
import numpy as np
import torch

torch.set_default_dtype(torch.float64)


def close(a, b, what, tol=1e-12):
    """A check (atf_env) that a and b agree to tol relative."""
    import atf_env
    r = rel(a, b)
    atf_env.check(r <= tol, f"{what}: relative difference {r:.2e} > {tol:.0e}")


def rel(a, b):
    """max |a − b| / max |b| (b ≠ 0)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return np.inf
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def mlp_names(net):
    """atf block names of an nn.Sequential MLP's parameters, in torch's order: the ℓ-th Linear's
    weight is Wℓ, its bias bℓ."""
    names, l = {}, 0
    for name, mod in net.named_modules():
        if isinstance(mod, torch.nn.Linear):
            l += 1
            names[f"{name}.weight"] = f"W{l}"
            if mod.bias is not None:
                names[f"{name}.bias"] = f"b{l}"
    return names


def jacobians(net, X):
    """(f [N, C], {torch parameter name: J [N·C, rows·cols]}) by vmap(jacrev) of a float64 net
    over the whole batch's examples."""
    fmodel, params = functorch.make_functional(net)
    names = [n for n, _ in net.named_parameters()]
    X = torch.as_tensor(np.asarray(X, dtype=np.float64))

    def one(ps, x):
        return fmodel(ps, x.unsqueeze(0)).reshape(-1)

    f = functorch.vmap(one, in_dims=(None, 0))(params, X).detach().numpy()
    jac = functorch.vmap(functorch.jacrev(one), in_dims=(None, 0))(params, X)
    N, C = f.shape
    out = {}
    for name, p, g in zip(names, params, jac):
        cols = p.shape[0]
        g = g.detach().reshape(N * C, cols, -1).transpose(1, 2)
        out[name] = g.reshape(N * C, -1).numpy()
    return f, out


def to_layout(G, N1, N2, C):
    return G.reshape(N1, C, N2, C).transpose(0, 2, 1, 3)


def ntk(net, X1, X2):
    f1, J1 = jacobians(net, X1)
    _, J2 = jacobians(net, X2)
    N1, C = f1.shape
    N2 = len(X2)
    parts = {n: to_layout(J1[n] @ J2[n].T, N1, N2, C) for n in J1}
    return sum(parts.values()), parts


def jvp(net, X, deltas):
    """f(X) and the directional derivative J δ, with deltas {torch name: tensor like the
    parameter}, by functorch.jvp."""
    fmodel, params = functorch.make_functional(net)
    names = [n for n, _ in net.named_parameters()]
    tangents = tuple(torch.as_tensor(deltas[n]).reshape(p.shape) for n, p in zip(names, params))
    X = torch.as_tensor(np.asarray(X, dtype=np.float64))
    f, df = functorch.jvp(lambda *ps: fmodel(ps, X), tuple(params), tangents)
    N = X.shape[0]
    return f.detach().reshape(N, -1).numpy(), df.detach().reshape(N, -1).numpy()


def delta_of(B, shape):
    """The parameter-shaped tensor of a block matrix B [rows, cols] (inverse of the matrix
    view): the transpose, reshaped to the parameter's shape."""
    return torch.as_tensor(np.ascontiguousarray(B.T)).reshape(shape)


def interpolate(net0, net1, t):
    """A copy of net0 with parameters (1 − t) θ0 + t θ1."""
    import copy
    out = copy.deepcopy(net0)
    with torch.no_grad():
        for p, p0, p1 in zip(out.parameters(), net0.parameters(), net1.parameters()):
            p.copy_((1 - t) * p0 + t * p1)
    return out
