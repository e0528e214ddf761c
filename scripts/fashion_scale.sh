#!/usr/bin/env bash
# The full-scale Fashion-MNIST study of docs/results.md §7: fixed against adaptive tangent
# features against the network, on the official split with all 10 000 test images.
#
#   bash scripts/fashion_scale.sh STEP      (STEP: one of the steps below, or `list`)
#
# Every step is one `atf experiment samples` command into results/fashion-scale/ (resumable:
# run it again after an interruption and it completes its table, bit for bit, apart from the wall
# times); `report` rebuilds the summaries and figures from every row recorded (after `merge`
# has brought in the rows of fair-large, fair-60000 and fair-2000-p16, which run beside the others in
# directories of their own). Runs with OPENBLAS_NUM_THREADS=1 (ATF_STUDY_THREADS=T sets T; the
# problem (16) interpolants at n = 8 000 ran with 2, alone on the machine) from build-results/ (a
# release build made here when missing). Steps that share a table may run at the same time only if they write different directories. Do not
# edit this file while a step runs: bash reads it as it goes, and the running step reads the
# edited text when its command ends (seen: a syntax error after fair-2000-p16 had finished).
set -euo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_NUM_THREADS=${ATF_STUDY_THREADS:-1}
# The study's problems were built, and its checkpoints kept, under OpenBLAS's SkylakeX kernels.
# Other kernels round the GEMMs differently in the last bits: the problems' fingerprints change
# and a solve's checkpoint is refused as being for other numbers. Seen on an AMD EPYC whose
# environment set OPENBLAS_CORETYPE=Haswell (OpenBLAS 0.3.21 itself would choose Cooperlake
# there). So the study pins SkylakeX, over any inherited value; it needs AVX-512. Without it,
# delete the .partial.h5 the message names to start that solve afresh.
if grep -qw avx512f /proc/cpuinfo; then
    [[ ${OPENBLAS_CORETYPE:-SkylakeX} == SkylakeX ]] ||
        echo "fashion_scale: OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE replaced by SkylakeX, the study's kernel" >&2
    export OPENBLAS_CORETYPE=SkylakeX
fi
[[ -x build-results/drivers/atf ]] || bash scripts/build.sh build-results --buildtype=release
atf=build-results/drivers/atf
out=results/fashion-scale

# The authors' network and optimiser (784-128-128-128-128-10, biases, LeCun-normal, x/255; SGD
# lr 0.01, momentum 0.9, cross-entropy); up to 1000 epochs with patience 20.
data=(--data fashion-mnist --split official --n-test 10000)
net=(--hidden 128,128,128,128 --bias --init lecun --no-standardize)
sgd=(--sgd-loss xent --optimizer sgd --lr 0.01 --lr-schedule constant --momentum 0.9
     --epochs 1000 --patience 20)
# Problem (16): the lambda path of every cross-entropy model (per fitted example, largest
# first, stopped at the first lambda that does worse on the validation rows), certified solves.
# From n = 8 000 on the grid goes two values further down: ntk-xent chose its smallest value
# in several runs at n <= 2 000 and at n = 30 000 (docs/results.md §7).
lambdas=0.1,0.03,0.01,0.003,0.001,0.0003,0.0001
[[ "${1-}" == fair-8000* || "${1-}" == fair-large || "${1-}" == fair-60000 ]] && lambdas=$lambdas,0.00003,0.00001
exact=(--penalty balanced+balanced --tol 1e-6 --interpolate-max-n auto
       --xent-lambdas $lambdas --xent-lambdas-per-example --xent-path-patience 1)
report=(--align-examples 200 --error-thresholds 0.25,0.18,0.14)
# fair-large and fair-60000 (solves of hours) append each exact solve's iteration table to
# solver.log in their directory (from 2026-11-29 13:50 UTC; the steps before were not logged)
fair=(--sampling fixed --stop best-val)
authors=(--resample-each-epoch --pool all --stop test-selected)
models="ntk,ntk-xent,p16,p16-xent,ntk-sgd,factorized-sgd,network"
# p16-xent's second family, chosen on the validation rows of the pilot step (docs/results.md §7)
second="${ATF_SECOND_FAMILY-sq}"
xent_pens="balanced+balanced${second:+;$second}"

step=${1:-list}
case "$step" in
  pilot)  # families of p16-xent beside ntk-xent at n = 500, seeds 1-3: validation scores only
          # (logsq was dropped after its solves took 5 and more than 11 minutes here)
    $atf experiment samples "${data[@]}" "${net[@]}" "${exact[@]}" --ns 500 --seeds 3 \
      --models ntk-xent,p16-xent --xent-penalties "balanced+balanced;sq;zsq:scale=0.01;pow:p=1.5" \
      --out $out/pilot ;;
  fair-125)
    $atf experiment samples "${data[@]}" "${net[@]}" "${sgd[@]}" "${exact[@]}" "${report[@]}" \
      "${fair[@]}" --ns 125 --seeds 5 --batch 25 --models $models \
      --xent-penalties "$xent_pens" --out $out/fair ;;
  fair-small)
    $atf experiment samples "${data[@]}" "${net[@]}" "${sgd[@]}" "${exact[@]}" "${report[@]}" \
      "${fair[@]}" --ns 500,2000 --seeds 5 --batch 50 --models $models \
      --xent-penalties "$xent_pens" --out $out/fair ;;
  fair-8000)  # every model but the two interpolants (their own step: fair-8000-interp)
    $atf experiment samples "${data[@]}" "${net[@]}" "${sgd[@]}" "${exact[@]}" "${report[@]}" \
      "${fair[@]}" --ns 8000 --seeds 5 --batch 50 --models ntk-xent,p16-xent,ntk-sgd,factorized-sgd,network \
      --xent-penalties "$xent_pens" --out $out/fair ;;
  fair-8000-interp)  # M = 80 000: the NTK interpolant by CG and problem (16) interpolation
    $atf experiment samples "${data[@]}" "${net[@]}" "${sgd[@]}" "${exact[@]}" "${report[@]}" \
      "${fair[@]}" --ns 8000 --seeds 5 --batch 50 --models ntk,p16 \
      --xent-penalties "$xent_pens" --out $out/fair --solver-log $out/fair/solver-8000-interp.log ;;
  fair-2000-p16)  # problem (16) interpolation at n = 2 000 solved again after ADMM's `solved` came
                  # to require a certificate <= --tol (docs/solver.md §6): the first run stopped at
                  # 1.02-1.03e-6; `merge` puts these rows in place of the first ones
    $atf experiment samples "${data[@]}" "${net[@]}" "${sgd[@]}" "${exact[@]}" "${report[@]}" \
      "${fair[@]}" --ns 2000 --seeds 5 --batch 50 --models p16 \
      --xent-penalties "$xent_pens" --out $out/fair-2000-p16 ;;
  fair-8000-ntk)  # fair-8000-interp's NTK interpolants alone (problem (16) interpolation, the
                  # augmented Lagrangian, is far slower: docs/results.md §7f)
    $atf experiment samples "${data[@]}" "${net[@]}" "${sgd[@]}" "${exact[@]}" "${report[@]}" \
      "${fair[@]}" --ns 8000 --seeds 5 --batch 50 --models ntk \
      --xent-penalties "$xent_pens" --out $out/fair ;;
  fair-large)  # n = 30 000 (the interpolants are `skipped` there: M > the parameter count)
    $atf experiment samples "${data[@]}" "${net[@]}" "${sgd[@]}" "${exact[@]}" "${report[@]}" \
      "${fair[@]}" --ns 30000 --seeds 3 --batch 50 --models $models \
      --xent-penalties "$xent_pens" --out $out/fair-large --solver-log $out/fair-large/solver.log ;;
  fair-60000)  # n = 60 000 in a table of its own, so that it runs beside fair-large
    $atf experiment samples "${data[@]}" "${net[@]}" "${sgd[@]}" "${exact[@]}" "${report[@]}" \
      "${fair[@]}" --ns 60000 --seeds 3 --batch 50 --models $models \
      --xent-penalties "$xent_pens" --out $out/fair-60000 --solver-log $out/fair-60000/solver.log ;;
  merge)  # the rows of fair-large, fair-60000 and fair-2000-p16 join the fair table (a table has one writer
          # at a time, so these run beside the others in directories of their own): a key the
          # fair table has already is replaced by the source's row, a new key is appended (a
          # source still being written is skipped, saying so); then `report`
    /usr/bin/python3 - "$out/fair" "$out/fair-large" "$out/fair-60000" "$out/fair-2000-p16" <<'PY'
import csv, fcntl, os, sys
dst, srcs = sys.argv[1], [d for d in sys.argv[2:] if os.path.exists(os.path.join(d, "samples.csv"))]
def free(d):  # no run is writing the table (its lock is then held until this ends)
    fd = os.open(os.path.join(d, "samples.csv.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
if not free(dst):
    sys.exit(f"merge: {dst}/samples.csv is being written by a run; try again when it ends")
busy = [d for d in srcs if not free(d)]
for d in busy:  # what it merged before stays; the rest waits for the next merge
    print(f"merge: {d}: skipped, a run is writing it; merge again when it ends")
srcs = [d for d in srcs if d not in busy]
def rows(d):
    with open(os.path.join(d, "samples.csv"), newline="") as f:
        lines = f.read().splitlines(keepends=True)
    with open(os.path.join(d, "samples.jsonl")) as f:
        jsonl = f.read().splitlines(keepends=True)
    keys = [r["key"] for r in csv.DictReader(lines)]
    if len(keys) != len(jsonl):
        sys.exit(f"merge: {d}: {len(keys)} CSV rows but {len(jsonl)} JSON lines")
    return lines[0], lines[1:], jsonl, keys
head, dl, dj, dk = rows(dst)
where = {k: i for i, k in enumerate(dk)}
for src in srcs:
    shead, sl, sj, sk = rows(src)
    if shead != head:
        sys.exit(f"merge: {src}/samples.csv and {dst}/samples.csv have different columns")
    added = replaced = 0
    for line, js, key in zip(sl, sj, sk):
        if key not in where:
            where[key] = len(dl)
            dl.append(line), dj.append(js)
            added += 1
        elif (dl[where[key]], dj[where[key]]) != (line, js):
            dl[where[key]], dj[where[key]] = line, js
            replaced += 1
    print(f"merge: {src}: {added} rows appended to {dst}, {replaced} replaced, "
          f"{len(sk) - added - replaced} there already")
for name, lines in (("samples.csv", [head] + dl), ("samples.jsonl", dj)):
    path = os.path.join(dst, name)
    with open(path + ".tmp", "w", newline="") as f:  # whole or not at all
        f.writelines(lines)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)
PY
    ;;
  authors-125)
    $atf experiment samples "${data[@]}" "${net[@]}" "${sgd[@]}" "${report[@]}" "${authors[@]}" \
      --ns 125 --seeds 5 --batch 25 --models ntk-sgd,factorized-sgd,network --out $out/authors ;;
  authors-small)
    $atf experiment samples "${data[@]}" "${net[@]}" "${sgd[@]}" "${report[@]}" "${authors[@]}" \
      --ns 500,2000,8000 --seeds 5 --batch 50 --models ntk-sgd,factorized-sgd,network \
      --out $out/authors ;;
  report)
    $atf experiment samples "${data[@]}" "${net[@]}" "${sgd[@]}" "${exact[@]}" "${report[@]}" \
      "${fair[@]}" --ns 125 --seeds 5 --batch 50 --models $models \
      --xent-penalties "$xent_pens" --report-only --out $out/fair
    $atf experiment samples "${data[@]}" "${net[@]}" "${sgd[@]}" "${report[@]}" "${authors[@]}" \
      --ns 125 --seeds 5 --batch 50 --models ntk-sgd,factorized-sgd,network --report-only \
      --out $out/authors ;;
  stop)  # every step running: Ctrl-C (SIGINT) to its atf process, which keeps what it has
          # (rows, solved lambdas, the checkpoint of the solve under way) and exits; waits for them
    pids=$(pgrep -f -- "drivers/atf experiment samples .*--out $out/" || true)
    [[ -n $pids ]] || { echo "stop: no step is running" >&2; exit 0; }
    for p in $pids; do
      echo "stop: $(ps -o args= -p "$p" | grep -o -- "--out [^ ]*")" >&2
      kill -INT "$p" 2>/dev/null || true
    done
    while pgrep -f -- "drivers/atf experiment samples .*--out $out/" >/dev/null; do sleep 2; done
    echo "stop: stopped; commit $out (its solutions/ folders too) to go on on another machine" >&2 ;;
  list|*)
    echo "steps: pilot fair-125 fair-small fair-8000 fair-8000-interp fair-8000-ntk fair-2000-p16 fair-large fair-60000 merge authors-125 authors-small report stop" >&2
    [[ "$step" == list ]] ;;
esac
