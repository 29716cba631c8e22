# SPDX-License-Identifier: BSD-3-Clause
"""Raw RESP2 for the differential test (test_differential.py): requests
encoded as multibulk byte strings, replies read back as the exact bytes
the server sent (one whole RESP value each), a parser of those bytes for
the comparisons that need the values, and Debian's redis-server started
beside pmkv without persistence."""
import os
import shutil
import socket

from kvserver import Server


def encode(args):
    """A request's bytes: args (bytes each) as a multibulk, or a bytes
    object sent as it is (an inline request)."""
    if isinstance(args, bytes):
        return args
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def value_end(buf, at):
    """Where the RESP value that starts at buf[at] ends, or None while
    buf does not hold all of it."""
    nl = buf.find(b"\r\n", at)
    if nl < 0:
        return None
    kind, line, nxt = buf[at:at + 1], buf[at + 1:nl], nl + 2
    if kind in (b"+", b"-", b":"):
        return nxt
    if kind == b"$":
        n = int(line)
        if n < 0:
            return nxt
        return nxt + n + 2 if len(buf) >= nxt + n + 2 else None
    if kind == b"*":
        for _ in range(max(int(line), 0)):
            nxt = value_end(buf, nxt)
            if nxt is None:
                return None
        return nxt
    raise ValueError("not RESP: %r" % buf[at:at + 64])


def parse(reply):
    """One reply's bytes as a Python value: bytes for a simple string or
    a bulk, int, None, list, or ("err", text) for an error."""
    value, end = _parse(reply, 0)
    assert end == len(reply), reply
    return value


def _parse(buf, at):
    nl = buf.index(b"\r\n", at)
    kind, line, nxt = buf[at:at + 1], buf[at + 1:nl], nl + 2
    if kind == b"+":
        return line, nxt
    if kind == b"-":
        return ("err", line), nxt
    if kind == b":":
        return int(line), nxt
    if kind == b"$":
        n = int(line)
        return (None, nxt) if n < 0 else (buf[nxt:nxt + n], nxt + n + 2)
    n = int(line)
    if n < 0:
        return None, nxt
    items = []
    for _ in range(n):
        v, nxt = _parse(buf, nxt)
        items.append(v)
    return items, nxt


class Conn:
    """One connection; send(requests) pipelines them and returns their
    replies, each the raw bytes of one RESP value."""

    def __init__(self, port, timeout=20):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout)
        self.buf = b""

    def send(self, requests):
        self.sock.sendall(b"".join(encode(r) for r in requests))
        return [self.reply() for _ in requests]

    def reply(self):
        while True:
            end = value_end(self.buf, 0) if self.buf else None
            if end is not None:
                out, self.buf = self.buf[:end], self.buf[end:]
                return out
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed after %r" % self.buf[:200])
            self.buf += chunk

    def close(self):
        self.sock.close()


class RedisServer(Server):
    """Debian's redis-server on 127.0.0.1, a free port, workdir its own
    directory (its log there too); nothing saved (no RDB, no AOF). Started
    and killed as kvserver's Server."""

    def __init__(self, workdir):
        super().__init__(shutil.which("redis-server"), workdir)
        self.log = os.path.join(workdir, "redis.log")

    def argv(self):
        return [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", self.dir,
                "--daemonize", "no"]
