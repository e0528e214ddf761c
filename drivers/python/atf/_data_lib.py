"""The ctypes mirror of the data stage (problems/tangent/atf_data.h) and of the network options
the teacher targets need (problems/tangent/atf_mlp.h), for atf.data.

The structs mirror the C ones field by field (enums are C ints, uint64_t seeds c_uint64);
tests/python/test_layout.py compares every size and offset with tests/python/layout_probe.c,
compiled against the headers, so a field changed in C and not here fails that test. They live
apart from _lib.py (problems, results, solver) because the data stage is its own pipeline stage
with its own header."""
import ctypes
from ctypes import POINTER, Structure, c_char, c_char_p, c_double, c_int, c_ubyte, c_uint64

from ._lib import _proto

MAX_CLASSES = 64          # ATF_MAX_CLASSES
PATHLEN = 1024            # ATF_PATHLEN
MAX_DATA_DIRS = 8         # ATF_MAX_DATA_DIRS
MAX_LAYERS = 16           # ATF_MAX_LAYERS
ACTIVATION_SPECLEN = 96   # ATF_ACTIVATION_SPECLEN
SOURCE_NAMELEN = 64       # atf_task.source_name

# atf_targets, in the order of the C enum
TARGETS = ("auto", "labels", "given", "teacher", "teacher-sign")


class DataOptionsC(Structure):  # atf_data_options
    _fields_ = [
        ("source", c_char * PATHLEN),
        ("nclasses", c_int),
        ("classes", c_int * MAX_CLASSES),
        ("n_train", c_int), ("n_test", c_int),
        ("seed", c_uint64),
        ("standardize", c_int),
        ("official_split", c_int),
        ("targets", c_int),
        ("teacher_seed", c_uint64),
        ("ndata_dirs", c_int),
        ("data_dirs", (c_char * PATHLEN) * MAX_DATA_DIRS),
    ]


class DatasetC(Structure):  # atf_dataset
    _fields_ = [
        ("N", c_int), ("D", c_int), ("C", c_int),
        ("X", POINTER(c_double)),
        ("Y", POINTER(c_double)),
        ("labels", POINTER(c_int)),
    ]


class TaskC(Structure):  # atf_task
    _fields_ = [
        ("train", DatasetC), ("test", DatasetC),
        ("nclasses", c_int),
        ("classes", c_int * MAX_CLASSES),
        ("targets", c_int),
        ("teacher_accuracy", c_double),
        ("source_name", c_char * SOURCE_NAMELEN),
        ("source", c_char * PATHLEN),
        ("data_dir", c_char * PATHLEN),
        ("standardized", c_int),
    ]


class ActivationC(Structure):  # atf_activation
    _fields_ = [("kind", c_int), ("slope", c_double), ("beta", c_double),
                ("threshold", c_double)]


class ArchC(Structure):  # struct atf_arch
    _fields_ = [
        ("L", c_int),
        ("widths", c_int * (MAX_LAYERS + 1)),
        ("bias", c_ubyte * MAX_LAYERS),
        ("act", ActivationC * MAX_LAYERS),
        ("param", c_int),
        ("init", c_int),
        ("origin", c_char * PATHLEN),
    ]


class NetOptionsC(Structure):  # atf_net_options
    _fields_ = [
        ("mlp_path", c_char * PATHLEN),
        ("have_widths", c_int),
        ("arch", ArchC),
        ("bias", c_char * 64),
        ("activation", c_char * (MAX_LAYERS * ACTIVATION_SPECLEN)),
        ("seed", c_uint64),
        ("seed_given", c_int),
    ]


atf_data_options_default = _proto("atf_data_options_default", DataOptionsC)
atf_data_option = _proto("atf_data_option", c_int, POINTER(DataOptionsC), c_char_p, c_char_p,
                         c_char_p)
atf_data_add_dir = _proto("atf_data_add_dir", c_int, POINTER(DataOptionsC), c_char_p, c_char_p)
atf_task_load = _proto("atf_task_load", c_int, POINTER(DataOptionsC), POINTER(ArchC),
                       POINTER(TaskC), c_char_p)
atf_task_free = _proto("atf_task_free", None, POINTER(TaskC))
atf_targets_name = _proto("atf_targets_name", c_char_p, c_int)
atf_net_options_default = _proto("atf_net_options_default", NetOptionsC)
atf_net_option = _proto("atf_net_option", c_int, POINTER(NetOptionsC), c_char_p, c_char_p,
                        c_char_p)
atf_net_arch = _proto("atf_net_arch", c_int, POINTER(NetOptionsC), POINTER(ArchC), c_char_p)
atf_mlp_create = _proto("atf_mlp_create", c_int, POINTER(ArchC), ctypes.c_uint64,
                        POINTER(ctypes.c_void_p), c_char_p)


