#!/bin/bash
# Peak RSS of the interpolation (Gram) path against M = 10 n (Fashion-MNIST, 784-128-128-10).
export OPENBLAS_NUM_THREADS=1
G=/work/main/results/gram-limit
ATF=/tmp/scale/atf-new
for n in 500 1000 1500; do
  nice -n 10 $ATF features --data fashion-mnist --n-train $n --n-test 100 -o /tmp/scale/gram-$n.h5 --json > /dev/null 2>> $G/features.err
  /usr/bin/time -v -o $G/admm-$n.time nice -n 10 $ATF solve /tmp/scale/gram-$n.h5 -o /tmp/scale/gram-$n-res.h5 --max-iter 1 --json > $G/admm-$n.json 2> $G/admm-$n.err
  echo "gram $n rc $? $(date +%T)" >> $G/status
done
