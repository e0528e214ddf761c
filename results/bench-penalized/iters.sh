#!/bin/bash
# Iterations to tolerance 1e-2 against N (small N only: the largest are too long here).
export OPENBLAS_NUM_THREADS=1
R=/work/main/results/bench-penalized
B=/tmp/scale/bench_penalized-new
nice -n 10 $B --n 1000,2000,4000 --loss xent --max-iter 1000 --tol 1e-2 > $R/iters-xent-1e-2.txt 2> $R/iters-xent.err
echo "iters xent rc $? $(date +%T)" >> $R/status
nice -n 10 $B --n 1000 --loss squared --max-iter 2000 --tol 1e-2 > $R/iters-squared-1e-2.txt 2> $R/iters-squared.err
echo "iters squared rc $? $(date +%T)" >> $R/status
