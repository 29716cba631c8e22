#!/bin/sh
# make_golden.sh PMKV OUTDIR - write the golden regions of pmkv's format
# 1.1 with PMKV, a pmkv of that format (built at c9d0f4d, the last one):
# the same keys in a region of each version, then a clean SHUTDOWN.
#   sh make_golden.sh build-old/apps/pmkv/pmkv /tmp/golden
#   (cd /tmp/golden && tar -cJf regions-1.1.tar.xz pmkv-1.1-opt.region \
#                                 pmkv-1.1-wrapped.region)
set -e
bin=$1 out=$2
mkdir -p "$out"
for v in opt wrapped; do
	sock=$out/golden.sock
	"$bin" --port 0 --unixsocket "$sock" --region "$out/pmkv-1.1-$v.region" \
		--"$v" --runtime redo &
	pid=$!
	while [ ! -S "$sock" ]; do sleep 0.1; done
	cli="redis-cli -s $sock"
	$cli SET greeting hello
	$cli SET counter 41
	$cli INCR counter
	$cli SET later v EXAT 4102444800
	$cli MSET a 1 b 2 c 3
	$cli SHUTDOWN || true
	wait $pid
done
