#!/bin/sh
# reopen.c by runtime, exit (kill -9 or clean close) and heap (empty or
# full), in a 1 GiB region on /dev/shm, OLD build against NEW; 3 runs.
# usage: sh reopen.sh OLD_BIN NEW_BIN > reopen.jsonl
# (each BIN: cc -O2 reopen.c -I<tree>/include <build>/libpmtx.a -lpthread)
old=$1 new=$2 f=/dev/shm/sweep-reopen.region
for i in 1 2 3; do
	for rt in undo twin; do
		for e in kill clean; do
			for heap in empty full; do
				m=; [ $heap = full ] && m=full
				$old $f 1024 $rt $e $m | sed "s/^{/{\"build\":\"old\",\"heap\":\"$heap\",/"
				$new $f 1024 $rt $e $m | sed "s/^{/{\"build\":\"new\",\"heap\":\"$heap\",/"
			done
		done
	done
done
