#!/bin/sh
# The long-mode table's log: run-long.sh's runs, in the order of the
# crashtest_long_* tests, taking mt and switch from their second runs
# (their first met a locked image file, src/explore/check.c K5).
# usage: sh merge.sh > long.log
set -eu
d=$(dirname "$0")
pick() { # workload, file: that workload's lines, up to its rc line
	awk -v w="$1" '$1 == w || /^total/ { buf = buf $0 "\n" }
		$1 == w && $2 == "wall" { print buf; buf = "" }
		$1 == w && $2 ~ /^rc=/ { print; buf = "" }
		$1 != w && !/^total/ { buf = "" }' "$2"
}
for w in sps bank list abort; do pick $w "$d/run-a.log"; done
pick mt "$d/mt-again.log"
pick big "$d/run-a.log"
pick handoff "$d/run-b.log"
pick grow "$d/run-b.log"
pick switch "$d/switch-again.log"
