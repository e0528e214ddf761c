#!/usr/bin/env bash
# Install what is needed, build, and run every test: once in an optimised build and once under
# AddressSanitizer + UndefinedBehaviorSanitizer. Ends with the line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
if [[ -f scripts/fetch_mnist.sh ]]; then bash scripts/fetch_mnist.sh || exit 1; fi

export OPENBLAS_NUM_THREADS=1
source scripts/blas_env.sh
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0

status=0
bash scripts/build.sh build --buildtype=debugoptimized || exit 1
meson test -C build --print-errorlogs --num-processes 2 || status=1
bash scripts/build.sh build-asan --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false || exit 1
meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 4 || status=1
# The optional MPI build (-Dmpi=enabled): its own tests (suite mpi, mpirun -np 2 and 3); the
# other builds skip them, saying so.
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
  bash scripts/build.sh build-mpi --buildtype=debugoptimized -Dmpi=enabled || exit 1
  meson test -C build-mpi --print-errorlogs --suite mpi || status=1
else
  echo "test: no mpicc/mpirun: the MPI build is not tested" >&2
fi

/usr/bin/python3 - <<'PY'
import json
passed = failed = skipped = 0
import os
for d in ("build", "build-asan") + (("build-mpi",) if os.path.isdir("build-mpi") else ()):
    try:
        lines = open(f"{d}/meson-logs/testlog.json").read().splitlines()
    except OSError:
        failed += 1
        continue
    for line in lines:
        r = json.loads(line)["result"]
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
