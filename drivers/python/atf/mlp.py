"""atf.MLP: a network of the C library (atf_mlp.h) — weights, per-layer biases and elementwise
activations — and atf.from_torch for nn.Sequential MLPs.

The weights live in the C struct; `.weights` and `.biases` are read-only numpy views of them (an
MLP does not change once built, so a problem or result that remembers it stays consistent)."""
import ctypes
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _check, _errors, _lib, _torch
from .problem import _file_bytes, _from_file_bytes

_c = _lib.lib


_fail = _errors.fail


def _matrix(a: Any, what: str) -> np.ndarray:
    a = _check.floats(a, f"atf.MLP: {what}")
    if not np.all(np.isfinite(a)):
        _fail(f"atf.MLP: {what}: NaN or infinite values")
    return a


class MLP:
    """f(x) = W_Lᵀ h_{L−1} + b_L with h_ℓ = σ_ℓ(W_ℓᵀ h_{ℓ−1} + b_ℓ), h_0 = x.

    weights[ℓ] has shape [in, out] (the transpose of nn.Linear.weight); biases is None (no
    bias) or one entry per layer, each None or a vector of `out` values; activation is one spec
    for every hidden layer or a list of L − 1 specs: relu, leaky_relu[:slope=s], tanh, sigmoid,
    gelu, softplus[:beta=b,threshold=t], identity (docs/tangent.md). param is "standard" or
    "ntk" (a_ℓ = c_ℓ W_ℓᵀ h + b_ℓ with c_ℓ = √(g_ℓ/P_ℓ), docs/tangent.md §2); a network read
    from a file has the file's. frozen names blocks (W1, b2, ...) that atf.features, atf.ntk,
    atf.path_kernel and a result's predict/kernel leave out (with trainable_only=True, their
    default): atf.from_torch records the parameters with requires_grad=False there; the MLP
    file does not store it.

    Arrays may be numpy arrays, torch tensors or lists; float32 and integer values are
    converted to float64. Refused (atf.InputError naming the item): complex, bool, object or
    string arrays, NaN or infinite values, shapes that do not chain, more than 16 layers,
    unknown activations, names of frozen blocks the network does not have."""

    def __init__(self, weights: Sequence[Any], biases: Optional[Sequence[Any]] = None,
                 activation: Union[str, Sequence[str], None] = "relu", param: str = "standard",
                 frozen: Iterable[str] = ()):
        self._h = None
        if _torch.is_module(weights) or isinstance(weights, (str, bytes)):
            _fail(f"atf.MLP: weights: expected a list of [in, out] matrices, got "
                  f"{type(weights).__name__} (atf.from_torch converts a torch model)")
        weights = [_matrix(w, f"weights[{l}]") for l, w in enumerate(weights)]
        L = len(weights)
        if L == 0 or L > 16:
            _fail(f"atf.MLP: {L} layers: 1 to 16 weight matrices expected")
        for l, w in enumerate(weights):
            if w.ndim != 2 or 0 in w.shape:
                _fail(f"atf.MLP: weights[{l}] has shape {w.shape}: expected a non-empty "
                      "[in, out] matrix")
            if l and w.shape[0] != weights[l - 1].shape[1]:
                _fail(f"atf.MLP: weights[{l}] has {w.shape[0]} inputs but weights[{l - 1}] has "
                      f"{weights[l - 1].shape[1]} outputs (weights are [in, out], the transpose "
                      "of nn.Linear.weight)")
        widths = [weights[0].shape[0]] + [w.shape[1] for w in weights]
        if biases is None:
            biases = [None] * L
        biases = list(biases)
        if len(biases) != L:
            _fail(f"atf.MLP: {len(biases)} biases for {L} layers (give None for a layer without "
                  "one)")
        for l, b in enumerate(biases):
            if b is not None:
                b = _matrix(b, f"biases[{l}]").reshape(-1)
                if b.size != widths[l + 1]:
                    _fail(f"atf.MLP: biases[{l}] has {b.size} values, layer {l} has "
                          f"{widths[l + 1]} outputs")
                biases[l] = b
        for l, w in enumerate(widths):
            _check.integer(w, f"atf.MLP: width of layer {l}", 1)
        if isinstance(activation, str) or activation is None:
            acts = [activation or "relu"] * (L - 1)
        else:
            acts = list(activation)
            if len(acts) != L - 1:
                _fail(f"atf.MLP: {len(acts)} activations for {L - 1} hidden layers (the output "
                      "layer has none)")
        cacts = [_check.text(a, f"atf.MLP: activation[{l}]") for l, a in enumerate(acts)]
        cparam = _check.text(param, "atf.MLP: param")
        h = ctypes.c_void_p()
        err = _lib.errbuf()
        cw = (ctypes.c_int * (L + 1))(*widths)
        cb = (ctypes.c_int * L)(*[b is not None for b in biases])
        ca = (ctypes.c_char_p * max(L - 1, 1))(*cacts)
        _errors.check(_c.atf_mlp_new(L, cw, cb, ca if L > 1 else None, cparam,
                                     ctypes.byref(h), err), err)
        self._h = h
        self.param = str(param)
        self.frozen = ()
        for l in range(L):
            ctypes.memmove(_c.atf_mlp_weight(h, l), np.ascontiguousarray(weights[l]).ctypes.data,
                           weights[l].nbytes)
            if biases[l] is not None:
                ctypes.memmove(_c.atf_mlp_bias(h, l), biases[l].ctypes.data, biases[l].nbytes)
        self._describe()
        self.frozen = self._check_frozen(frozen)

    def _check_frozen(self, frozen: Iterable[str]) -> tuple:
        if isinstance(frozen, str):
            frozen = [frozen]
        names = self.block_names()
        out = []
        for f in frozen:
            if f not in names:
                _fail(f"atf.MLP: frozen: {f!r} is not a block of this network ({', '.join(names)})")
            out.append(f)
        return tuple(n for n in names if n in out)

    def _unfrozen(self) -> "MLP":
        """This network with every block trainable (a copy when some are frozen)."""
        if not self.frozen:
            return self
        return MLP(self.weights, self.biases, self.activations, self.param)

    def trainable_blocks(self) -> List[str]:
        """The block names that are not frozen, in order."""
        return [n for n in self.block_names() if n not in self.frozen]

    @classmethod
    def _wrap(cls, h):
        self = cls.__new__(cls)
        self._h = h
        self.param = _c.atf_mlp_param_name(h).decode()
        self.frozen = ()
        self._describe()
        return self

    def _describe(self):
        """Read the shapes and the read-only views of the weights from the C struct."""
        h = self._h
        L = _c.atf_mlp_layers(h)
        self.widths = [_c.atf_mlp_width(h, l) for l in range(L + 1)]
        self.weights, self.biases, self.activations = [], [], []
        for l in range(L):
            P, Q = self.widths[l], self.widths[l + 1]
            self.weights.append(self._view(_c.atf_mlp_weight(h, l), (P, Q)))
            b = _c.atf_mlp_bias(h, l)
            self.biases.append(self._view(b, (Q,)) if b else None)
        buf = ctypes.create_string_buffer(128)
        for l in range(L - 1):
            _c.atf_mlp_activation_spec(h, l, buf, len(buf))
            self.activations.append(_lib.text(buf.value))

    def _view(self, ptr, shape):
        n = int(np.prod(shape))
        buf = (ctypes.c_double * n).from_address(ctypes.cast(ptr, ctypes.c_void_p).value)
        buf._atf_owner = self
        a = np.frombuffer(buf, dtype=np.float64).reshape(shape)
        a.flags.writeable = False
        return a

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            _c.atf_mlp_free(h)

    def __reduce__(self) -> Tuple[Any, ...]:
        """Pickling (and copy.copy / copy.deepcopy): the exact bytes of the MLP file `write`
        produces (weights and biases bit for bit, activations, parameterization), read back by
        `read`, plus `frozen`, which the file does not store."""
        return (_mlp_from_bytes, (_file_bytes(self.write),), {"frozen": self.frozen})

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.frozen = self._check_frozen(state["frozen"])

    layers = property(lambda self: len(self.weights))

    def block_names(self) -> List[str]:
        """The problem's block names of this network, in order: W1, b1 (if layer 1 has a bias),
        W2, ..."""
        names = []
        for l, b in enumerate(self.biases):
            names.append(f"W{l + 1}")
            if b is not None:
                names.append(f"b{l + 1}")
        return names

    @property
    def fingerprint(self) -> str:
        """The network's fingerprint (as a problem's `mlp_fingerprint`)."""
        out = ctypes.create_string_buffer(_lib.FINGERPRINT_LEN)
        _errors.check(_c.atf_mlp_fingerprint(self._h, out), _lib.errbuf())
        return _lib.text(out.value)

    def __call__(self, X: Any) -> np.ndarray:
        """f(X) [N, C] for X [N, in] (atf_mlp_forward; X a numpy array or torch tensor, float32
        converted to float64; NaN, infinities, complex, bool and strings refused)."""
        X = _check.as_inputs(X, self.widths[0], "X")
        F = np.empty((X.shape[0], self.widths[-1]))
        err = _lib.errbuf()
        _errors.check(_c.atf_mlp_forward(self._h, X.shape[0], X.ctypes.data_as(_lib.P_D),
                                         F.ctypes.data_as(_lib.P_D), err), err)
        return F

    @classmethod
    def read(cls, path: Any) -> "MLP":
        """Read an MLP file (docs/formats.md "MLP file")."""
        h = ctypes.c_void_p()
        err = _lib.errbuf()
        _errors.check(_c.atf_mlp_read(_check.path(path, "atf.MLP.read"), ctypes.byref(h), err), err)
        return cls._wrap(h)

    def write(self, path: Any) -> None:
        """Write the MLP file atomically (`atf features --mlp` reads it; frozen is not stored:
        the program builds every block)."""
        err = _lib.errbuf()
        _errors.check(_c.atf_mlp_write(_check.path(path, "atf.MLP.write"), self._h, err), err)

    @classmethod
    def create(cls, widths: Sequence[int], *, seed: int = 1, bias: Union[bool, str] = False,
               activation: str = "relu", param: str = "standard", init: str = "he") -> "MLP":
        """A network drawn from a seed exactly as `atf features`, `atf train` and the
        experiments draw theirs (`--widths --seed --bias --activation --param --init`): the
        same seed gives the same weights, bit for bit, so atf.features of this network on
        atf.data's arrays gives the command's problem file (the same fingerprint).

        widths: every width, input to output ([784, 128, 128, 10]); seed: the weights' seed
        (the commands' default 1); bias: False (none), True (every layer), or the command's
        1-based layer list "1,3"; activation: one spec ("gelu", "leaky_relu:slope=0.1") or
        L−1 specs joined by ';'; param: "standard" or "ntk"; init: "he" or "torch"."""
        from . import _data_lib as _d  # the network options' ctypes mirror
        where = "atf.MLP.create"
        sizes = [_check.integer(w, f"{where}: widths", 1) for w in widths]
        if len(sizes) < 2:
            _fail(f"{where}: widths: at least an input and an output width are needed")
        bias_text = {True: "1", False: "0"}.get(bias, bias) if isinstance(bias, bool) else bias
        options = {"widths": ",".join(map(str, sizes)), "bias": _check.text(
                   bias_text, f"{where}: bias").decode(), "activation": _check.text(
                   activation, f"{where}: activation").decode(), "param": param, "init": init,
                   "seed": str(_check.integer(seed, f"{where}: seed", 0, 2**63 - 1))}
        net = _d.atf_net_options_default()
        err = _lib.errbuf()
        for name, value in options.items():
            e = _d.atf_net_option(ctypes.byref(net), name.encode(), str(value).encode(), err)
            _errors.check(e, err)
        arch = _d.ArchC()
        _errors.check(_d.atf_net_arch(ctypes.byref(net), ctypes.byref(arch), err), err)
        h = ctypes.c_void_p()
        _errors.check(_d.atf_mlp_create(ctypes.byref(arch), net.seed, ctypes.byref(h), err), err)
        return cls._wrap(h)

    @classmethod
    def _from_torch(cls, module: Any, trainable_only: bool = True, eval_mode: bool = False
                    ) -> "MLP":
        weights, biases, acts, frozen = _torch.parse_sequential(module, eval_mode,
                                                                trainable_only)
        return cls(weights, biases, acts, frozen=frozen)

    def __repr__(self):
        acts = ",".join(dict.fromkeys(self.activations)) or "-"
        nb = sum(b is not None for b in self.biases)
        fz = f", frozen {','.join(self.frozen)}" if self.frozen else ""
        return (f"atf.MLP(widths={self.widths}, activation={acts}, biases on {nb} of "
                f"{self.layers} layers{fz})")


def _mlp_from_bytes(data: bytes) -> MLP:
    """An unpickled MLP: its file's bytes read back by MLP.read."""
    return _from_file_bytes(data, MLP.read)


def from_torch(module: Any, *, trainable_only: bool = True, eval_mode: bool = False) -> MLP:
    """An atf.MLP with the weights of an nn.Sequential of nn.Linear (bias on any subset) and the
    elementwise activations ReLU, LeakyReLU, Tanh, Sigmoid, GELU (approximate='none'), Softplus
    and Identity (weights copied, in float64).

    trainable_only: parameters with requires_grad=False are recorded as the MLP's `frozen`
    blocks, which atf.features, atf.ntk and atf.path_kernel leave out (False: none frozen).
    Dropout layers are the identity in eval mode and left out; in training mode they are
    refused unless eval_mode=True (the network is then taken in eval mode).

    Refused with atf.InputError naming the module (its qualified name in the model, e.g. '2')
    or the parameter ('2.weight'): any other layer (BatchNorm, Conv2d, nn.LSTM, ...; atf.features
    and atf.ntk take those on their general path), two activations in a row, an activation after
    the last Linear layer, widths that do not chain, NaN or infinite parameters, Dropout in
    training mode."""
    return MLP._from_torch(module, trainable_only, eval_mode)
