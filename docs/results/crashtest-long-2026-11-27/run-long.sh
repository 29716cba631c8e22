#!/bin/sh
# Long mode of the explorer, the crashtest_long_* commands, one after another.
cd "${1:-.}"   # the repository, built in build/
for w in sps bank list abort mt big handoff grow switch; do
  ntx=24; [ "$w" = switch ] && ntx=60
  t0=$(date +%s.%N)
  build/tools/pmtx crashtest --workload $w --domain pdom1 --ntx $ntx --images 20000 --depth2 4 --d2images 256 --min-images 1000000 --no-progress
  rc=$?
  t1=$(date +%s.%N)
  echo "$w wall $(echo "$t1 - $t0" | bc) s"
  echo "$w rc=$rc"
done
