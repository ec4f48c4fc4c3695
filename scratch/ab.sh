#!/bin/bash
# A/B bench pairs: before tree /tmp/before, after tree /work/main
cd /work/main
for i in 1 2 3; do
  for side in before after; do
    dir=/work/main; [ $side = before ] && dir=/tmp/before
    echo "== pair $i $side $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    (cd $dir && timeout 600 npx tsx bench/run.ts --sections burn-down,worker --out /tmp/ab-$side-$i.json --markdown /tmp/ab-$side-$i.md > /tmp/ab-$side-$i.log 2>&1) || echo "FAILED $side $i"
  done
done
echo ALLDONE
