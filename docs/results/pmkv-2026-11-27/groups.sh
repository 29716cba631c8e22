#!/bin/sh
# groups.sh DELAY (from the repository root; IOT=N for --io-threads N): pmkv journal on ext4, 20000 SETs from 4 clients, group stats
D=$1; rm -rf /var/tmp/pkg; mkdir -p /var/tmp/pkg
ARGS="--port 7799 --region /var/tmp/pkg/kv.region --runtime redo --domain pdom1 --backend journal --io-threads ${IOT:-1}"
[ "$D" != def ] && ARGS="$ARGS --commit-delay $D"
build/apps/pmkv/pmkv $ARGS >/dev/null 2>&1 &
P=$!; sleep 0.5
redis-cli -p 7799 info stats | grep group > /tmp/pk/g0
R=$(redis-benchmark -p 7799 -t set -c 4 -r 238328 -d 64 -n 20000 -q 2>/dev/null | tr '\r' '\n' | grep -o "SET: [0-9.]*" | tail -1)
redis-cli -p 7799 info stats | grep group | tr -d '\r' > /tmp/pk/g1
kill $P; wait $P 2>/dev/null
echo "delay $D $R $(cat /tmp/pk/g1 | tr '\n' ' ')"
