#!/bin/sh
# make_golden.sh PMCACHED OUTDIR FORMAT - write pmcached-FORMAT.region, a
# golden region of pmcached's format FORMAT (1.0 or 2.0), with PMCACHED, a
# pmcached of that format: the keys of README.md stored over the text and
# meta protocols, then a clean stop (SIGTERM).
#   sh make_golden.sh build-old/apps/pmcached/pmcached /tmp/golden 1.0
#   (cd /tmp/golden && tar -cJSf regions-1.0.tar.xz pmcached-1.0.region)
set -e
bin=$1 out=$2 fmt=$3
mkdir -p "$out"
region=$out/pmcached-$fmt.region
rm -f "$region"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" -u root -p "$port" -U 0 -m 8 -e "$region" --runtime redo &
pid=$!
send() { # the requests in $1 (Python bytes syntax); prints the replies
	python3 - "$port" "$1" <<'PY'
import ast, socket, sys, time
port, data = int(sys.argv[1]), ast.literal_eval(sys.argv[2])
for _ in range(100):
    try:
        s = socket.create_connection(("127.0.0.1", port))
        break
    except OSError:
        time.sleep(0.1)
s.sendall(data + b"mn\r\n")
got = b""
while not got.endswith(b"MN\r\n"):
    got += s.recv(65536)
sys.stdout.write(got.decode("latin1"))
PY
}
send 'b"set greeting 0 0 5\r\nhello\r\nset counter 7 0 2\r\n41\r\nincr counter 1\r\nset later 0 4102444800 1\r\nv\r\nset a 0 0 1\r\n1\r\nset b 0 0 1\r\n2\r\nset c 0 0 1\r\n3\r\ndelete c\r\n"'
if [ "$fmt" != 1.0 ]; then
	# the per-item state of format 2.0: a base64 key, an item fetched,
	# a stale item whose token went out, a vivified one won
	send 'b"ms Ymlu 3 b\r\nbin\r\nmg greeting v\r\nset old 0 0 3\r\nold\r\nmd old I\r\nmg old v\r\nmg viv N0 s\r\n"'
fi
kill -TERM $pid
wait $pid
