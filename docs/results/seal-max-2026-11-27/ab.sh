#!/bin/sh
# usage: ab.sh OUT ROUNDS BENCH...  (alternating processes per build)
out=$1; rounds=$2; shift 2
mkdir -p "$out"
for r in $(seq 1 $rounds); do
  i=0
  for b in "$@"; do
    i=$((i+1))
    $b sps --system pmtx-twin,pmdk --domain pdom1 --backend hardware --p n=100000 --p k=16,32,64,128,256 --seconds 0.5 --rounds 1 >> "$out/sps-$i.jsonl" 2>/dev/null
    $b hashmap --system pmtx-twin,pmdk --domain pdom1 --backend hardware --p entry=1024,2048,4096,8192 --seconds 0.5 --rounds 1 >> "$out/hashmap-$i.jsonl" 2>/dev/null
  done
done
