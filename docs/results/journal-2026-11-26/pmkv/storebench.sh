#!/bin/sh
# pmkv-storebench: one thread of SETs, G per group, on ext4 (/var/tmp),
# the file backend against the journal backend (default journal size,
# 64 MiB), every (G, backend) in turn, 2 rounds. Run from the top of the
# tree: sh docs/results/journal-2026-11-26/pmkv/storebench.sh OUT.jsonl
out=$1
for round in 1 2; do
  for g in 1 4 16; do
    for b in file journal; do
      d=$(mktemp -d /var/tmp/sb-XXXXXX)
      build/apps/pmkv/pmkv-storebench --region $d/kv.region --runtime redo \
        --threads 1 --read-pct 0 --seconds 2 --populate 100000 \
        --backend $b --group $g >> "$out"
      rm -rf "$d"
    done
  done
done
