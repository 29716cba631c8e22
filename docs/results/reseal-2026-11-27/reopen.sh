#!/bin/sh
# reopen.c for each region size, crash moment and heap (empty or full),
# old build against new, and new with PMTX_CREATE_TWIN_FAST_RESTART;
# 3 runs each. usage: sh reopen.sh OLD_BIN NEW_BIN > reopen.jsonl
old=$1 new=$2 f=/dev/shm/reopen.region
for i in 1 2 3; do
	for s in 64 1024; do
		for w in rest mid; do
			for heap in empty full; do
				m=; [ $heap = full ] && m=full
				$old $f $s $w $m | sed "s/^{/{\"build\":\"old\",\"heap\":\"$heap\",/"
				$new $f $s $w $m | sed "s/^{/{\"build\":\"new\",\"heap\":\"$heap\",/"
				$new $f $s $w ${m}fast | sed "s/^{/{\"build\":\"new\",\"heap\":\"$heap\",/"
			done
		done
	done
done
