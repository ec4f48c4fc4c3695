#!/bin/bash
# Two suites at once, N pairs, on one commit; each clone's node_modules is /work/main's.
PAIRS=${1:-5}
COMMIT=$(git -C /work/main rev-parse HEAD)
echo "commit $COMMIT"
for s in s1 s2; do
  rm -rf /tmp/$s && git clone -q /work/main /tmp/$s && git -C /tmp/$s checkout -q $COMMIT && ln -s /work/main/node_modules /tmp/$s/node_modules
done
for i in $(seq 1 $PAIRS); do
  echo "== pair $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  for s in s1 s2; do
    (cd /tmp/$s && start=$(date +%s) && npm test > /tmp/load-$s-$i.log 2>&1; rc=$?; echo "$s run $i rc=$rc $(( $(date +%s) - start ))s $(grep -E 'Test Files|Tests ' /tmp/load-$s-$i.log | sed 's/\x1b\[[0-9;]*m//g' | tr -s ' ' | tr '\n' ' ')") &
  done
  wait
done
echo ALLDONE $(date +%T)
