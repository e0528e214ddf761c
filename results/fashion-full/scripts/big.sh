#!/bin/bash
# Full Fashion-MNIST (N = 60000, M = 600000) penalized solves, one after another.
export OPENBLAS_NUM_THREADS=2
ATF=/tmp/scale/atf-new
R=/work/main/results/fashion-full
run() { # tag problem loss maxiter
  local tag=$1 prob=$2 loss=$3 it=$4
  /usr/bin/time -v -o $R/$tag.time timeout -s INT 1140 nice -n 10 $ATF solve $prob -o /tmp/scale/$tag.h5 --loss $loss --max-iter $it --log-every 5 --json > $R/$tag.json 2> $R/$tag.err
  echo "$tag rc $? $(date +%T)" >> $R/big.status
  nice -n 10 $ATF predict $prob /tmp/scale/$tag.h5 --json > $R/$tag.predict.json 2> $R/$tag.predict.err
}
echo "start $(date +%T)" >> $R/big.status
run xent-784-128-128-10 /tmp/scale/fm-784-128-128-10.h5 xent:lambda=600 110
run squared-784-128-128-10 /tmp/scale/fm-784-128-128-10.h5 squared:lambda=600 110
run xent-784-128x4-10 /tmp/scale/fm-784-128-128-128-128-10.h5 xent:lambda=600 80
run squared-784-128x4-10 /tmp/scale/fm-784-128-128-128-128-10.h5 squared:lambda=600 80
