#!/usr/bin/env bash
# Issue 47: the decisive multi-index study (docs/results.md §1c, record §9). On the built-in
# multi-index task f*(x) = g(Ux) + noise (x ∈ R^d, U of rank r = 2, label noise 0.5: the targets'
# variance is 1.25, so a relative test MSE of 0.2 is the floor no predictor beats), with a
# d-256-256-1 network (He initialisation), n = 250 … 8 000 and seeds 1-5: the NTK and problem (16)
# both as interpolants and penalized (squared loss, λ chosen on validation rows, one per-example
# grid for both), the network and the authors' factorised SGD model; then the n each model needs
# to reach levels of relative test MSE, and the ratios fixed / adaptive.
#
#   bash scripts/multi_index.sh STEP      (STEP: one of the steps below, or `list`)
#
# Every step is one resumable `atf experiment samples` command into results/multi-index-d$D/
# (D: ATF_MI_D, default 32): run it again after an interruption and it completes its table; the
# run steps write the same table one after the other (a table takes the λ path's columns when
# the penalized step first writes to it). One core (OPENBLAS_NUM_THREADS=1; ATF_STUDY_THREADS=T
# sets T), the release build in build-results/ (made when missing; ATF_STUDY_BUILD=DIR names
# another). The network's trainer (SGD, lr 0.01, momentum 0.9, cosine, 100 epochs, batch 32, the
# epoch of the lowest validation MSE on n/10 rows carved from the n) was picked at n = 2 000 on
# seed 101, which is no seed of the study; the factorised model and the linearised network
# (ntk-sgd, its fixed-feature counterpart) diverge at lr 0.01 and train at lr 0.001 (record §9).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fashion_study_env.sh  # the threads, the release build and other_step (stop)
d=${ATF_MI_D:-32}
out=results/multi-index-d$d
data=(--data synthetic:d=$d,r=2,noise=0.5 --n-test 2000)
net=(--hidden 256,256 --init he)
train=(--optimizer sgd --momentum 0.9 --lr-schedule cosine --epochs 100 --batch 32 --stop best-val)
net_lr=(--lr 0.01)
# the factorised model and ntk-sgd: lr 0.001, and they stop 20 epochs after their best (at
# n = 2 000 on seed 101 the best was epoch 29 of 100 for both)
fact_lr=(--lr 0.001 --patience 20)
grid=(--ns 250,500,1000,2000,4000,8000 --seeds 5)
# The penalized models' λ path, per fitted example (λ = value · (n − v), so the loss (1/2λ)‖·‖²
# is the mean squared error over 2·value at every n), from the largest down, warm-started, until
# two λ in a row did worse on validation than the best (the small λ are the costly solves).
ridge=(--ridge-lambdas 1,0.3,0.1,0.03,0.01,3e-3,1e-3,3e-4,1e-4,3e-5,1e-5 --ridge-lambdas-per-example
       --ridge-path-patience 2)
interp_models=ntk,p16,network
fact_models=factorized-sgd,ntk-sgd
ridge_models=ntk-ridge,p16-ridge
# Levels of relative test MSE for the sample complexity (the floor is 0.2).
levels=(--error-thresholds 0.9,0.8,0.7,0.6,0.5,0.4)
run() {  # the one command, with its models (and options)
    mkdir -p $out
    $atf experiment samples "${data[@]}" "${net[@]}" "${train[@]}" "${grid[@]}" \
      --penalty sq:scale=auto --models "$@" --out $out --solver-log $out/solver.log
}

step=${1:-list}
case "$step" in
  interp)     run $interp_models "${net_lr[@]}" ;;          # the interpolants and the network
  penalized)  run $ridge_models "${ridge[@]}" ;;   # ntk-ridge and p16-ridge, λ on validation rows
  factorized) run $fact_models "${fact_lr[@]}" ;;  # the authors' factorised model, ntk-sgd
  all)  # a stopped step ends `all` (set -e)
    run $interp_models "${net_lr[@]}"; run $ridge_models "${ridge[@]}"
    run $fact_models "${fact_lr[@]}" ;;
  report)    # every model's summary, the sample complexity and the ratios, the figures
    $atf experiment samples "${data[@]}" "${net[@]}" "${train[@]}" "${net_lr[@]}" "${grid[@]}" \
      --penalty sq:scale=auto "${ridge[@]}" --models $interp_models,$ridge_models,$fact_models \
      "${levels[@]}" --report-only --out $out ;;
  *)  # stop: Ctrl-C (SIGINT) to the running step's atf process, which keeps what it has (rows,
      # solved λ, the checkpoint of the solve under way) and exits; waits for it
    other_step "$step" "$out " "run the step again to go on" \
      "interp penalized factorized all report stop" ;;
esac
