"""The OpenBLAS kernel the `atf` command picks for itself (drivers/cli/cli_blas.c, and
scripts/blas_env.sh for the shell scripts): SkylakeX with AVX-512, Haswell with AVX2 and FMA,
else OpenBLAS's own choice (None). A value the user set (OPENBLAS_CORETYPE) is kept. The
benchmarks give atf's and the peer's processes the same kernel; forcing SkylakeX on a CPU
without AVX-512 would stop them with SIGILL."""
import os


def coretype():
    if os.environ.get("OPENBLAS_CORETYPE"):
        return os.environ["OPENBLAS_CORETYPE"]
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return None
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= set(flags):
        return "SkylakeX"
    if {"avx2", "fma"} <= set(flags):
        return "Haswell"
    return None
