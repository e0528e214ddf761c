#!/bin/bash
export OPENBLAS_NUM_THREADS=2
R=/work/main/results/fashion-full
/usr/bin/time -v -o $R/before-sq-784-128-128-10.time nice -n 10 /tmp/scale/atf-orig solve /tmp/scale/fm-784-128-128-10.h5 -o /tmp/scale/before-sq.h5 --loss squared:lambda=600 --max-iter 3 --log-every 1 --json > $R/before-sq-784-128-128-10.json 2> $R/before-sq-784-128-128-10.err
