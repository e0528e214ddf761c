"""scikit-learn's estimator conventions over the package's own calls: `fit` is atf.features of
the network at its weights followed by atf.solve (or atf.baseline), `predict` is the adapted
linearised model, Result.predict, and `score` a number. scikit-learn is not needed (nor
imported): the classes follow its conventions — hyperparameters as constructor arguments stored
as given, get_params/set_params, fitted attributes ending in an underscore, fit returning self —
so they work with its clone, cross-validation and grid search where it is installed."""
import inspect
from typing import Any, Dict, Optional

import numpy as np

from . import _check, _errors
from ._progress import ProgressArg
from .features import features
from .result import Result, baseline, solve


class _AdaptiveBase:
    """What the classifier and the regressor share: the hyperparameters, fit and the raw
    outputs."""

    def __init__(self, model: Any, penalty: str = "sq", loss: str = "interpolate", *,
                 method: str = "auto", baseline: bool = False, center: bool = False,
                 tol: float = 1e-6, max_iter: int = 10000, trainable_only: bool = True,
                 eval_mode: bool = False, progress: ProgressArg = None):
        self.model = model
        self.penalty = penalty
        self.loss = loss
        self.method = method
        self.baseline = baseline
        self.center = center
        self.tol = tol
        self.max_iter = max_iter
        self.trainable_only = trainable_only
        self.eval_mode = eval_mode
        self.progress = progress

    # ---- scikit-learn's parameter protocol ----
    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep: bool = True) -> Dict[str, Any]:
        """The constructor's arguments as stored (deep is accepted for scikit-learn; the model is
        returned itself, not its parameters)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> "_AdaptiveBase":
        names = self._param_names()
        for name, value in params.items():
            if name not in names:
                _errors.fail(f"{type(self).__name__}.set_params: unknown parameter {name!r} "
                             f"(one of {', '.join(names)})")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = inspect.signature(type(self).__init__).parameters
        shown = [f"{k}={v!r}" for k, v in self.get_params().items()
                 if k == "model" or defaults[k].default is not v and defaults[k].default != v]
        return f"{type(self).__name__}({', '.join(shown)})"

    # ---- fitting ----
    def _fit_targets(self, X: Any, Y: Any) -> "_AdaptiveBase":
        self.problem_ = features(self.model, X, Y, center=self.center, penalty=self.penalty,
                                 trainable_only=self.trainable_only, eval_mode=self.eval_mode,
                                 progress=self.progress)
        if self.baseline:
            self.result_ = baseline(self.problem_, tol=self.tol, max_iter=self.max_iter,
                                    progress=self.progress)
        else:
            self.result_ = solve(self.problem_, loss=self.loss, method=self.method,
                                 tol=self.tol, max_iter=self.max_iter, progress=self.progress)
        self.n_features_in_ = int(np.prod(np.shape(X)[1:]))
        return self

    def _outputs(self, X: Any) -> np.ndarray:
        """f0(X) + the adapted change, [N, C], of the fitted result."""
        result: Optional[Result] = getattr(self, "result_", None)
        if result is None:
            _errors.fail(f"{type(self).__name__}: not fitted yet (call fit first)")
        return np.asarray(result.predict(X))


class AdaptiveClassifier(_AdaptiveBase):
    """A classifier from a network's tangent features adapted by problem (16).

    fit(X, y): y holds class labels of any kind (ints, strings); `classes_` is their sorted set,
    and class j is trained as index j (one output: 2 classes as ±1; C outputs: one-hot, C the
    network's output width). With loss="xent:lambda=λ" the solve is the penalized cross-entropy;
    the default, "interpolate", interpolates the targets. predict(X): the labels of the largest
    output (one output: its sign); decision_function(X): the outputs; score(X, y): the
    accuracy, as scikit-learn's classifiers.

    Fitted attributes: problem_ (the atf.Problem), result_ (the atf.Result: its status,
    certificate and blocks), classes_, n_features_in_."""

    def fit(self, X: Any, y: Any) -> "AdaptiveClassifier":
        y = np.asarray(y)
        if y.ndim != 1:
            _errors.fail(f"AdaptiveClassifier.fit: y: shape {y.shape}, expected labels [N]")
        self.classes_, index = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            _errors.fail("AdaptiveClassifier.fit: y: one class only; a classifier needs two")
        return self._fit_targets(X, index.astype(np.int64))

    def decision_function(self, X: Any) -> np.ndarray:
        f = self._outputs(X)
        return f[:, 0] if f.shape[1] == 1 else f

    def predict(self, X: Any) -> np.ndarray:
        f = self._outputs(X)
        index = (f[:, 0] > 0).astype(int) if f.shape[1] == 1 else np.argmax(f, axis=1)
        return self.classes_[index]

    def score(self, X: Any, y: Any) -> float:
        """The fraction of labels predicted right (scikit-learn's accuracy)."""
        return float(np.mean(self.predict(X) == np.asarray(y)))


class AdaptiveRegressor(_AdaptiveBase):
    """A regressor from a network's tangent features adapted by problem (16).

    fit(X, y): y float targets [N] (one output) or [N, C]; loss "interpolate" (default) or
    "squared:lambda=λ". predict(X): [N] or [N, C] as y was; score(X, y): the coefficient of
    determination R² (averaged over outputs), as scikit-learn's regressors.

    Fitted attributes: problem_, result_, n_features_in_."""

    def fit(self, X: Any, y: Any) -> "AdaptiveRegressor":
        Y = _check.floats(y, "AdaptiveRegressor.fit: y", finite=True)
        self._one_output = Y.ndim == 1
        return self._fit_targets(X, Y.reshape(len(Y), -1))

    def predict(self, X: Any) -> np.ndarray:
        f = self._outputs(X)
        return f[:, 0] if getattr(self, "_one_output", False) else f

    def score(self, X: Any, y: Any) -> float:
        """R² = 1 − Σ(y − f)² / Σ(y − ȳ)², per output, averaged (scikit-learn's r2_score)."""
        Y = _check.floats(y, "AdaptiveRegressor.score: y", finite=True).reshape(len(y), -1)
        F = self.predict(X).reshape(len(Y), -1)
        resid = np.sum((Y - F) ** 2, axis=0)
        total = np.sum((Y - Y.mean(axis=0)) ** 2, axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            r2 = np.where(total > 0, 1.0 - resid / total, np.where(resid == 0, 1.0, 0.0))
        return float(np.mean(r2))
