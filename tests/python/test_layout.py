"""The ctypes mirror of atf's public structs (drivers/python/atf/_lib.py, _data_lib.py,
_kernel_lib.py) against the C compiler's own sizes and offsets, printed by layout_probe (argv[1])."""
import ctypes
import subprocess
import sys

from atf import _data_lib, _kernel_lib, _lib

import atf_env

MIRROR = {"atf_omega": _lib.Omega, "atf_penalty": _lib.PenaltyC, "atf_block": _lib.BlockC,
          "atf_provenance": _lib.ProvenanceC, "atf_problem": _lib.ProblemC,
          "atf_result_block": _lib.ResultBlockC, "atf_info": _lib.InfoC,
          "atf_result": _lib.ResultC, "atf_hooks": _lib.HooksC,
          "atf_solve_progress": _lib.ProgressC,
          "atf_checkpoint": _lib.CheckpointC, "atf_checkpoint_file": _lib.CheckpointFileC,
          "atf_loss": _lib.LossC, "atf_settings": _lib.SettingsC,
          "atf_method_info": _lib.MethodInfoC,
          "atf_jac_block": _lib.JacBlockC, "atf_jacobian": _lib.JacobianC,
          "atf_split_eval": _lib.SplitEvalC, "atf_predictions": _lib.PredictionsC,
          "atf_data_options": _data_lib.DataOptionsC, "atf_dataset": _data_lib.DatasetC,
          "atf_task": _data_lib.TaskC, "atf_activation": _data_lib.ActivationC,
          "atf_arch": _data_lib.ArchC, "atf_net_options": _data_lib.NetOptionsC,
          "atf_kernel_inputs": _kernel_lib.KernelInputsC,
          "atf_kernel_report": _kernel_lib.KernelReportC}
RENAMED = {"lambda": "lambda_"}  # a Python keyword

lines = subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True).stdout.split()
pairs = list(zip(lines[0::2], lines[1::2]))
count = 0
seen = set()
for name, value in pairs:
    value = int(value)
    count += 1
    if name == "sig_atomic_t":
        atf_env.check(value == ctypes.sizeof(ctypes.c_int), "sig_atomic_t is an int")
    elif "." in name:
        struct, field = name.split(".")
        cls = MIRROR[struct]
        field = RENAMED.get(field, field)
        seen.add((struct, field))
        got = getattr(cls, field).offset if hasattr(cls, field) else None
        atf_env.check(got == value, f"{name}: C offset {value}, ctypes {got}")
    else:
        got = ctypes.sizeof(MIRROR[name])
        atf_env.check(got == value, f"sizeof({name}): C {value}, ctypes {got}")
for struct, cls in MIRROR.items():  # every ctypes field is one the probe knows
    for f in cls._fields_:
        count += 1
        atf_env.check((struct, f[0]) in seen, f"{struct}.{f[0]} not checked by the probe")
atf_env.finish("test_layout", count)
