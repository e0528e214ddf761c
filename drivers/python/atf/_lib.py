"""Loading libatf.so and the ctypes mirror of its public structs and functions.

The structs below mirror problems/atf_problem.h, problems/atf_result.h, penalties/atf_penalty.h,
problems/atf_loss.h, solver/atf_solver.h and problems/tangent/atf_features.h (the
Jacobian) field by field (enums are C ints); the test
tests/python/test_layout.py compares every size and offset with a C program compiled against
those headers, so a change there that is not made here fails the tests.
"""
import ctypes
import os
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_int, c_int64, c_size_t,
                    c_void_p)
from pathlib import Path

ERRLEN = 512          # ATF_ERRLEN
NAMELEN = 64          # ATF_NAMELEN
SPECLEN = 128         # ATF_PENALTY_SPECLEN
FINGERPRINT_LEN = 33  # ATF_FINGERPRINT_LEN
COMMANDLEN = 2048     # ATF_COMMANDLEN
METHOD_NAMELEN = 24   # ATF_METHOD_NAMELEN


def _candidates():
    """Where the library is looked for: $ATF_LIBRARY alone when set; else beside this file (the
    installed package: pip install . puts libatf.so there); else the build directory of the
    source tree this package sits in (drivers/python/atf -> repository root)."""
    env = os.environ.get("ATF_LIBRARY")
    if env:
        return [Path(env)]
    here = Path(__file__).resolve().parent
    return [here / "libatf.so", here.parents[2] / "build" / "libatf.so"]


def _load():
    tried = _candidates()
    for path in tried:
        if path.is_file():
            return ctypes.CDLL(str(path))
    where = ", ".join(str(p) for p in tried)
    raise ImportError(
        f"atf: libatf.so not found (looked at {where}); install the package with "
        "`pip install --no-build-isolation .` (docs/python.md), or build it with "
        "`bash scripts/build.sh` from the repository root, or set ATF_LIBRARY to its path")


lib = _load()
libc = ctypes.CDLL(None)  # malloc for the arrays a C problem owns (freed by atf_problem_free)
libc.malloc.restype = c_void_p
libc.malloc.argtypes = [c_size_t]
libc.free.restype = None
libc.free.argtypes = [c_void_p]


class Omega(Structure):
    _fields_ = [("family", c_int), ("p", c_double), ("scale", c_double), ("auto_scale", c_int)]


class PenaltyC(Structure):
    _fields_ = [("w1", Omega), ("w2", Omega)]


class BlockC(Structure):
    _fields_ = [
        ("name", c_char * NAMELEN),
        ("index", c_int),
        ("rows", c_int), ("cols", c_int),
        ("N", c_int), ("C", c_int), ("M", c_int),
        ("penalty", PenaltyC),
        ("penalty_spec", c_char * SPECLEN),
        ("structure", c_int),
        ("kind", c_int),
        ("J", POINTER(c_double)),
        ("nnz", c_int64),
        ("indptr", POINTER(c_int64)),
        ("indices", POINTER(c_int64)),
        ("data", POINTER(c_double)),
        ("H", POINTER(c_double)),
        ("D", POINTER(c_double)),
    ]


class ProvenanceC(Structure):
    _fields_ = [
        ("atf_version", c_char * 32),
        ("command", c_char * COMMANDLEN),
        ("data_source", c_char * 1024),
        ("has_data_seed", c_int),
        ("data_seed", c_int64),
        ("has_standardize", c_int),
        ("standardize", c_int),
        ("mlp_fingerprint", c_char * FINGERPRINT_LEN),
    ]


class ProblemC(Structure):
    pass


ProblemC._fields_ = [
    ("N", c_int), ("C", c_int), ("M", c_int),
    ("r", POINTER(c_double)),
    ("y", POINTER(c_double)),
    ("f0", POINTER(c_double)),
    ("labels", POINTER(c_int)),
    ("nblocks", c_int),
    ("blocks", POINTER(BlockC)),
    ("test", POINTER(ProblemC)),
    ("fingerprint", c_char * FINGERPRINT_LEN),
    ("fingerprint_state", c_int),
    ("prov", ProvenanceC),
    ("shard_first", c_int),
    ("shard_count", c_int),
]


class ResultBlockC(Structure):
    _fields_ = [
        ("name", c_char * NAMELEN),
        ("rows", c_int), ("cols", c_int),
        ("penalty_spec", c_char * SPECLEN),
        ("B", POINTER(c_double)),
        ("layout", c_int),
        ("k", c_int),
        ("d", POINTER(c_double)),
        ("s1", POINTER(c_double)),
        ("sigma", POINTER(c_double)),
        ("s2", POINTER(c_double)),
        ("U", POINTER(c_double)),
        ("V", POINTER(c_double)),
    ]


class InfoC(Structure):
    _fields_ = [
        ("status", c_int), ("method", c_char * METHOD_NAMELEN),
        ("linsys", c_char * METHOD_NAMELEN),
        ("objective", c_double),
        ("iterations", c_int),
        ("primal_residual", c_double), ("dual_residual", c_double),
        ("constraint_residual", c_double), ("stationarity", c_double),
        ("ls_residual", c_double), ("loss_value", c_double), ("penalty_value", c_double),
        ("pg_residual", c_double), ("duality_gap", c_double),
        ("operator_passes", c_int), ("inner_iterations", c_int), ("fallback_steps", c_int),
        ("method_note", c_char * 256),
        ("solve_seconds", c_double), ("setup_seconds", c_double),
        ("projection_seconds", c_double), ("prox_seconds", c_double),
        ("other_seconds", c_double),
    ]


class ResultC(Structure):
    _fields_ = [
        ("structure", c_int),
        ("nblocks", c_int),
        ("blocks", POINTER(ResultBlockC)),
        ("info", InfoC),
        ("problem_fingerprint", c_char * FINGERPRINT_LEN),
        ("loss", c_char * 64),
        ("penalty_override", c_char * SPECLEN),
        ("tol", c_double), ("eps_abs", c_double), ("rho", c_double), ("alpha", c_double),
        ("max_iter", c_int), ("reduce", c_int), ("adaptive_rho", c_int),
        ("atf_version", c_char * 32),
        ("command", c_char * COMMANDLEN),
    ]


class LossC(Structure):
    _fields_ = [("kind", c_int), ("lambda_", c_double)]


class SettingsC(Structure):
    _fields_ = [
        ("method", c_int),
        ("loss", LossC),
        ("structure", c_int),
        ("max_iter", c_int),
        ("eps_abs", c_double), ("eps_rel", c_double),
        ("alpha", c_double), ("rho", c_double),
        ("adaptive_rho", c_int), ("reduce", c_int), ("verbose", c_int), ("log_every", c_int),
        ("baseline", c_int),
        ("newton_rank", c_int),
        ("continuation", c_double),
        ("linsys", c_int), ("precond", c_int),
        ("memory_fraction", c_double), ("gram_max_rows", c_int),
    ]


class MethodInfoC(Structure):  # a row of the solver's method table (atf_method_info)
    _fields_ = [("method", c_int), ("name", c_char_p), ("summary", c_char_p),
                ("interpolation", c_int), ("penalized", c_int), ("baseline", c_int),
                ("resumable", c_int), ("matrix_free", c_int), ("linsys", c_int),
                ("warm", c_int), ("processes", c_int)]


# void (*atf_log_fn)(void *ctx, const char *text)
LOG_FN = ctypes.CFUNCTYPE(None, c_void_p, c_char_p)


CHECKPOINT_KEYLEN = 1024  # ATF_CHECKPOINT_KEYLEN


class CheckpointC(Structure):
    _fields_ = [("key", c_char * CHECKPOINT_KEYLEN), ("len", c_int64),
                ("data", POINTER(c_double))]


class CheckpointFileC(Structure):  # the context of atf_checkpoint_to_file
    _fields_ = [("path", c_char_p), ("err", c_char * ERRLEN)]


# int (*checkpoint)(void *ctx, const atf_checkpoint *state)
CHECKPOINT_FN = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(CheckpointC))


class ProgressC(Structure):  # atf_solve_progress
    _fields_ = [
        ("method", c_char_p), ("iteration", c_int), ("max_iterations", c_int),
        ("measure", c_double), ("tolerance", c_double), ("passes", ctypes.c_long),
        ("seconds", c_double),
    ]


PROGRESS_FN = ctypes.CFUNCTYPE(None, c_void_p, POINTER(ProgressC))


class HooksC(Structure):
    _fields_ = [
        ("log", LOG_FN),
        ("log_ctx", c_void_p),
        ("warm", POINTER(ResultC)),
        ("interrupt", POINTER(c_int)),  # volatile sig_atomic_t * (int on Linux)
        ("processes", c_void_p),  # const atf_processes * (always NULL from Python)
        ("checkpoint", CHECKPOINT_FN),
        ("checkpoint_ctx", c_void_p),
        ("checkpoint_seconds", c_double),
        ("resume", POINTER(CheckpointC)),
        ("precond_file", c_char_p),
        ("progress", PROGRESS_FN),
        ("progress_ctx", c_void_p),
    ]


class JacBlockC(Structure):
    _fields_ = [
        ("name", c_char * NAMELEN),
        ("layer", c_int),
        ("rows", c_int), ("cols", c_int),
        ("H", POINTER(c_double)),
        ("D", POINTER(c_double)),
    ]


class JacobianC(Structure):
    _fields_ = [
        ("N", c_int), ("C", c_int), ("M", c_int), ("nblocks", c_int),
        ("f", POINTER(c_double)),
        ("blocks", POINTER(JacBlockC)),
    ]


def _proto(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


P_PEN = POINTER(PenaltyC)
P_D = POINTER(c_double)
P_PROB = POINTER(ProblemC)
P_RES = POINTER(ResultC)
_proto("atf_version", c_char_p)
_proto("atf_error_name", c_char_p, c_int)
_proto("atf_status_name", c_char_p, c_int)
_proto("atf_method_name", c_char_p, c_int)
_proto("atf_method_parse", c_int, c_char_p, POINTER(c_int))
_proto("atf_method_count", c_int)
_proto("atf_linsys_kind_parse", c_int, c_char_p, POINTER(c_int))
_proto("atf_precond_parse", c_int, c_char_p, POINTER(c_int))
_proto("atf_method_info_of", POINTER(MethodInfoC), c_int)
_proto("atf_structure_name", c_char_p, c_int)
_proto("atf_structure_parse", c_int, c_char_p, POINTER(c_int))
_proto("atf_penalty_parse", c_int, c_char_p, P_PEN, c_char_p)
_proto("atf_penalty_format", c_int, P_PEN, c_char_p, c_size_t)
_proto("atf_penalty_value", c_double, P_PEN, c_double, P_D)
_proto("atf_penalty_deriv", c_double, P_PEN, c_double)
_proto("atf_penalty_prox", c_double, P_PEN, c_double, c_double, P_D)
_proto("atf_penalty_factors", None, P_PEN, c_double, P_D, P_D, P_D)
_proto("atf_problem_read", c_int, c_char_p, POINTER(P_PROB), c_char_p)
_proto("atf_problem_write", c_int, c_char_p, P_PROB, c_char_p)
_proto("atf_problem_free", None, P_PROB)
_proto("atf_problem_fingerprint", c_int, P_PROB, c_char_p)
_proto("atf_problem_new", P_PROB, c_int, c_int, c_int)
_proto("atf_problem_validate", c_int, P_PROB, c_char_p, c_char_p)
_proto("atf_problem_set_penalty", c_int, P_PROB, c_char_p, c_char_p)
_proto("atf_result_free", None, P_RES)
_proto("atf_result_read", c_int, c_char_p, POINTER(P_RES), c_char_p)
_proto("atf_checkpoint_read", c_int, c_char_p, POINTER(CheckpointC), c_char_p)
_proto("atf_checkpoint_free", None, POINTER(CheckpointC))
_proto("atf_checkpoint_to_file", c_int, c_void_p, POINTER(CheckpointC))
_proto("atf_checkpoint_explain", None, POINTER(CheckpointFileC), c_int, c_int, c_char_p)
_proto("atf_result_write", c_int, c_char_p, P_RES, c_char_p)
_proto("atf_result_check", c_int, P_RES, P_PROB, c_char_p, c_char_p, c_char_p)
_proto("atf_result_record_run", None, P_RES, POINTER(SettingsC), c_char_p, c_char_p)
_proto("atf_settings_default", SettingsC)
_proto("atf_loss_check", c_int, POINTER(LossC), P_PROB, c_char_p, c_char_p)
_proto("atf_loss_parse", c_int, c_char_p, POINTER(LossC), c_char_p)
_proto("atf_solver_init", c_int, P_PROB, POINTER(SettingsC), POINTER(HooksC), POINTER(c_void_p),
       c_char_p)
_proto("atf_solver_solve", c_int, c_void_p, POINTER(P_RES), c_char_p)
_proto("atf_solver_free", None, c_void_p)
_proto("atf_result_factors", c_int, P_RES, P_PROB, c_char_p)
# networks (problems/tangent/atf_mlp.h, atf_features.h, atf_kernel.h); atf_mlp is opaque here
_proto("atf_mlp_new", c_int, c_int, POINTER(c_int), POINTER(c_int), POINTER(c_char_p), c_char_p,
       POINTER(c_void_p), c_char_p)
_proto("atf_mlp_layers", c_int, c_void_p)
_proto("atf_mlp_param_name", ctypes.c_char_p, c_void_p)
_proto("atf_mlp_width", c_int, c_void_p, c_int)
_proto("atf_mlp_weight", c_void_p, c_void_p, c_int)
_proto("atf_mlp_bias", c_void_p, c_void_p, c_int)
_proto("atf_mlp_activation_spec", c_int, c_void_p, c_int, c_char_p, c_size_t)
_proto("atf_mlp_read", c_int, c_char_p, POINTER(c_void_p), c_char_p)
_proto("atf_mlp_write", c_int, c_char_p, c_void_p, c_char_p)
_proto("atf_mlp_free", None, c_void_p)
_proto("atf_mlp_fingerprint", c_int, c_void_p, c_char_p)
_proto("atf_mlp_forward", c_int, c_void_p, c_int, P_D, P_D, c_char_p)
_proto("atf_mlp_jacobian", c_int, c_void_p, c_int, P_D, POINTER(JacobianC), c_char_p)
_proto("atf_jacobian_free", None, POINTER(JacobianC))
_proto("atf_kernel_mlp", c_int, c_void_p, c_int, P_D, P_D, P_D, c_char_p)
_proto("atf_path_method_parse", c_int, c_char_p, POINTER(c_int), c_char_p)
_proto("atf_kernel_path_average", c_int, c_void_p, c_void_p, c_int, P_D, c_int, c_int, P_D, P_D,
       c_char_p)


def text(b):
    """A C char array or char * as str."""
    return b.decode("utf-8", "replace") if b is not None else ""


def errbuf():
    return ctypes.create_string_buffer(ERRLEN)


# ---- predictions and their metrics (problems/tangent/atf_features.h, atf_mlp.h, atf_loss.h):
# atf.score uses the functions `atf predict` uses, so that its numbers are the command's ----

class SplitEvalC(Structure):  # atf_split_eval
    _fields_ = [
        ("N", c_int), ("C", c_int),
        ("f", POINTER(c_double)), ("y", POINTER(c_double)), ("labels", POINTER(c_int)),
        ("mse", c_double), ("rel_mse", c_double), ("error", c_double),
        ("class_error", c_double),
    ]


class PredictionsC(Structure):  # atf_predictions
    _fields_ = [("train", SplitEvalC), ("test", SplitEvalC)]


_proto("atf_predict_result", c_int, P_PROB, c_char_p, P_RES, c_char_p, POINTER(PredictionsC),
       c_char_p)
_proto("atf_predictions_free", None, POINTER(PredictionsC))
_proto("atf_prediction_error", c_double, c_int, c_int, P_D, P_D)
_proto("atf_prediction_class_error", c_double, c_int, c_int, P_D, POINTER(c_int))
_proto("atf_loss_mean_xent", c_double, c_int, c_int, P_D, POINTER(c_int))
