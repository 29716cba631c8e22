#!/bin/sh
# run.sh BUILD OUTDIR [NAME [redis-benchmark options]]: pmkv on ext4
# (/var/tmp), journal backend, one event loop, under sysclock.so;
# redis-benchmark -t set -c 4 -n 40000 (and the options) against it; the
# loop's calls of one stretch in OUTDIR/NAME.txt (default sysclock), its
# summary line in OUTDIR/NAME-redis-benchmark.txt.
set -e
B=$(realpath "$1"); O=$(realpath "$2"); H=$(dirname "$(realpath "$0")")
N=${3:-sysclock}; shift 2; [ $# -gt 0 ] && shift
D=$(mktemp -d /var/tmp/pmkv-cycle.XXXXXX)
cc -O2 -shared -fPIC "$H/sysclock.c" -o "$D/sysclock.so" -ldl
P=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SYSCLOCK_OUT="$O/$N.txt" LD_PRELOAD="$D/sysclock.so" \
	"$B/apps/pmkv/pmkv" --port "$P" --region "$D/kv.region" \
	--runtime redo --domain pdom1 --backend journal --maxmemory 2gb \
	--io-threads 1 > "$D/pmkv.log" 2>&1 &
for i in $(seq 50); do redis-cli -p "$P" ping >/dev/null 2>&1 && break; sleep 0.2; done
redis-benchmark -p "$P" -t set -c 4 -r 238328 -d 64 -n 40000 -q "$@" | tr '\r' '\n' | grep -a "per second" | tee "$O/$N-redis-benchmark.txt"
redis-cli -p "$P" shutdown nosave >/dev/null 2>&1 || true
wait
rm -rf "$D"
