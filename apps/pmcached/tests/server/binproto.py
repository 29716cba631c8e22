# SPDX-License-Identifier: BSD-3-Clause
"""memcached's binary protocol for the black-box tests: requests built
byte by byte, responses read whole and split into their fields.

Only the framing lives here (it is the protocol's, not pmcached's): a
24-byte header (magic 0x80 for a request, 0x81 for a response; opcode;
key length; extras length; data type; vbucket or status; body length;
opaque; cas), then extras, key and value.
"""
import socket
import struct
import time

from mcserver import Conn

HEADER = struct.Struct(">BBHBBHIIQ")
REQ, RES = 0x80, 0x81

OP = dict(GET=0x00, SET=0x01, ADD=0x02, REPLACE=0x03, DELETE=0x04,
          INCREMENT=0x05, DECREMENT=0x06, QUIT=0x07, FLUSH=0x08, GETQ=0x09,
          NOOP=0x0a, VERSION=0x0b, GETK=0x0c, GETKQ=0x0d, APPEND=0x0e,
          PREPEND=0x0f, STAT=0x10, SETQ=0x11, ADDQ=0x12, REPLACEQ=0x13,
          DELETEQ=0x14, INCREMENTQ=0x15, DECREMENTQ=0x16, QUITQ=0x17,
          FLUSHQ=0x18, APPENDQ=0x19, PREPENDQ=0x1a, TOUCH=0x1c, GAT=0x1d,
          GATQ=0x1e, SASL_LIST_MECHS=0x20, SASL_AUTH=0x21, SASL_STEP=0x22,
          GATK=0x23, GATKQ=0x24)

SUCCESS, KEY_ENOENT, KEY_EEXISTS, E2BIG, EINVAL, NOT_STORED, \
    DELTA_BADVAL = range(7)
AUTH_ERROR, UNKNOWN_COMMAND, ENOMEM = 0x20, 0x81, 0x82
NO_CREATE = 0xffffffff   # INCREMENT's expiration: a miss, not a create


def request(op, key=b"", extras=b"", value=b"", opaque=0, cas=0,
            keylen=None, extlen=None, bodylen=None, datatype=0, vbucket=0,
            magic=REQ):
    """One request; the lengths are the true ones unless given."""
    if isinstance(op, str):
        op = OP[op]
    if isinstance(key, str):
        key = key.encode()
    kl = len(key) if keylen is None else keylen
    el = len(extras) if extlen is None else extlen
    bl = len(extras) + len(key) + len(value) if bodylen is None else bodylen
    return HEADER.pack(magic, op, kl, el, datatype, vbucket, bl, opaque,
                       cas) + extras + key + value


def store(op, key, value, flags=0, exptime=0, **kw):
    """SET ADD REPLACE and their quiet forms."""
    return request(op, key, struct.pack(">II", flags, exptime), value, **kw)


def join(op, key, value, **kw):
    """APPEND PREPEND and their quiet forms: a key and a value."""
    return request(op, key, value=value, **kw)


def arith(op, key, delta=1, initial=0, exptime=0, **kw):
    """INCREMENT DECREMENT and their quiet forms."""
    return request(op, key, struct.pack(">QQI", delta, initial, exptime),
                   **kw)


def touch(op, key, exptime, **kw):
    """TOUCH GAT GATK GATQ GATKQ."""
    return request(op, key, struct.pack(">I", exptime), **kw)


class Response:
    """A response's fields; raw is its bytes as received."""

    def __init__(self, raw):
        (self.magic, self.opcode, keylen, extlen, self.datatype,
         self.status, bodylen, self.opaque, self.cas) = HEADER.unpack(
             raw[:24])
        body = raw[24:]
        assert len(body) == bodylen, (len(body), bodylen)
        self.raw = raw
        self.extras = body[:extlen]
        self.key = body[extlen:extlen + keylen]
        self.value = body[extlen + keylen:]

    @property
    def flags(self):
        return struct.unpack(">I", self.extras)[0]

    @property
    def number(self):
        return struct.unpack(">Q", self.value)[0]

    def __repr__(self):
        return "<0x%02x status 0x%x key %r value %r cas %d>" % (
            self.opcode, self.status, self.key, self.value[:60], self.cas)


class BinConn(Conn):
    """A binary protocol connection (mcserver.Conn's reading with a
    deadline, in responses)."""

    @classmethod
    def connect(cls, port, timeout=5.0):
        s = socket.create_connection(("127.0.0.1", port), timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(s, timeout)

    def _need(self, n, deadline):
        while len(self.buf) < n:
            try:
                if self.eof or not self._fill(deadline):
                    return False
            except ConnectionResetError:
                self.eof = True
                return False
        return True

    def read(self, timeout=None):
        """The next response, or None at EOF."""
        deadline = time.monotonic() + (timeout or self.timeout)
        if not self._need(24, deadline):
            return None
        bodylen = HEADER.unpack(self.buf[:24])[6]
        if not self._need(24 + bodylen, deadline):
            return None
        raw, self.buf = self.buf[:24 + bodylen], self.buf[24 + bodylen:]
        return Response(raw)

    def ask(self, data, timeout=None):
        self.send(data)
        return self.read(timeout)

    def until_noop(self, opaque, timeout=None):
        """Responses up to the NOOP answer of that opaque (excluded), and
        whether the connection ended first."""
        out = []
        while True:
            r = self.read(timeout)
            if r is None:
                return out, True
            if r.opcode == OP["NOOP"] and r.opaque == opaque:
                return out, False
            out.append(r)

    def stat_list(self, group=b"", opaque=0):
        """A STAT list as [(name, value)]; its end (no key) is checked."""
        self.send(request("STAT", group, opaque=opaque))
        out = []
        while True:
            r = self.read()
            assert r is not None and r.opcode == OP["STAT"], r
            assert r.status == SUCCESS and r.opaque == opaque, r
            if not r.key:
                assert r.value == b"", r
                return out
            out.append((r.key.decode(), r.value.decode()))
