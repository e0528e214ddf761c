#!/usr/bin/env bash
# Continuation against the straight warm start, in one run: problem (16) with the cross-entropy
# loss and the nonconvex `balanced+balanced` penalty on the network of docs/record/results.md §7
# (Fashion-MNIST, official split, 784-128-128-128-128-10 with biases, LeCun normal, x/255), the
# first N training images (default 7 200: the fitted rows of n = 8 000), solved at λ = 2.16 (per
# fitted example 3e-4) from the answer at 7.2 (1e-3) — one step of the study's λ path — with
# `--continuation R` for each R given (0: straight there) and `--newton-rank K` for each K given
# (auto: the default), the runs interleaved. STEPS, per fitted example, the warm starts' λ and
# then the λ solved (default "3e-3 1e-3 3e-4": 7.2 → 2.16 at N = 7 200).
#
#   bash benchmarks/continuation.sh [ATF] [DIR] [N] [RATIOS] [REPEATS] [RANKS] [STEPS]
#   bash benchmarks/continuation.sh build/drivers/atf /tmp/cont 7200 "0 2 1.5" 1
#   bash benchmarks/continuation.sh build/drivers/atf /tmp/cont 7200 2 1 "100 400" "3e-3 1e-3 3e-4 1e-4"
#
# Per run: Newton steps, CG steps, passes over the data, fallbacks, objective, pg residual, CPU
# and wall seconds of the process (/usr/bin/time), as a Markdown table on stdout. One thread per
# process (OPENBLAS_NUM_THREADS=1). It reports; nothing here asserts a time. About 15 CPU
# minutes per run at N = 7 200.
set -euo pipefail
atf=${1:-build/drivers/atf}
dir=${2:-/tmp/atf-continuation}
n=${3:-7200}
ratios=${4:-0 2 1.5}
repeats=${5:-1}
ranks=${6:-auto}
read -r -a steps <<< "${7:-3e-3 1e-3 3e-4}"
export OPENBLAS_NUM_THREADS=1
mkdir -p "$dir"
lam() { /usr/bin/python3 -c "print('%.6g' % ($1 * $n))"; }
prob=$dir/p$n.h5
[[ -f $prob ]] || "$atf" features --data fashion-mnist --split official --n-train "$n" \
    --n-test 1000 --widths 784,128,128,128,128,10 --bias --init lecun --no-standardize \
    --seed 1 --penalty balanced+balanced -o "$prob" >/dev/null
solve() { "$atf" solve "$prob" --penalty balanced+balanced --tol 1e-6 --quiet --json "$@"; }
# the warm starts, each from the last (the first from zero), solved straight with the default
# rank; then the last λ from the last of them
warm=()
last=$(lam "${steps[-1]}")
for ((j = 0; j + 1 < ${#steps[@]}; j++)); do
    l=$(lam "${steps[j]}")
    [[ -f $dir/w$l.h5 ]] || solve -o "$dir/w$l.h5" --loss "xent:lambda=$l" "${warm[@]}" \
        --continuation 0 >/dev/null
    warm=(--warm "$dir/w$l.h5")
    from=$l
done
echo "N = $n: lambda $from -> $last, balanced+balanced, xent"
echo
echo "| continuation | rank | Newton steps | CG steps | passes | fallbacks | objective | pg residual | CPU s | wall s |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for ((i = 0; i < repeats; i++)); do
    for r in $ratios; do
        for k in $ranks; do
            out=$dir/r$r-k$k.h5
            rank=()
            [[ $k == auto ]] || rank=(--newton-rank "$k")
            js=$(/usr/bin/time -f "%U %e" -o "$dir/time" "$atf" solve "$prob" \
                --penalty balanced+balanced --tol 1e-6 --quiet --json -o "$out" \
                --loss "xent:lambda=$last" "${warm[@]}" --continuation "$r" "${rank[@]}")
            read -r cpu wall < "$dir/time"
            /usr/bin/python3 - "$r" "$k" "$cpu" "$wall" "$js" <<'PY'
import json, sys
r, k, cpu, wall = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
js = json.loads(sys.argv[5])
print(f"| {r} | {k} | {js['iterations']} | {js['inner_iterations']} | {js['operator_passes']} | "
      f"{js['fallback_steps']} | {js['objective']:.10g} | {js['pg_residual']:.2e} | "
      f"{cpu:.0f} | {wall:.0f} |")
PY
        done
    done
done
