#!/bin/sh
# fsyncs.sh: fdatasync calls of Redis (appendfsync always) and of pmkv
# (journal backend, --io-threads 1), both on ext4 (/var/tmp), for 20,000
# SETs from redis-benchmark's 4 clients; counted by perf's syscall
# tracepoints. Run from the repository root, as root.
count() { # count PID OUT
	timeout 100 perf stat -e syscalls:sys_enter_fdatasync -p "$1" -o "$2" &
	sleep 1
	redis-benchmark -p "$3" -t set -c 4 -r 238328 -d 64 -n 20000 -q 2>/dev/null |
		tr '\r' '\n' | grep -o "SET: [0-9.]*" | tail -1
	pkill -INT -f "perf stat -e syscalls:sys_enter_fdatasync"
	sleep 0.5
	grep sys_enter "$2"
}
rm -rf /var/tmp/fs-r /var/tmp/fs-p && mkdir -p /var/tmp/fs-r /var/tmp/fs-p
redis-server --port 7798 --bind 127.0.0.1 --dir /var/tmp/fs-r --save "" \
	--appendonly yes --appendfsync always >/dev/null 2>&1 &
R=$!; sleep 0.7
echo "redis, appendfsync always:"; count $R /tmp/fs-redis.perf 7798
kill $R; wait $R 2>/dev/null
build/apps/pmkv/pmkv --port 7799 --region /var/tmp/fs-p/kv.region \
	--runtime redo --domain pdom1 --backend journal --io-threads 1 \
	>/dev/null 2>&1 &
P=$!; sleep 0.7
echo "pmkv, journal:"; count $P /tmp/fs-pmkv.perf 7799
kill $P; wait $P 2>/dev/null
rm -rf /var/tmp/fs-r /var/tmp/fs-p
