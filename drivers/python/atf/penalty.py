"""atf.Penalty: the scalar penalty calculus of libatf (docs/penalties.md) on numpy arrays."""
import ctypes
import math
from typing import Any, Callable, Tuple, Union

import numpy as np

from . import _check, _errors, _lib

_lib_ = _lib.lib

Values = Union[float, np.ndarray]


class Penalty:
    """A penalty spec (`sq`, `pow:p=1.5,scale=0.1`, `sq + abs`, ...) parsed by libatf.

    Every method takes a scalar or an array (numpy, torch tensor or list; float32 and integers
    are converted: every value is computed in float64) and returns an array of the same shape
    (a float for a scalar), element by element through the library's own functions. Refused
    with atf.InputError: a spec that is not a string or contains a NUL character, or that the
    parser refuses; NaN or infinite values; complex, bool, object or string arrays."""

    def __init__(self, spec: str):
        self._c = _lib.PenaltyC()
        err = _lib.errbuf()
        cspec = _check.text(spec, "atf.Penalty: spec")
        _errors.check(_lib_.atf_penalty_parse(cspec, ctypes.byref(self._c), err), err)

    @property
    def spec(self) -> str:
        """The canonical spec (round-trips through the parser)."""
        buf = ctypes.create_string_buffer(_lib.SPECLEN)
        _lib_.atf_penalty_format(ctypes.byref(self._c), buf, len(buf))
        return _lib.text(buf.value)

    def __repr__(self):
        return f"atf.Penalty({self.spec!r})"

    def _map(self, f: Callable[[float], Any], v: Any, what: str, nout: int = 1):
        x = _check.floats(v, f"atf.Penalty.{what}: values", finite=True)
        outs = [np.empty(x.shape) for _ in range(nout)]
        flat = [o.reshape(-1) for o in outs]
        for i, xi in enumerate(x.reshape(-1)):
            vals = f(float(xi))
            if nout == 1:
                flat[0][i] = vals
            else:
                for o, val in zip(flat, vals):
                    o[i] = val
        if x.ndim == 0:
            outs = [float(o) for o in outs]
        return outs[0] if nout == 1 else tuple(outs)

    def omega_tilde(self, v: Any) -> Values:
        """Effective penalty ω̃(v) (eq. 12); even in v."""
        p = ctypes.byref(self._c)
        return self._map(lambda x: _lib_.atf_penalty_value(p, x, None), v, "omega_tilde")

    def argmin(self, v: Any) -> Values:
        """z* = argmin of ω̃(v) (the `z` column of `atf penalty`)."""
        p = ctypes.byref(self._c)
        z = ctypes.c_double()
        zp = ctypes.byref(z)

        def one(x):
            _lib_.atf_penalty_value(p, x, zp)
            return z.value
        return self._map(one, v, "argmin")

    def derivative(self, v: Any) -> Values:
        """ω̃'(v) = 2v / z*² (odd in v; the least-norm subgradient for `nuclear`)."""
        p = ctypes.byref(self._c)
        return self._map(lambda x: _lib_.atf_penalty_deriv(p, x), v, "derivative")

    def prox(self, v: Any, t: float) -> Values:
        """prox of t·ω̃ at v (odd in v). t is a finite scalar ≥ 0 (t = 0 gives the identity);
        a negative, NaN or infinite t is refused (atf.InputError), as are non-finite v."""
        if isinstance(t, (bool, np.bool_)):
            _errors.fail(f"atf.Penalty.prox: t = {t!r} is not a number")
        try:
            t = float(t)
        except (TypeError, ValueError):
            _errors.fail(f"atf.Penalty.prox: t = {t!r} is not a number")
        if not math.isfinite(t) or t < 0:
            _errors.fail(f"atf.Penalty.prox: t = {t!r}: the step must be a finite number ≥ 0")
        p = ctypes.byref(self._c)
        return self._map(lambda x: _lib_.atf_penalty_prox(p, x, t, None), v, "prox")

    def factors(self, d: Any) -> Tuple[Values, Values, Values]:
        """Factor recovery (eq. 15) of singular values d ≥ 0: (s1, sigma, s2) with
        s1·s2 = z*, sigma = d / z*."""
        p = ctypes.byref(self._c)
        s1, sigma, s2 = ctypes.c_double(), ctypes.c_double(), ctypes.c_double()
        refs = (ctypes.byref(s1), ctypes.byref(sigma), ctypes.byref(s2))

        def one(x):
            _lib_.atf_penalty_factors(p, x, *refs)
            return s1.value, sigma.value, s2.value
        return self._map(one, d, "factors", nout=3)
