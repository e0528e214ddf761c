"""Checks of Python values before they become C ones: arrays (numpy, torch tensors, lists) as
float64 or C ints, with refusals that name the item — the C side would otherwise wrap, truncate
or cast them silently (2**40 + 1 stored as 1, a complex array without its imaginary part, a NUL
ending a name early).

Accepted for float arrays: float64 (used as is), float32/float16 and integers (converted to
float64: every computation is in float64), numpy arrays, torch tensors (detached and moved to
the CPU; bfloat16 through float32) and nested lists. Refused: complex, bool, object, strings,
bytes, dates. Integer arrays (labels) must be integers (not bool, not floats) that fit a C int.
torch is never imported here."""
import numbers
import sys
from typing import Any, Optional

import numpy as np

from ._errors import InputError

INT_MIN, INT_MAX = -2**31, 2**31 - 1


def _fail(message: str) -> None:
    raise InputError(message, "bad input")


def _kind_name(a: np.ndarray) -> str:
    k = a.dtype.kind
    return {"b": "bool", "c": "complex", "O": "object", "U": "string", "S": "bytes",
            "V": "structured", "M": "datetime", "m": "timedelta"}.get(k, str(a.dtype))


def to_numpy(a: Any, what: str = "array") -> np.ndarray:
    """A torch tensor as a numpy array (detached, on the CPU; bfloat16 as float32); anything
    else as np.asarray. A torch module or a ragged list is refused."""
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(a, torch.nn.Module):
            _fail(f"{what}: expected an array, got a torch module ({type(a).__name__})")
        if isinstance(a, torch.Tensor):
            t = a.detach().to("cpu")
            if t.dtype == torch.bfloat16:
                t = t.float()
            if t.is_sparse:
                t = t.to_dense()
            return t.numpy()
    if isinstance(a, np.ndarray):
        return a
    try:
        return np.asarray(a)
    except (ValueError, TypeError) as exc:  # ragged nested lists
        _fail(f"{what}: not an array ({exc})")


def floats(a: Any, what: str, finite: bool = False) -> np.ndarray:
    """a as a float64 numpy array (a view when it already is one). float32, float16 and integer
    inputs are converted to float64; complex, bool, object and string arrays are refused. With
    finite, NaN and infinities are refused too (naming the first one's index)."""
    x = to_numpy(a, what)
    k = x.dtype.kind
    if k not in "fiu":
        hint = (": the library is real; pass .real explicitly if that is what is meant"
                if k == "c" else "")
        _fail(f"{what}: {_kind_name(x)} values are not accepted (a real float64 array is "
              f"expected; float32 and integers are converted){hint}")
    x = np.asarray(x, dtype=np.float64)
    if finite:
        check_finite(x, what)
    return x


def check_finite(x: np.ndarray, what: str) -> None:
    """Refuse NaN and infinities in a float array, naming the first one's position."""
    if x.size and not np.all(np.isfinite(x)):
        bad = np.argwhere(~np.isfinite(x))[0]
        at = ", ".join(map(str, bad)) if x.ndim else ""
        _fail(f"{what}: non-finite value {x[tuple(bad)]!r} at [{at}] (NaN and infinite values "
              "are not accepted)")


def as_inputs(X: Any, width: int, what: str) -> np.ndarray:
    """A network's inputs: X as a C-contiguous float64 [N, width] array (a view when it already is
    one); numpy arrays, torch tensors and lists; float32 and integers converted to float64;
    complex, bool, object and string arrays, NaN and infinities refused (atf.MLP's call and the
    tangent features, kernels and predictions at new inputs)."""
    a = floats(X, what)
    if a.ndim == 1 and width == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2 or a.shape[1] != width or a.shape[0] == 0:
        _fail(f"{what}: shape {a.shape}, expected [N, {width}] (N > 0) for a network with input "
              f"width {width}")
    a = np.ascontiguousarray(a)
    if not np.all(np.isfinite(a)):
        _fail(f"{what}: the inputs contain NaN or infinite values")
    return a


def ints(a: Any, what: str, lo: int = INT_MIN, hi: int = INT_MAX) -> np.ndarray:
    """a as an integer array of values in lo … hi (within a C int), as numpy intc. Floats (even
    integral ones), bool, complex, object and strings are refused; the first value out of range
    is named with its index."""
    x = to_numpy(a, what)
    if x.dtype.kind not in "iu":
        _fail(f"{what}: {_kind_name(x)} values: integers are expected")
    if x.size:
        flat = x.reshape(-1)
        out = (flat < lo) | (flat > hi)
        if np.any(out):
            i = int(np.argmax(out))
            idx = np.unravel_index(i, x.shape)
            at = ", ".join(map(str, idx))
            v = int(flat[i])
            why = (f"does not fit a C int ({INT_MIN} … {INT_MAX})"
                   if not INT_MIN <= v <= INT_MAX else f"is outside {lo} … {hi}")
            _fail(f"{what}: value {v} at [{at}] {why}")
    return x.astype(np.intc)


def labels(a: Any, what: str, N: Optional[int], C: Optional[int]) -> np.ndarray:
    """Class indices [N] as intc: integers in 0 … C−1 for C ≥ 2 outputs, 0 or 1 for one output
    (the two classes of a ±1 output; atf's class error reads f > 0 as class 1); C None: any
    non-negative int."""
    x = to_numpy(a, what)
    if x.ndim == 2 and x.shape[1] == 1:
        x = x.reshape(-1)
    if x.ndim != 1:
        _fail(f"{what}: shape {x.shape}: class indices are one integer per example [N]")
    if N is not None and x.shape[0] != N:
        _fail(f"{what}: {x.shape[0]} labels, expected {N} (one per example)")
    hi = INT_MAX if C is None else max(int(C), 2) - 1
    why = "" if C is None else (f" (the class indices of {C} outputs)" if C > 1 else
                                " (one output: the classes 0 and 1 of ±1 targets)")
    try:
        return ints(x, what, 0, hi)
    except InputError as e:
        raise InputError(e.message + why, e.code) from None


def integer(value: Any, what: str, lo: int = INT_MIN, hi: int = INT_MAX) -> int:
    """One integer argument in lo … hi (a C int at most): 2**40 is refused rather than
    wrapped; bool, floats with a fraction, NaN and non-numbers are refused too; numpy and 0-d
    torch integers are accepted."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor) and value.numel() == 1 and \
            not value.is_floating_point() and value.dtype != torch.bool:
        value = int(value.item())
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, float)):
        _fail(f"{what}: {value!r} is not an integer")
    if isinstance(value, float):
        if not value.is_integer():
            _fail(f"{what}: {value!r} is not an integer")
        value = int(value)
    value = int(value)
    if not lo <= value <= hi:
        c_int = INT_MIN <= lo and hi <= INT_MAX  # a C int argument (seeds are wider)
        why = (f"does not fit a C int ({INT_MIN} … {INT_MAX})"
               if c_int and not INT_MIN <= value <= INT_MAX else f"is outside {lo} … {hi}")
        _fail(f"{what}: {value} {why}")
    return value


def positive(value: Any, what: str) -> float:
    """One finite number > 0 (a tolerance, a step): NaN, infinities, 0 and negatives, bool and
    non-numbers are refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        _fail(f"{what}: {value!r} is not a number")
    v = float(value)
    if not 0 < v < float("inf"):
        _fail(f"{what}: {value!r} must be a finite number > 0")
    return v


def nonnegative(value: Any, what: str) -> float:
    """One finite number >= 0 (an interval in seconds): as positive, with 0 allowed."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        _fail(f"{what}: {value!r} is not a number")
    v = float(value)
    if not 0 <= v < float("inf"):
        _fail(f"{what}: {value!r} must be a finite number >= 0")
    return v


def text(value: Any, what: str) -> bytes:
    """A name or spec as the bytes C reads: a str without NUL (C would stop reading there)."""
    if not isinstance(value, str):
        _fail(f"{what}: {value!r} is not a string")
    if "\0" in value:
        _fail(f"{what}: {value!r} contains a NUL character")
    return value.encode()


def path(value: Any, what: str) -> bytes:
    """A file name as the bytes C opens: str, bytes or os.PathLike without NUL."""
    import os
    try:
        value = os.fspath(value)
    except TypeError:
        _fail(f"{what}: {value!r} is not a file name")
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    if "\0" in value or not value:
        _fail(f"{what}: {value!r} is not a file name (empty, or with a NUL character)")
    return os.fsencode(value)


def output_path(value: Any, what: str) -> bytes:
    """path(), for a file written later (a checkpoint may first be written hours into a
    solve): its directory must exist and be writable, and it must not be a directory."""
    import os
    name = path(value, what)
    shown = os.fsdecode(name)
    where = os.path.dirname(name) or b"."
    if os.path.isdir(name):
        _fail(f"{what}: {shown}: cannot write there: it is a directory")
    if not os.path.isdir(where):
        _fail(f"{what}: {shown}: cannot write there: directory {os.fsdecode(where)!r} does "
              f"not exist")
    if not os.access(where, os.W_OK | os.X_OK):
        _fail(f"{what}: {shown}: cannot write there: directory {os.fsdecode(where)!r} is not "
              f"writable")
    return name
