#!/bin/bash
export OPENBLAS_NUM_THREADS=2
ATF=/work/main/build-scale/drivers/atf
R=/work/main/results/fashion-full
for net in 784,128,128,10 784,128,128,128,128,10; do
  tag=$(echo $net | tr , -)
  /usr/bin/time -v -o $R/features-$tag.time nice -n 10 $ATF features --data fashion-mnist --n-train 60000 --n-test 10000 --widths $net --json -o /tmp/scale/fm-$tag.h5 > $R/features-$tag.json 2> $R/features-$tag.err
  echo "$tag rc $?" >> $R/features.status
done
