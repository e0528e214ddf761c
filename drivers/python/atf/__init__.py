"""atf — adaptive tangent features (problem (16) of LeJeune & Alemohammad) from Python.

The package calls libatf.so in process through ctypes, with numpy arrays in and out. It finds
the library in the repository's build directory (build/libatf.so) or at $ATF_LIBRARY.
See docs/python.md."""
from ._errors import (Error, FileError, InputError, Infeasible, IterationLimitWarning,
                      NumericalError)
from ._lib import lib as _lib_handle
from .penalty import Penalty
from .problem import Block, Problem, load
from .result import Result, ResultBlock, baseline, methods, solve
from .mlp import MLP, from_torch
from .features import features
from .tangent import ntk, path_kernel
from .kernels import Alignment, KernelReport, alignment, kernel_report
from .score import Score, score
from .estimator import AdaptiveClassifier, AdaptiveRegressor
from .figure import Figure
from ._cli import run as cli
from .experiments import PathResult, SweepResult, TrainResult, path, sweep, train
from . import data

__version__ = _lib_handle.atf_version().decode()

__all__ = ["Error", "InputError", "Infeasible", "NumericalError", "FileError",
           "IterationLimitWarning", "Penalty", "Block", "Problem", "Result", "ResultBlock", "load",
           "solve", "baseline", "methods", "MLP", "from_torch", "features", "ntk", "path_kernel",
           "alignment", "Alignment", "kernel_report", "KernelReport",
           "score", "Score", "AdaptiveClassifier", "AdaptiveRegressor",
           "Figure",
           "cli", "path", "sweep", "train", "PathResult", "SweepResult", "TrainResult", "data",
           "__version__"]
