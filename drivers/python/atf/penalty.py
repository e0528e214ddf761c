"""atf.Penalty: the scalar penalty calculus of libatf (docs/penalties.md) on numpy arrays."""
import ctypes

import numpy as np

from . import _errors, _lib

_lib_ = _lib.lib


class Penalty:
    """A penalty spec (`sq`, `pow:p=1.5,scale=0.1`, `sq + abs`, ...) parsed by libatf.

    Every method takes a scalar or an array and returns an array of the same shape (a float for a
    scalar), element by element through the library's own functions."""

    def __init__(self, spec):
        self._c = _lib.PenaltyC()
        err = _lib.errbuf()
        _errors.check(_lib_.atf_penalty_parse(str(spec).encode(), ctypes.byref(self._c), err), err)

    @property
    def spec(self):
        """The canonical spec (round-trips through the parser)."""
        buf = ctypes.create_string_buffer(_lib.SPECLEN)
        _lib_.atf_penalty_format(ctypes.byref(self._c), buf, len(buf))
        return _lib.text(buf.value)

    def __repr__(self):
        return f"atf.Penalty({self.spec!r})"

    def _map(self, f, v, nout=1):
        x = np.asarray(v, dtype=np.float64)
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

    def omega_tilde(self, v):
        """Effective penalty ω̃(v) (eq. 12); even in v."""
        p = ctypes.byref(self._c)
        return self._map(lambda x: _lib_.atf_penalty_value(p, x, None), v)

    def argmin(self, v):
        """z* = argmin of ω̃(v) (the `z` column of `atf penalty`)."""
        p = ctypes.byref(self._c)
        z = ctypes.c_double()
        zp = ctypes.byref(z)

        def one(x):
            _lib_.atf_penalty_value(p, x, zp)
            return z.value
        return self._map(one, v)

    def derivative(self, v):
        """ω̃'(v) = 2v / z*² (odd in v; the least-norm subgradient for `nuclear`)."""
        p = ctypes.byref(self._c)
        return self._map(lambda x: _lib_.atf_penalty_deriv(p, x), v)

    def prox(self, v, t):
        """prox of t·ω̃ at v (odd in v; t ≤ 0 gives the identity). t is a scalar."""
        p = ctypes.byref(self._c)
        t = float(t)
        return self._map(lambda x: _lib_.atf_penalty_prox(p, x, t, None), v)

    def factors(self, d):
        """Factor recovery (eq. 15) of singular values d ≥ 0: (s1, sigma, s2) with
        s1·s2 = z*, sigma = d / z*."""
        p = ctypes.byref(self._c)
        s1, sigma, s2 = ctypes.c_double(), ctypes.c_double(), ctypes.c_double()
        refs = (ctypes.byref(s1), ctypes.byref(sigma), ctypes.byref(s2))

        def one(x):
            _lib_.atf_penalty_factors(p, x, *refs)
            return s1.value, sigma.value, s2.value
        return self._map(one, d, nout=3)
