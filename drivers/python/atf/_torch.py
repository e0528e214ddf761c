"""The PyTorch bridge: nn.Sequential MLPs to atf.MLP (atf.from_torch), and the tangent features
of any other torch module through functorch (dense per-parameter blocks).

What is refused, always with atf.InputError naming the module by its qualified name in the model
(`lstm`, `2`, `encoder.0`; "the model" for the module itself) or the parameter (`2.weight`):
  - NaN or infinite values in a parameter or a buffer;
  - modules in training mode whose output depends on it (BatchNorm, Dropout and its variants,
    RReLU, InstanceNorm with running statistics), unless eval_mode=True (the model is then
    evaluated in eval mode); BatchNorm without running statistics always (it normalises with
    the batch's statistics even in eval mode, so the examples are not independent);
  - a module that returns a tuple, list or dict where a tensor is needed, a model whose output
    does not have one row per example, NaN or infinite outputs;
  - a module that cannot be run (or differentiated by functorch, e.g. nn.LSTM) on the inputs:
    the innermost module that raised is named, with torch's message.
Parameters with requires_grad=False are left out of the blocks when trainable_only (the default).

torch is imported only when a torch object is handled, so `import atf` needs numpy alone."""
import copy
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _check, _errors
from ._progress import Progress


_fail = _errors.fail


def to_numpy(a: Any, what: str = "array") -> np.ndarray:
    """A torch tensor as a numpy array (detached, on the CPU); anything else as np.asarray."""
    return _check.to_numpy(a, what)


def is_module(obj: Any) -> bool:
    """Whether obj is a torch.nn.Module (without importing torch when it was never imported)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def where(name: str, mod: Any) -> str:
    """How a module is named in messages: module 'lstm' (LSTM), or the model (Net)."""
    kind = type(mod).__name__
    return f"module '{name}' ({kind})" if name else f"the model ({kind})"


# ---- what is refused in any torch model ---------------------------------------------------------

def _mode_dependence(mod: Any) -> Optional[str]:
    """Why a module's output depends on its training mode (None if it does not, as far as atf
    knows: custom modules that branch on self.training are run in the mode they are in)."""
    import torch.nn as nn
    if isinstance(mod, nn.modules.batchnorm._BatchNorm):
        return "it normalises with the statistics of the batch, so the examples are not independent"
    if isinstance(mod, nn.modules.dropout._DropoutNd):
        return "it drops entries at random"
    if isinstance(mod, nn.RReLU):
        return "its negative slopes are random"
    if isinstance(mod, nn.modules.instancenorm._InstanceNorm) and mod.track_running_stats:
        return "it normalises with the statistics of the example instead of its running ones"
    return None


def check_module(module: Any, who: str, eval_mode: bool) -> None:
    """Refuse non-finite parameters and buffers (named) and modules whose output depends on
    their training mode while in training mode (unless eval_mode)."""
    import torch
    import torch.nn as nn
    for name, p in list(module.named_parameters()) + list(module.named_buffers()):
        if p is None or not torch.is_floating_point(p) and not torch.is_complex(p):
            continue
        if torch.is_complex(p):
            _fail(f"{who}: parameter '{name}' is complex: atf computes with real float64 values")
        t = p.detach()
        if not bool(torch.isfinite(t).all()):
            bad = tuple(int(i) for i in (~torch.isfinite(t)).nonzero()[0]) if t.dim() else ()
            kind = "buffer" if name in dict(module.named_buffers()) else "parameter"
            _fail(f"{who}: {kind} '{name}' contains NaN or infinite values (first at "
                  f"[{', '.join(map(str, bad))}])")
    for name, mod in module.named_modules():
        if isinstance(mod, nn.modules.batchnorm._BatchNorm) and not mod.track_running_stats:
            _fail(f"{who}: {where(name, mod)} has no running statistics "
                  "(track_running_stats=False): it normalises with the statistics of the batch "
                  "even in eval mode, so the examples are not independent and there is no "
                  "per-example Jacobian")
        if mod.training and not eval_mode:
            why = _mode_dependence(mod)
            if why:
                _fail(f"{who}: {where(name, mod)} is in training mode, where {why}: call "
                      "model.eval() first, or pass eval_mode=True (the model is then evaluated "
                      "in eval mode)")


# ---- nn.Sequential MLPs -------------------------------------------------------------------------

def _activation_spec(mod: Any, at: str) -> Optional[str]:
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
            _fail(f"atf.from_torch: {at} GELU(approximate='{approx}'): only the exact GELU "
                  "(approximate='none') is supported")
        return "gelu"
    if isinstance(mod, nn.Softplus):
        return f"softplus:beta={float(mod.beta)!r},threshold={float(mod.threshold)!r}"
    return None


def _flatten(module: Any, prefix: str = "") -> List[Tuple[str, Any]]:
    """The leaf modules of nested nn.Sequential containers, with their dotted names."""
    import torch.nn as nn
    if isinstance(module, nn.Sequential):
        out = []
        for name, child in module.named_children():
            out += _flatten(child, f"{prefix}{name}.")
        return out
    return [(prefix.rstrip("."), module)]


def parse_sequential(module: Any, eval_mode: bool = False, trainable_only: bool = True
                     ) -> Tuple[List[np.ndarray], List[Optional[np.ndarray]], List[str],
                                List[str]]:
    """(weights [in, out], biases, activations, frozen block names) of an nn.Sequential of
    nn.Linear and elementwise activations, as float64 numpy arrays; Dropout layers in eval mode
    (or with eval_mode) are the identity and left out. atf.InputError naming the first module
    that does not fit. frozen: the blocks (W1, b1, ...) whose parameter has requires_grad=False
    (empty unless trainable_only)."""
    import torch.nn as nn
    if not is_module(module):
        _fail(f"atf.from_torch: expected an nn.Sequential of nn.Linear and elementwise "
              f"activations, got {type(module).__name__}")
    check_module(module, "atf.from_torch", eval_mode)
    if not isinstance(module, (nn.Sequential, nn.Linear)):
        _fail(f"atf.from_torch: the model ({type(module).__name__}) is not an nn.Sequential of "
              "nn.Linear layers and elementwise activations")
    leaves = _flatten(module)
    weights, biases, acts, frozen = [], [], [], []
    pending = []  # non-identity activations seen since the last Linear
    for name, mod in leaves:
        at = where(name, mod)
        if isinstance(mod, nn.Linear):
            if weights:
                if len(pending) > 1:
                    _fail(f"atf.from_torch: {at}: two activations ({', '.join(pending)}) "
                          "between two Linear layers")
                acts.append(pending[0] if pending else "identity")
            elif pending:
                _fail(f"atf.from_torch: an activation ({pending[0]}) before the first Linear "
                      "layer")
            pending = []
            l = len(weights) + 1
            if trainable_only and not mod.weight.requires_grad:
                frozen.append(f"W{l}")
            if trainable_only and mod.bias is not None and not mod.bias.requires_grad:
                frozen.append(f"b{l}")
            w = mod.weight.detach().to("cpu").double().numpy()
            weights.append(np.ascontiguousarray(w.T))
            biases.append(None if mod.bias is None
                          else mod.bias.detach().to("cpu").double().numpy().copy())
            continue
        if isinstance(mod, nn.modules.dropout._DropoutNd):
            continue  # check_module refused it in training mode: in eval mode the identity
        spec = _activation_spec(mod, at)
        if spec is None:
            _fail(f"atf.from_torch: {at} is not supported: an MLP is nn.Linear layers with "
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
    return weights, biases, acts, frozen


# ---- any torch module: tangent features with functorch ------------------------------------------

def snapshot(module: Any, eval_mode: bool = False) -> Any:
    """A float64 copy of a module: the parameters θ0 at this moment, in eval mode with
    eval_mode, else in the modes its modules are in (check_module refused those where it
    matters)."""
    m = copy.deepcopy(module).double()
    if eval_mode:
        m.eval()
    for p in m.parameters():
        p.requires_grad_(False)
    return m


def trainable_names(module: Any, trainable_only: bool) -> List[str]:
    """The parameters that become blocks: all, or those with requires_grad (trainable_only)."""
    return [name for name, p in module.named_parameters()
            if p.requires_grad or not trainable_only]


def _as_tensor(X: Any, what: str) -> Any:
    import torch
    a = _check.floats(X, what)
    if a.ndim < 1 or a.shape[0] == 0:
        _fail(f"{what}: expected an array of examples along the first axis, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        _fail(f"{what}: the inputs contain NaN or infinite values")
    return torch.from_numpy(np.ascontiguousarray(a))


def param_matrix_shape(shape: Sequence[int]) -> Tuple[int, int]:
    """The matrix a parameter tensor is seen as: rows = the product of all but the first axis,
    cols = its first axis (nn.Linear weight [out, in] -> [in, out]; conv weight
    [C_out, C_in, k, k] -> [C_in·k·k, C_out]; a bias [out] -> [1, out])."""
    if len(shape) == 0:
        return 1, 1
    cols = int(shape[0])
    rows = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    return rows, cols


def block_names(module: Any) -> List[str]:
    return [name for name, _ in module.named_parameters()]


class _Tracker:
    """Forward hooks on every submodule of a module: the stack of the modules being run (so that
    an exception names the innermost one) and the first module that returned something other
    than a tensor."""

    def __init__(self, module: Any):
        import torch
        self.stack: List[Tuple[str, Any]] = []
        self.bad: Optional[Tuple[str, Any, str]] = None
        self.hooks = []
        for name, mod in module.named_modules():
            def pre(mod, inp, name=name):
                self.stack.append((name, mod))

            def post(mod, inp, out, name=name):
                if self.stack and self.stack[-1][1] is mod:
                    self.stack.pop()
                if self.bad is None and not isinstance(out, torch.Tensor):
                    self.bad = (name, mod, type(out).__name__)
            self.hooks.append(mod.register_forward_pre_hook(pre))
            self.hooks.append(mod.register_forward_hook(post))

    def remove(self) -> None:
        for h in self.hooks:
            h.remove()
        self.hooks = []

    def culprit(self, exc: BaseException) -> str:
        """The module to blame for exc: one that returned a tuple/dict/list when torch complains
        about one, else the innermost module being run."""
        if self.bad is not None and self.bad[2] in str(exc):
            name, mod, kind = self.bad
            return f"{where(name, mod)} returns a {kind}, not a tensor"
        if self.stack:
            import torch.nn as nn
            name, mod = self.stack[-1]
            hint = (" (recurrent layers run fused kernels that functorch cannot differentiate "
                    "example by example)" if isinstance(mod, nn.RNNBase) else "")
            return f"{where(name, mod)} raised {type(exc).__name__}{hint}"
        return f"the model raised {type(exc).__name__}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else repr(exc)


def _run(module: Any, fn: Any, who: str, doing: str) -> Any:
    """fn() with a _Tracker on module: torch's exceptions become atf.InputError naming the
    module (doing: what was being done, e.g. "cannot be applied to inputs of shape (3,)")."""
    tr = _Tracker(module)
    try:
        return fn()
    except _errors.Error:
        raise
    except Exception as exc:  # noqa: BLE001 — any torch failure, re-raised with the module named
        _fail(f"{who}: {doing}: {tr.culprit(exc)}: {_first_line(exc)}")
    finally:
        tr.remove()


def _check_output(out: Any, n: int, who: str, module: Any, bad: Optional[Tuple[str, Any, str]]
                  ) -> Any:
    """The model's output for n examples must be a real floating tensor with n rows."""
    import torch
    if not isinstance(out, torch.Tensor):
        culprit = (f"{where(bad[0], bad[1])} returns a {bad[2]}" if bad is not None else
                   f"the model ({type(module).__name__}) returns a {type(out).__name__}")
        _fail(f"{who}: {culprit}, not a tensor: the model must map a batch of inputs [N, ...] "
              "to one tensor of outputs [N, ...] (wrap it to select the output)")
    if not torch.is_floating_point(out):
        _fail(f"{who}: the model's output is {out.dtype}, not a real floating tensor")
    if out.dim() == 0 or out.shape[0] != n:
        _fail(f"{who}: the model's output for {n} example{'s' * (n != 1)} has shape "
              f"{tuple(out.shape)}: one row per example [N, ...] is expected")
    return out


def _linear_probe(module: Any, Xt: Any, who: str) -> Tuple[Dict[str, Any], int]:
    """The nn.Linear submodules that are applied exactly once per forward pass to a matrix of
    examples [n, in] (their Jacobian blocks factor as h δᵀ; {module name: module}), and the
    number of outputs C. The first run of the model on two inputs: what cannot be run, or
    returns no tensor of one row per example, is refused here, naming the module."""
    import torch
    calls: Dict[str, list] = {}
    hooks = []
    for name, mod in module.named_modules():
        if isinstance(mod, torch.nn.Linear):
            def hook(mod, inp, out, name=name):
                calls.setdefault(name, []).append(tuple(inp[0].shape))
            hooks.append(mod.register_forward_hook(hook))
    n = min(2, Xt.shape[0])
    tr = _Tracker(module)
    try:
        with torch.no_grad():
            out = module(Xt[:n])
    except _errors.Error:
        raise
    except Exception as exc:  # noqa: BLE001
        _fail(f"{who}: the model cannot be applied to inputs of shape {tuple(Xt.shape[1:])}: "
              f"{tr.culprit(exc)}: {_first_line(exc)}")
    finally:
        tr.remove()
        for h in hooks:
            h.remove()
    out = _check_output(out, n, who, module, tr.bad)
    C = int(out[0].numel())
    mods = dict(module.named_modules())
    return {name: mods[name] for name, shapes in calls.items()
            if len(shapes) == 1 and len(shapes[0]) == 2 and shapes[0][0] == n}, C


def _factored_linears(module: Any, Xt: Any, linears: Dict[str, Any], C: int, who: str,
                      prog: Progress) -> Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray]]:
    """H (the layer inputs) and D = ∂f_k/∂(layer output) [N·C, out] of the given nn.Linear
    modules by autograd on the whole batch: one backward pass per output k (the examples of a
    batch do not interact: check_module refused the modules where they would)."""
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
            f = _run(module, lambda: module(Xg), who, "the forward pass").reshape(Xt.shape[0], -1)
            names = list(linears)
            N = Xt.shape[0]
            D = {nm: np.empty((N * C, linears[nm].out_features)) for nm in names}
            prog.start("backward passes of the factored layers", C, "outputs")
            for k in range(C):
                grads = _run(module, lambda: torch.autograd.grad(
                    f[:, k].sum(), [outputs[nm] for nm in names], retain_graph=k < C - 1,
                    allow_unused=True), who, "the backward pass")
                for nm, g in zip(names, grads):
                    D[nm][k::C] = 0.0 if g is None else g.detach().numpy()
                prog.step()
    finally:
        for h in hooks:
            h.remove()
        for mod in linears.values():
            mod.weight.requires_grad_(False)
    return {nm: inputs[nm].numpy().copy() for nm in linears}, D


def module_tangent(module: Any, X: Any, what: str = "X", include: Optional[Sequence[str]] = None,
                   prog: Optional[Progress] = None, chunk_doubles: int = 1 << 24
                   ) -> Tuple[np.ndarray, list]:
    """f [N, C] and one Jacobian block per parameter of a float64 module (see snapshot), in
    parameter order, for the parameters in include (None: all): (name, rows, cols, H, D, J).
    The nn.Linear layers applied once to a matrix of examples give factored blocks (H [N, rows],
    D [N·C, cols], row m = i·C + k; the bias: H = 1) by autograd; every other parameter a dense
    J [N·C, rows·cols] (column a·cols + b for entry (a, b) of the parameter's matrix) by
    functorch's vmap(jacrev), in chunks of examples."""
    import functorch
    import torch
    prog = prog or Progress(what, False)
    Xt = _as_tensor(X, what)
    N = Xt.shape[0]
    where_x = what
    label = what.rsplit(": ", 1)[-1]
    all_names = block_names(module)
    keep = set(all_names if include is None else include)
    linears, C = _linear_probe(module, Xt, where_x)
    linears = {nm: mod for nm, mod in linears.items()
               if any((f"{nm}.{k}" if nm else k) in keep for k in ("weight", "bias"))}
    factored = {}
    for name, mod in linears.items():
        factored[f"{name}.weight" if name else "weight"] = (name, "weight")
        if mod.bias is not None:
            factored[f"{name}.bias" if name else "bias"] = (name, "bias")
    fmodel, params, buffers = functorch.make_functional_with_buffers(module)
    stateless = getattr(fmodel, "stateless_model", module)
    dense_idx = [j for j, n in enumerate(all_names) if n not in factored and n in keep]

    def single(ps_dense, x):
        ps = list(params)
        for j, p in zip(dense_idx, ps_dense):
            ps[j] = p
        return fmodel(tuple(ps), buffers, x.unsqueeze(0)).reshape(-1)

    f = np.empty((N, C))
    prog.start(f"outputs at {label}", N, "examples")
    with torch.no_grad():
        for s in range(0, N, 1024):
            xs = Xt[s:s + 1024]
            out = _run(module, lambda: module(xs), where_x, "the forward pass")
            out = _check_output(out, xs.shape[0], where_x, module, None)
            if out[0].numel() != C:
                _fail(f"{where_x}: the model gives {out[0].numel()} outputs per example for a "
                      f"batch of {xs.shape[0]}, {C} for a batch of 2")
            f[s:s + 1024] = out.reshape(-1, C).numpy()
            prog.step(xs.shape[0])
    if not np.all(np.isfinite(f)):
        i, k = np.argwhere(~np.isfinite(f))[0]
        _fail(f"{where_x}: the model's output {k} at example {i} is {f[i, k]!r} (NaN or infinite "
              "outputs: no problem can be built from them)")
    H, D = _factored_linears(module, Xt, linears, C, where_x, prog) if linears else ({}, {})
    Js = {j: np.empty((N * C, int(params[j].numel()))) for j in dense_idx}
    if dense_idx:
        P = sum(int(params[j].numel()) for j in dense_idx)
        chunk = max(1, int(chunk_doubles // max(1, C * P)))
        jac = functorch.vmap(functorch.jacrev(single), in_dims=(None, 0))
        dense_params = tuple(params[j] for j in dense_idx)
        prog.start(f"dense Jacobian at {label}", N, "examples")
        for s in range(0, N, chunk):
            xs = Xt[s:s + chunk]
            n = xs.shape[0]
            grads = _run(stateless, lambda: jac(dense_params, xs), where_x,
                         "functorch cannot differentiate the model (vmap of jacrev)")
            for j, g in zip(dense_idx, grads):
                rows, cols = param_matrix_shape(tuple(params[j].shape))
                g = g.detach().reshape(n * C, cols, rows).transpose(1, 2)
                Js[j][s * C:(s + n) * C] = g.reshape(n * C, rows * cols).numpy()
            prog.step(n)
    blocks = []
    for j, (name, p) in enumerate(zip(all_names, params)):
        if name not in keep:
            continue
        rows, cols = param_matrix_shape(tuple(p.shape))
        if name in factored:
            lin, kind = factored[name]
            h = H[lin] if kind == "weight" else np.ones((N, 1))
            blocks.append((name, rows, cols, h, D[lin], None))
        else:
            blocks.append((name, rows, cols, None, None, Js[j]))
    return f, blocks
