#!/bin/sh
# storebench.sh BEFORE AFTER ROUNDS > storebench.jsonl
# pmkv-storebench of two builds, alternating (the order reversed every
# round), on /dev/shm, redo, PDOM-1 hardware, 1 thread, 238,328 keys of
# 64 bytes after 1,000,000 random SETs: the opt version at 0, 50 and 100 %
# reads one operation a transaction, and in groups of 16 with hints (as
# the server's group commit), 300-byte values (which format 1.1 did not
# write in place either) at 0 %, and the wrapped version at 0 and 100 %.
# Each JSON line gets "build": before or after.
set -e
before=$1 after=$2 rounds=$3
region=/dev/shm/pmkv-storebench-$$.region
run() { # NAME BINARY ARGS...
	name=$1 bin=$2
	shift 2
	rm -f "$region"
	"$bin" --region "$region" --runtime redo --domain pdom1 --threads 1 \
		--seconds 2 --populate 1000000 "$@" |
		sed "s/^{/{\"build\": \"$name\", /"
	rm -f "$region"
}
point() { # ARGS... : one round's point for both builds, in turn
	if [ $((r % 2)) = 0 ]; then
		run before "$before" "$@"; run after "$after" "$@"
	else
		run after "$after" "$@"; run before "$before" "$@"
	fi
}
r=0
while [ $r -lt "$rounds" ]; do
	point --version opt --read-pct 0,50,100
	point --version opt --read-pct 0,100 --group 16 --hint 1
	point --version opt --read-pct 0 --value-size 300
	point --version wrapped --read-pct 0,100
	r=$((r + 1))
done
