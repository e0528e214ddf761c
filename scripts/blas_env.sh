# Sourced by the scripts: give every process of a run the BLAS kernel the `atf` command picks
# for itself (drivers/cli/cli_blas.c). Debian 12's OpenBLAS 0.3.21 does not know recent Intel
# CPUs and falls back to generic kernels ~3× slower; the command then re-executes itself with
# OPENBLAS_CORETYPE set, but a Python process that loads libatf cannot. Results that must agree
# bit for bit between the command and Python (the tests) need the same kernel in both.
# A value the user set is kept.
if [[ -z "${OPENBLAS_CORETYPE:-}" && -r /proc/cpuinfo ]]; then
  _atf_flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  _atf_has() { [[ "$_atf_flags" == *" $1 "* ]]; }
  if _atf_has avx512f && _atf_has avx512bw && _atf_has avx512dq && _atf_has avx512vl; then
    export OPENBLAS_CORETYPE=SkylakeX
  elif _atf_has avx2 && _atf_has fma; then
    export OPENBLAS_CORETYPE=Haswell
  fi
  unset -f _atf_has
  unset _atf_flags
fi
