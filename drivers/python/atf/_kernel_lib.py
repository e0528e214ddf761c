"""The ctypes mirror of problems/tangent/atf_kernel.h's report structs and the kernel functions
atf.alignment and atf.kernel_report call: the alignments (atf_kernel_cosine, atf_kernel_cka),
the label kernel (atf_kernel_outer) and the report of `atf kernel` (atf_kernel_report_compute,
atf_kernel_report_free).

The structs are mirrored field by field (enums are C ints); tests/python/test_layout.py compares
every size and offset with tests/python/layout_probe.c, compiled against the header, so a field
added in C without its mirror here fails that test. Kept apart from _lib.py, which mirrors the
solver's structs."""
from ctypes import POINTER, Structure, c_char, c_char_p, c_double, c_int, c_void_p

from ._lib import NAMELEN, P_D, P_PROB, P_RES, _proto

MAX_KERNELS = 8   # ATF_MAX_KERNELS
KERNEL_NAMELEN = 16  # atf_kernel_report.names[j]


class KernelInputsC(Structure):  # atf_kernel_inputs
    _fields_ = [
        ("problem", P_PROB),
        ("result", P_RES),
        ("mlp0", c_void_p),  # const atf_mlp * (opaque in Python)
        ("mlp", c_void_p),
        ("path_points", c_int),
        ("path_method", c_int),  # atf_path_method
        ("problem_name", c_char_p), ("result_name", c_char_p),
        ("mlp0_name", c_char_p), ("mlp_name", c_char_p),
    ]


class KernelReportC(Structure):  # atf_kernel_report
    _fields_ = [
        ("M", c_int), ("nkernels", c_int), ("nblocks", c_int),
        ("names", (c_char * KERNEL_NAMELEN) * MAX_KERNELS),
        ("K", P_D * MAX_KERNELS),
        ("blocks", POINTER(c_char * NAMELEN)),  # char (*)[ATF_NAMELEN]
        ("cosine", P_D), ("cka", P_D),
        ("layer_cosine", P_D), ("layer_cka", P_D),
        ("theorem1_s", c_double),
        ("f0_check", c_double),
    ]


cosine = _proto("atf_kernel_cosine", c_double, c_int, P_D, P_D)
cka = _proto("atf_kernel_cka", c_double, c_int, P_D, P_D)
outer = _proto("atf_kernel_outer", None, c_int, P_D, P_D)
report_compute = _proto("atf_kernel_report_compute", c_int, POINTER(KernelInputsC),
                        POINTER(KernelReportC), c_char_p)
report_free = _proto("atf_kernel_report_free", None, POINTER(KernelReportC))
