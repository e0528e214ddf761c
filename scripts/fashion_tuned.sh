#!/usr/bin/env bash
# Issue 47: the penalty's scale tuned like λ. p16-xent (problem (16), penalised cross-entropy,
# exact certified solves) with the penalty's family and scale γ chosen on validation data,
# against ntk-xent (the same fit with fixed features, the γ → ∞ end of every family of the
# paper's class), on Fashion-MNIST at n = 500, seeds 1-5 (docs/results.md §1b, record §8).
#
#   bash scripts/fashion_tuned.sh STEP      (STEP: one of the steps below, or `list`)
#
# The options are those of the fair protocol's exact models in scripts/fashion_scale.sh (same
# data, network, θ0 per seed, validation rows, λ path and tolerance), so a seed here has the
# θ0 and the images of the same seed in results/fashion-scale/fair. Every step is one resumable
# `atf experiment samples` command into results/fashion-tuned/ (run it again after an
# interruption and it completes its table); the three run steps write the same table one after
# the other (`atf experiment samples` takes at most 8 penalties per run), ntk-xent's rows come
# with the first. Runs with OPENBLAS_NUM_THREADS=1 (ATF_STUDY_THREADS=T sets T) from
# build-results/ (a release build made here when missing). Then `report`: the summary and the
# selection on validation data per n (scripts/fashion_tuned_select.py; tuned_*_nN.csv and
# tuned_report_nN.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fashion_study_env.sh  # fashion_scale.sh's threads, kernel, build, data, network, protocol
out=results/fashion-tuned
exact_options $lambdas  # the fair protocol's exact models and its λ path ($fair too)
# ATF_TUNED_N=2000: the same steps at n = 2 000, into the same table (the report covers each n)
grid=(--ns ${ATF_TUNED_N:-500} --seeds 5 --models ntk-xent,p16-xent)

# The settings (family, γ). ω̃_γ(v) = γ ψ(v/√γ) bends away from v² near v ≈ √γ; ntk-xent's
# solutions at n = 500 have singular values up to about 4.4 per layer (record §8), so:
#   sq at γ = 1 … 10^4 (knee at 1 … 100): from the study's `sq` to nearly ntk-xent;
#   zsq (spectral Huber, exactly v² up to √γ) at γ = 1 and 10: knee at 1 and 3.2, inside that
#   range (the pilot's zsq:scale=0.01, knee 0.1, was behind sq);
#   logsq (the flattest tail) at γ = 10 and 100: at γ = 1 its solves took up to 11.6 min each
#   (record §8), and the pilot dropped it there;
#   nuclear (2√γ v, outside the paper's class; γ only rescales λ) and balanced+balanced (the
#   study's first penalty), at γ = 1.
sq_axis="sq;sq:scale=10;sq:scale=100;sq:scale=1000;sq:scale=10000;nuclear;balanced+balanced"
zsq="zsq:scale=1;zsq:scale=10"
logsq="logsq:scale=10;logsq:scale=100"
run() {  # the one command, with its penalties
    $atf experiment samples "${data[@]}" "${net[@]}" "${exact[@]}" "${fair[@]}" "${grid[@]}" \
      --xent-penalties "$1" --out $out --solver-log $out/solver.log
}

step=${1:-list}
case "$step" in
  sq-axis) run "$sq_axis" ;;   # ntk-xent, sq at five scales, nuclear, balanced+balanced
  zsq)     run "$zsq" ;;
  logsq)   run "$logsq" ;;
  all)     run "$sq_axis"; run "$zsq"; run "$logsq" ;;   # a stopped step ends `all` (set -e)
  report)  # samples_summary.csv of ntk-xent and the sq-axis step's settings (a run's summary
           # has its own models only; every setting's means: the selection script's
           # tuned_settings_nN.csv); the figure of test error against n, at one n, is not kept
    $atf experiment samples "${data[@]}" "${net[@]}" "${exact[@]}" "${fair[@]}" "${grid[@]}" \
      --xent-penalties "$sq_axis" --report-only --out $out
    rm -f $out/samples.png $out/samples.svg
    for n in $(awk -F, 'NR > 1 {print $2}' $out/samples.csv | sort -nu); do
      /usr/bin/python3 scripts/fashion_tuned_select.py $out --n $n | tee $out/tuned_report_n$n.md
    done ;;
  *)  # stop: Ctrl-C (SIGINT) to the running step's atf process, which keeps what it has (rows,
      # solved λ, the checkpoint of the solve under way) and exits; waits for it
    other_step "$step" "$out " "run the step again to go on" "sq-axis zsq logsq all report stop" ;;
esac
