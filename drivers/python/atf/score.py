"""atf.score: the numbers `atf predict` reports — mean squared error, error rate, class error and
softmax cross-entropy — for a result on a problem or its test split, or for any predictions
(a network's outputs, Result.predict at new inputs) against targets.

The metrics come from the library's own functions: for a result, atf_predict_result (the
function behind `atf predict`: f = f0 + Σ_ℓ A_ℓ vec B_ℓ on the split, then its metrics), so the
numbers equal the command's bit for bit; for predictions given as an array,
atf_prediction_error, atf_prediction_class_error and atf_loss_mean_xent, and the mean squared
error summed in the same order as the library's loop."""
import ctypes
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Optional

import numpy as np

from . import _check, _errors, _lib
from .problem import Problem
from .result import Result

_c = _lib.lib
_P_INT = ctypes.POINTER(ctypes.c_int)
_NAN = float("nan")


@dataclass(frozen=True)
class Score:
    """The metrics of predictions f [N, C] against a split (the fields of `atf predict --json`,
    with rel_mse besides); NaN where a metric does not apply.

    mse: mean over the N·C entries of (f − y)²; rel_mse: Σ (f − y)² / Σ (y − ȳ)² (NaN when y is
    constant); error: the error rate against y — sign disagreement for one output, argmax
    disagreement for several; class_error: the error rate against the labels (one output:
    f > 0 means class 1; NaN without labels); xent: the mean softmax cross-entropy of f taken
    as logits against the labels (NaN without labels, with one output, or with a label outside
    0 … C−1). predictions: the f that was scored (for a result, computed by the library)."""
    samples: int
    outputs: int
    mse: float
    error: float
    class_error: float
    xent: float
    rel_mse: float
    predictions: Optional[np.ndarray] = field(default=None, repr=False, compare=False)

    def as_dict(self) -> Dict[str, Any]:
        """samples, mse, error, class_error, xent (the keys of a split in `atf predict --json`)
        and outputs, rel_mse."""
        d = asdict(self)
        d.pop("predictions")
        return d


def _xent(N: int, C: int, F: Any, labels: Any) -> float:
    """split_xent of `atf predict` (drivers/cli/cmd_predict.c): NaN without labels, with one
    output, or with a label outside 0 … C−1; else atf_loss_mean_xent."""
    if not labels or C < 2 or N <= 0:
        return _NAN
    for i in range(N):
        if labels[i] < 0 or labels[i] >= C:
            return _NAN
    return _c.atf_loss_mean_xent(N, C, F, labels)


def _of_result(problem: Problem, result: Result) -> Score:
    """The split `problem` (a problem or its .test) of a result, by atf_predict_result."""
    root = problem.parent if problem.parent is not None else problem
    out = _lib.PredictionsC()
    err = _lib.errbuf()
    # the pair check of `atf predict` (atf_result_match): the fingerprints must agree
    theirs, ours = result.problem_fingerprint, root.fingerprint
    if theirs and theirs != ours:
        _errors.fail(f"atf.score: result: problem_fingerprint {theirs}, but the problem has "
                     f"fingerprint {ours}: the result was computed from another problem")
    if not theirs:
        warnings.warn("atf.score: the result has no problem_fingerprint (written by an earlier "
                      "atf): cannot check that it was computed from this problem",
                      RuntimeWarning, stacklevel=3)
    _errors.check(_c.atf_predict_result(root._p, b"problem", result._p, b"result",
                                        ctypes.byref(out), err), err)
    try:
        s = out.test if problem.parent is not None else out.train
        N, C = s.N, s.C
        f = np.ctypeslib.as_array(s.f, shape=(N * C,)).reshape(N, C).copy() if N > 0 else \
            np.empty((0, C))
        return Score(N, C, s.mse, s.error, s.class_error, _xent(N, C, s.f, s.labels), s.rel_mse,
                     f)
    finally:
        _c.atf_predictions_free(ctypes.byref(out))


def _sequential_sum(v: np.ndarray) -> float:
    """Σ v in index order (as the library's loop sums; numpy's sum is pairwise)."""
    return float(np.cumsum(v)[-1]) if v.size else 0.0


def _of_arrays(F: np.ndarray, y: Optional[np.ndarray], labels: Optional[np.ndarray]) -> Score:
    N, C = F.shape
    M = N * C
    Fp = F.ctypes.data_as(_lib.P_D)
    lab = labels.ctypes.data_as(_P_INT) if labels is not None else None
    mse = rel = err = _NAN
    if y is not None:
        sq = _sequential_sum((F - y).reshape(-1) ** 2)
        mean = _sequential_sum(y.reshape(-1)) / M
        var = _sequential_sum((y.reshape(-1) - mean) ** 2)
        mse = sq / M
        rel = sq / var if var > 0 else _NAN
        err = _c.atf_prediction_error(N, C, Fp, y.ctypes.data_as(_lib.P_D))
    cls = _c.atf_prediction_class_error(N, C, Fp, lab) if labels is not None else _NAN
    xent = _xent(N, C, Fp, lab) if labels is not None else _NAN
    return Score(N, C, mse, err, cls, xent, rel, F.copy())


def score(data: Any, predictions: Any) -> Score:
    """The error rate, cross-entropy and mean squared error of predictions against a split, as
    `atf predict` reports them (its JSON's "train" or "test" fields).

    data: an atf.Problem — a problem (its training rows) or its held-out split `problem.test` —
    or the targets themselves: class indices [N] (integers, 0 … C−1; 0/1 for one output) or
    float targets [N, C] (numpy arrays or torch tensors).
    predictions: an atf.Result of that problem (the library computes f = f0 + Σ A_ℓ vec B_ℓ on
    the split, exactly as `atf predict`: the numbers are the command's, bit for bit), or
    predictions f [N, C] (a network's outputs, Result.predict(X_test), ...; float32 converted
    to float64) scored with the library's metric functions.

    Returns an atf.Score (samples, outputs, mse, error, class_error, xent, rel_mse; NaN where a
    metric does not apply: mse and error need float targets, class_error and xent labels, xent
    two or more outputs).

    Refused (atf.InputError): a result of another problem (the fingerprints differ), a result
    scored against bare targets (pass the problem, or Result.predict's output), predictions of
    the wrong shape or with NaN or infinite values, complex, bool, object or string arrays,
    labels outside 0 … C−1 (0/1 for one output) or that do not fit a C int."""
    if isinstance(predictions, Result):
        if not isinstance(data, Problem):
            _errors.fail("atf.score: a result is scored on its problem or the problem's test "
                         "split (pass the atf.Problem), not on bare targets: for new inputs "
                         "pass result.predict(X) as the predictions")
        return _of_result(data, predictions)
    F = _check.floats(predictions, "atf.score: predictions", finite=True)
    if F.ndim == 1:
        F = F.reshape(-1, 1)
    if F.ndim != 2 or F.shape[0] == 0 or F.shape[1] == 0:
        _errors.fail(f"atf.score: predictions: shape {F.shape}, expected [N, C] (N, C > 0)")
    N, C = F.shape
    _check.integer(N * C, "atf.score: predictions: N·C", 1)
    F = np.ascontiguousarray(F)
    if isinstance(data, Problem):
        if (data.samples, data.outputs) != (N, C):
            _errors.fail(f"atf.score: predictions: shape {F.shape}, but the problem has "
                         f"{data.samples} examples and {data.outputs} outputs")
        y = np.ascontiguousarray(data.y) if data.y is not None else None
        lab = data.labels
        labels = None if lab is None else np.ascontiguousarray(lab, dtype=np.intc)
        return _of_arrays(F, y, labels)
    if isinstance(data, (Result, str, bytes)) or data is None:
        _errors.fail(f"atf.score: data: expected an atf.Problem or targets, got "
                     f"{type(data).__name__}")
    T = _check.to_numpy(data, "atf.score: targets")
    if T.dtype.kind in "iu":
        labels = np.ascontiguousarray(_check.labels(T, "atf.score: labels", N, C))
        return _of_arrays(F, None, labels)
    y = _check.floats(T, "atf.score: targets", finite=True)
    if y.ndim == 1 and C == 1:
        y = y.reshape(-1, 1)
    if y.shape != (N, C):
        _errors.fail(f"atf.score: targets: shape {T.shape}, expected [{N}, {C}] like the "
                     "predictions, or class indices [N]")
    return _of_arrays(F, np.ascontiguousarray(y), None)

