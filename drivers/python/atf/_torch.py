"""The PyTorch bridge: nn.Sequential MLPs to atf.MLP (atf.from_torch), and the tangent features
of any other torch module through functorch (dense per-parameter blocks).

torch is imported only when a torch object is handled, so `import atf` needs numpy alone."""
import copy
import sys

import numpy as np

from . import _errors


_fail = _errors.fail


def to_numpy(a):
    """A torch tensor as a numpy array (detached, on the CPU); anything else as np.asarray."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        a = a.detach().to("cpu").numpy()
    return np.asarray(a)


def is_module(obj):
    """Whether obj is a torch.nn.Module (without importing torch when it was never imported)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def _activation_spec(mod, where):
    """The atf activation spec of an elementwise torch module, or None if it is not one."""
    import torch.nn as nn
    if isinstance(mod, nn.ReLU):
        return "relu"
    if isinstance(mod, nn.Tanh):
        return "tanh"
    if isinstance(mod, nn.Sigmoid):
        return "sigmoid"
    if isinstance(mod, nn.Identity):
        return "identity"
    if isinstance(mod, nn.LeakyReLU):
        return f"leaky_relu:slope={float(mod.negative_slope)!r}"
    if isinstance(mod, nn.GELU):
        approx = getattr(mod, "approximate", "none")
        if approx != "none":
            _fail(f"atf.from_torch: {where} GELU(approximate='{approx}'): only the exact GELU "
                  "(approximate='none') is supported")
        return "gelu"
    if isinstance(mod, nn.Softplus):
        return f"softplus:beta={float(mod.beta)!r},threshold={float(mod.threshold)!r}"
    return None


def _flatten(module, prefix=""):
    """The leaf modules of nested nn.Sequential containers, with their dotted names."""
    import torch.nn as nn
    if isinstance(module, nn.Sequential):
        out = []
        for name, child in module.named_children():
            out += _flatten(child, f"{prefix}{name}.")
        return out
    return [(prefix.rstrip(".") or type(module).__name__, module)]


def parse_sequential(module):
    """(weights [in, out], biases, activations) of an nn.Sequential of nn.Linear and elementwise
    activations, as float64 numpy arrays; atf.InputError naming the first module that does not
    fit."""
    import torch.nn as nn
    if not isinstance(module, (nn.Sequential, nn.Linear)):
        _fail(f"atf.from_torch: expected an nn.Sequential of nn.Linear and elementwise "
              f"activations, got {type(module).__name__}")
    leaves = _flatten(module)
    weights, biases, acts = [], [], []
    pending = []  # non-identity activations seen since the last Linear
    for name, mod in leaves:
        where = f"module '{name}' ({type(mod).__name__})"
        if isinstance(mod, nn.Linear):
            if weights:
                if len(pending) > 1:
                    _fail(f"atf.from_torch: {where}: two activations ({', '.join(pending)}) "
                          "between two Linear layers")
                acts.append(pending[0] if pending else "identity")
            elif pending:
                _fail(f"atf.from_torch: an activation ({pending[0]}) before the first Linear "
                      "layer")
            pending = []
            w = mod.weight.detach().to("cpu").double().numpy()
            weights.append(np.ascontiguousarray(w.T))
            biases.append(None if mod.bias is None
                          else mod.bias.detach().to("cpu").double().numpy().copy())
            continue
        spec = _activation_spec(mod, where)
        if spec is None:
            _fail(f"atf.from_torch: {where} is not supported: an MLP is nn.Linear layers with "
                  "the elementwise activations ReLU, LeakyReLU, Tanh, Sigmoid, GELU, Softplus "
                  "or Identity between them")
        if spec != "identity":
            pending.append(spec)
    if not weights:
        _fail("atf.from_torch: the module has no nn.Linear layer")
    if pending:
        _fail(f"atf.from_torch: an activation ({pending[0]}) after the last Linear layer: the "
              "output layer of an atf MLP is linear")
    for l in range(1, len(weights)):
        if weights[l].shape[0] != weights[l - 1].shape[1]:
            _fail(f"atf.from_torch: Linear layer {l + 1} has {weights[l].shape[0]} inputs but "
                  f"layer {l} has {weights[l - 1].shape[1]} outputs")
    return weights, biases, acts


# ---- any torch module: tangent features with functorch ------------------------------------------

def snapshot(module):
    """A float64 copy of a module in eval mode: the parameters θ0 at this moment."""
    m = copy.deepcopy(module).double()
    m.eval()
    for p in m.parameters():
        p.requires_grad_(False)
    return m


def _as_tensor(X, what):
    import torch
    if isinstance(X, torch.Tensor):
        X = X.detach().to("cpu")
    a = np.asarray(X, dtype=np.float64)
    if a.ndim < 1 or a.shape[0] == 0:
        _fail(f"{what}: expected an array of examples along the first axis, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        _fail(f"{what}: the inputs contain NaN or infinite values")
    return torch.from_numpy(np.ascontiguousarray(a))


def param_matrix_shape(shape):
    """The matrix a parameter tensor is seen as: rows = the product of all but the first axis,
    cols = its first axis (nn.Linear weight [out, in] -> [in, out]; conv weight
    [C_out, C_in, k, k] -> [C_in·k·k, C_out]; a bias [out] -> [1, out])."""
    if len(shape) == 0:
        return 1, 1
    cols = int(shape[0])
    rows = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    return rows, cols


def block_names(module):
    return [name for name, _ in module.named_parameters()]


def _linear_probe(module, Xt):
    """The nn.Linear submodules that are applied exactly once per forward pass to a matrix of
    examples [n, in]: their Jacobian blocks factor as h δᵀ. Returns {module name: module}."""
    import torch
    calls = {}
    hooks = []
    for name, mod in module.named_modules():
        if isinstance(mod, torch.nn.Linear):
            def hook(mod, inp, out, name=name):
                calls.setdefault(name, []).append(tuple(inp[0].shape))
            hooks.append(mod.register_forward_hook(hook))
    try:
        with torch.no_grad():
            module(Xt[:2])
    finally:
        for h in hooks:
            h.remove()
    mods = dict(module.named_modules())
    n = min(2, Xt.shape[0])
    return {name: mods[name] for name, shapes in calls.items()
            if len(shapes) == 1 and len(shapes[0]) == 2 and shapes[0][0] == n}


def _factored_linears(module, Xt, linears, C):
    """H (the layer inputs) and D = ∂f_k/∂(layer output) [N·C, out] of the given nn.Linear
    modules by autograd on the whole batch: one backward pass per output k (the examples of an
    eval-mode batch do not interact)."""
    import torch
    inputs, outputs, hooks = {}, {}, []
    for name, mod in linears.items():
        def hook(mod, inp, out, name=name):
            inputs[name] = inp[0].detach()
            outputs[name] = out
        hooks.append(mod.register_forward_hook(hook))
    try:
        with torch.enable_grad():
            Xg = Xt.clone()
            for mod in linears.values():
                mod.weight.requires_grad_(True)  # so that the graph reaches the layer outputs
            f = module(Xg).reshape(Xt.shape[0], -1)
            names = list(linears)
            N = Xt.shape[0]
            D = {nm: np.empty((N * C, linears[nm].out_features)) for nm in names}
            for k in range(C):
                grads = torch.autograd.grad(f[:, k].sum(), [outputs[nm] for nm in names],
                                            retain_graph=k < C - 1)
                for nm, g in zip(names, grads):
                    D[nm][k::C] = g.detach().numpy()
    finally:
        for h in hooks:
            h.remove()
        for mod in linears.values():
            mod.weight.requires_grad_(False)
    return {nm: inputs[nm].numpy().copy() for nm in linears}, D


def module_tangent(module, X, what="X", chunk_doubles=1 << 24):
    """f [N, C] and one Jacobian block per parameter of a float64 module (see snapshot), in
    parameter order: (name, rows, cols, H, D, J). The nn.Linear layers applied once to a matrix
    of examples give factored blocks (H [N, rows], D [N·C, cols], row m = i·C + k; the bias:
    H = 1) by autograd; every other parameter a dense J [N·C, rows·cols] (column a·cols + b for
    entry (a, b) of the parameter's matrix) by functorch's vmap(jacrev), in chunks of examples."""
    import functorch
    import torch
    Xt = _as_tensor(X, what)
    N = Xt.shape[0]
    try:
        with torch.no_grad():
            out0 = module(Xt[:1])
    except Exception as exc:  # the module cannot take these inputs
        _fail(f"{what}: the module cannot be applied to inputs of shape {tuple(Xt.shape[1:])}: "
              f"{exc}")
    C = int(out0.numel())
    linears = _linear_probe(module, Xt)
    factored = {}
    for name, mod in linears.items():
        factored[f"{name}.weight" if name else "weight"] = (name, "weight")
        if mod.bias is not None:
            factored[f"{name}.bias" if name else "bias"] = (name, "bias")
    fmodel, params, buffers = functorch.make_functional_with_buffers(module)
    names = block_names(module)
    dense_idx = [j for j, n in enumerate(names) if n not in factored]

    def single(ps_dense, x):
        ps = list(params)
        for j, p in zip(dense_idx, ps_dense):
            ps[j] = p
        return fmodel(tuple(ps), buffers, x.unsqueeze(0)).reshape(-1)

    f = np.empty((N, C))
    with torch.no_grad():
        for s in range(0, N, 1024):
            f[s:s + 1024] = module(Xt[s:s + 1024]).reshape(-1, C).numpy()
    H, D = _factored_linears(module, Xt, linears, C) if linears else ({}, {})
    Js = {j: np.empty((N * C, int(params[j].numel()))) for j in dense_idx}
    if dense_idx:
        P = sum(int(params[j].numel()) for j in dense_idx)
        chunk = max(1, int(chunk_doubles // max(1, C * P)))
        jac = functorch.vmap(functorch.jacrev(single), in_dims=(None, 0))
        dense_params = tuple(params[j] for j in dense_idx)
        for s in range(0, N, chunk):
            xs = Xt[s:s + chunk]
            n = xs.shape[0]
            for j, g in zip(dense_idx, jac(dense_params, xs)):
                rows, cols = param_matrix_shape(tuple(params[j].shape))
                g = g.detach().reshape(n * C, cols, rows).transpose(1, 2)
                Js[j][s * C:(s + n) * C] = g.reshape(n * C, rows * cols).numpy()
    blocks = []
    for j, (name, p) in enumerate(zip(names, params)):
        rows, cols = param_matrix_shape(tuple(p.shape))
        if name in factored:
            lin, kind = factored[name]
            h = H[lin] if kind == "weight" else np.ones((N, 1))
            blocks.append((name, rows, cols, h, D[lin], None))
        else:
            blocks.append((name, rows, cols, None, None, Js[j]))
    return f, blocks
