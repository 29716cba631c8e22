# SPDX-License-Identifier: BSD-3-Clause
"""Differential test of pmcached's protocol parser against memcached 1.6.18.

Every case of CORPUS is sent, on its own connection and after a flush_all,
to a real memcached (started here on 127.0.0.1, UDP off, -I 1m) and fed to
mc_proto_echo, which prints what the parser says the server must reply on
an empty cache. The two replies must be equal byte for byte. A few cases
are also fed in every split, which must not change the parser's answer.
"""
import os
import shutil
import socket
import subprocess
import time

import pytest

ECHO = os.environ.get("MC_PROTO_ECHO", "")
MEMCACHED = shutil.which("memcached") or "/usr/bin/memcached"
ITEM_MAX = 1024 * 1024
LONG = b"k" * 250
TOO_LONG = b"k" * 251
# Largest value memcached 1.6.18 accepts for a 1-byte key and flags 0
# with -I 1m: header 48 + cas 8 + key 1 + NUL + data + "\r\n".
FIT = ITEM_MAX - 48 - 8 - 2 - 2

CORPUS = [
    # storage commands
    b"set a 0 0 1\r\nx\r\n",
    b"set a 5 100 3 noreply\r\nabc\r\nmn\r\n",
    b"add b 0 0 1\r\nx\r\n",
    b"replace c 0 0 1\r\nx\r\n",
    b"append c 0 0 1\r\nx\r\n",
    b"prepend c 0 0 1\r\nx\r\n",
    b"cas c 0 0 1 99\r\nx\r\n",
    b"cas c 0 0 1 99 noreply\r\nx\r\nmn\r\n",
    b"set a 0 0 0\r\n\r\n",
    b"set a 0 0 1\nx\r\n",
    b"set  a  0  0  1 \r\nx\r\n",
    b"set " + LONG + b" 0 0 1\r\nx\r\n",
    b"set " + TOO_LONG + b" 0 0 1\r\nx\r\n",
    b"set a 0 0 -1\r\nab\r\n",
    b"set a 0 0 abc\r\nab\r\n",
    b"set a x 0 1\r\nx\r\n",
    b"set a -1 0 1\r\nx\r\n",
    b"set a -0 +5 1\r\nx\r\n",
    b"set a 4294967296 0 1\r\nx\r\n",
    b"set a 0 99999999999999999999 1\r\nx\r\n",
    b"set a 0 0 2147483646\r\n",
    b"set a 0 0 2147483647\r\nx\r\n",
    b"set a 0 0\r\nx\r\n",
    b"set a 0 0 1 noreply extra\r\nx\r\n",
    b"set a 0 0 1\r\nabc\r\n",
    b"set a 0 0 1 noreply\r\nabc\r\nmn\r\n",
    b"set a 0 0 3\r\nabcde\r\n",
    b"cas a 0 0 1 x\r\nx\r\n",
    b"cas a 0 0 1 -1\r\nx\r\n",
    b"cas a 0 0 1\r\nx\r\n",
    b"set a 0 0 %d\r\n" % FIT + b"v" * FIT + b"\r\nmn\r\n",
    b"set a 0 0 %d\r\n" % (FIT + 1) + b"v" * (FIT + 1) + b"\r\nmn\r\n",
    b"set a 1 0 %d\r\n" % (FIT - 4) + b"v" * (FIT - 4) + b"\r\nmn\r\n",
    b"set a 1 0 %d\r\n" % (FIT - 3) + b"v" * (FIT - 3) + b"\r\nmn\r\n",
    b"set a 0 0 %d noreply\r\n" % (FIT + 1) + b"v" * (FIT + 1) + b"\r\nmn\r\n",
    # retrieval
    b"get a\r\n",
    b"get a b c d e f g h i j k l m n o p q r s t u v w x y z 1 2 3\r\n",
    b"gets a b\r\n",
    b"get\r\n",
    b"get " + LONG + b"\r\n",
    b"get " + TOO_LONG + b"\r\n",
    b"get a " + TOO_LONG + b"\r\n",
    b"get a\x01b\r\n",
    b"gat 10 a b\r\n",
    b"gats 10 a\r\n",
    b"gat 10\r\n",
    b"gat x a\r\n",
    b"gat\r\n",
    b"mget a\r\n",
    # delete, arithmetic, touch
    b"delete a\r\n",
    b"delete a 0\r\n",
    b"delete a noreply\r\nmn\r\n",
    b"delete a 0 noreply\r\nmn\r\n",
    b"delete a 1\r\n",
    b"delete a 1 noreply\r\nmn\r\n",
    b"delete a 0 0\r\n",
    b"delete\r\n",
    b"delete a b c d\r\n",
    b"delete " + TOO_LONG + b"\r\n",
    b"incr a 1\r\n",
    b"decr a 18446744073709551615\r\n",
    b"incr a 18446744073709551616\r\n",
    b"incr a -1\r\n",
    b"incr a x\r\n",
    b"incr a x noreply\r\nmn\r\n",
    b"incr a\r\n",
    b"incr " + TOO_LONG + b" 1\r\n",
    b"touch a 10\r\n",
    b"touch a x\r\n",
    b"touch a\r\n",
    # misc
    b"flush_all\r\n",
    b"flush_all 10\r\n",
    b"flush_all noreply\r\nmn\r\n",
    b"flush_all 0 noreply\r\nmn\r\n",
    b"flush_all x\r\n",
    b"flush_all 1 2\r\n",
    b"flush_all 1 2 3\r\n",
    b"version\r\n",
    b"version extra\r\n",
    b"verbosity 1\r\n",
    b"verbosity\r\n",
    b"verbosity x\r\n",
    b"verbosity 1 noreply\r\nmn\r\n",
    b"verbosity noreply\r\nmn\r\n",
    b"verbosity 1 2\r\n",
    b"touch a 1 2\r\n",
    b"touch a 1 noreply\r\nmn\r\n",
    b"flush_all -1\r\n",
    b"set a 0 -1 1\r\nx\r\n",
    b"set a 0 0 1 " + b"x " * 30 + b"\r\nx\r\n",
    b"gat 1 " + b"k " * 40 + b"\r\n",
    b"shutdown\r\n",
    b"shutdown graceful\r\n",
    b"shutdown x\r\n",
    b"stats nosuch\r\n",
    b"bogus\r\n",
    b"\r\n",
    b"\n",
    b"x\r\n",
    b"GET a\r\n",
    b"get a\x00junk\r\n",
    b"get a\r\nget b\r\nversion\r\n",
    b"quit\r\n",
    b"get a\r\nquit\r\nget b\r\n",
    b"x" * 3000,
    b"get " + b"a " * 1500,
    # meta commands
    b"mn\r\n",
    b"mn extra\r\n",
    b"mg a\r\n",
    b"mg a v\r\n",
    b"mg a k Oabc v\r\n",
    b"mg a q\r\nmn\r\n",
    b"mg a q k O1\r\nmn\r\n",
    b"mg a zz\r\n",
    b"mg a v v\r\n",
    b"mg a Nx\r\n",
    b"mg a T10 R5 s t f c l h u\r\n",
    b"mg a Nx\r\n",
    b"mg a Tx\r\n",
    b"mg a Ex\r\n",
    b"mg a MS\r\n",
    b"mg a Mset\r\n",
    b"mg YWJj b k\r\n",
    b"mg YWJj= b\r\n",
    b"mg a b\r\n",
    b"mg\r\n",
    b"mg " + TOO_LONG + b"\r\n",
    b"mg a " + b" ".join(b"O%d" % i for i in range(25)) + b"\r\n",
    b"mg a k v s f t c O1 O2\r\n",
    b"mg a " + b" ".join(b"O%d" % i for i in range(17)) + b"\r\n",
    b"mg a " + b" ".join(b"O%d" % i for i in range(18)) + b"\r\n",
    b"ms a 1 " + b" ".join(b"O%d" % i for i in range(17)) + b"\r\nx\r\n",
    b"ms a 1 " + b" ".join(b"O%d" % i for i in range(16)) + b"\r\nx\r\n",
    b"get a\r\n\x00",
    b"set a 0 0 1\r\nx",
    b"set a 0 0 1\r\nx\r",
    b"\x00\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"get a HTTP/1.0\r\n",
    b"gett a HTTP/1.0\r\n",
    b"bogus HTTP/1.0 x\r\n",
    b"bogus x HTTP/1.0\r\nversion\r\n",
    b"set a\x01\x7fb 0 0 1\r\nx\r\n",
    b"get a\tb\r\n",
    b"get a\r\r\n",
    b"set a\r 0 0 1\r\nx\r\n",
    b"\r\n\r\n",
    b"  get  a  \r\n",
    b"incr a 1 noreply\r\nmn\r\n",
    b"ms a 2\r\nab\r\n",
    b"ms a 2 k Oxy\r\nab\r\n",
    b"ms a 2 q\r\nab\r\nmn\r\n",
    b"ms a 2 MZ\r\nab\r\nmn\r\n",
    b"ms a 2 ME\r\nab\r\n",
    b"ms a 2 MA\r\nab\r\n",
    b"ms a 2 MR\r\nab\r\n",
    b"ms a 2 Mset\r\nab\r\nmn\r\n",
    b"ms a 2 T1 T2\r\nab\r\nmn\r\n",
    b"ms a 2 S5\r\nab\r\nmn\r\n",
    b"ms a 2 Cx\r\nab\r\nmn\r\n",
    b"ms a 2 C5\r\nab\r\n",
    b"ms a 2 Fx\r\nab\r\nmn\r\n",
    b"ms a 2 F5 T0 I\r\nab\r\n",
    b"ms a x\r\nab\r\nmn\r\n",
    b"ms a -1\r\nab\r\nmn\r\n",
    b"ms a\r\n",
    b"ms\r\n",
    b"ms a 2\r\nabc\r\nmn\r\n",
    b"ms a 2 q\r\nabc\r\nmn\r\n",
    b"ms YWJj 2 b k\r\nab\r\n",
    b"ms a %d\r\n" % (FIT + 1) + b"v" * (FIT + 1) + b"\r\nmn\r\n",
    b"ms " + TOO_LONG + b" 2\r\nab\r\nmn\r\n",
    b"ms " + LONG + b" 2\r\nab\r\nmn\r\n",
    b"md " + TOO_LONG + b"\r\n",
    b"ma " + TOO_LONG + b"\r\n",
    b"me " + TOO_LONG + b"\r\n",
    b"mg " + b"YWJj" * 63 + b" b\r\n",
    b"mg " + b"YWJj" * 84 + b" b\r\n",
    b"mg " + b"YWJj" * 83 + b"YQ== b k\r\n",
    b"mg YQ== b k\r\n",
    b"mg YQ=a b\r\n",
    b"mg Y=== b\r\n",
    b"mg YWJ b\r\n",
    b"mg Y.W.J.j b k\r\n",
    b"mg YQ==YWJj b k\r\n",
    b"md a\r\n",
    b"md a q\r\nmn\r\n",
    b"md a k Oxy\r\n",
    b"md a zz\r\n",
    b"md a q q\r\n",
    b"md\r\n",
    b"ma a\r\n",
    b"ma a D5\r\n",
    b"ma a Dx\r\n",
    b"ma a Jx\r\n",
    b"ma a N\r\n",
    b"ma a MZ\r\n",
    b"ma a MI k O1\r\n",
    b"ma a q\r\nmn\r\n",
    b"me a\r\n",
    b"me\r\n",
    # the O token's length (32 bytes with its O), and the flags memcached
    # 1.6.18 lacks
    b"mg a O" + b"x" * 31 + b"\r\n",
    b"mg a O" + b"x" * 32 + b" k\r\n",
    b"md a k O" + b"x" * 32 + b"\r\n",
    b"ma a O" + b"x" * 32 + b"\r\n",
    b"ms a 1 O" + b"x" * 32 + b"\r\nx\r\nmn\r\n",
    b"ms a 1 MZ O" + b"x" * 32 + b"\r\nx\r\nmn\r\n",
    b"mg a x\r\n", b"md a x\r\n", b"ma a x\r\n", b"mg a E5\r\n",
    b"ms a 1 x\r\nx\r\nmn\r\n",
    # ms with C in each mode
    b"ms a 1 ME C5 k\r\nx\r\n", b"ms a 1 MA C5 c\r\nx\r\n",
    b"ms a 1 MR C5 c\r\nx\r\n", b"ms a 1 MS C5 c k\r\nx\r\n",
    b"me a b\r\n",
    b"mg YWJj b O1\r\n",
    b"md YWJj b k\r\n",
    b"ma YWJj b k\r\n",
    b"flush_all x noreply\r\nmn\r\n",
    b"mz a\r\n",
]

SPLIT_CASES = [
    b"set a 0 0 3\r\nabc\r\nget b c\r\nmg b k v\r\n",
    b"ms a 2 T1 T2\r\nab\r\nmn\r\ndelete a 0\r\n",
    b"set a 0 0 1\r\nabc\r\nincr a x\n",
    b"set " + TOO_LONG + b" 0 0 1\r\nx\r\nmn\r\n",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    if not os.path.exists(MEMCACHED):
        pytest.fail("memcached is not installed (scripts/setup.sh)")
    port = free_port()
    cmd = [MEMCACHED, "-l", "127.0.0.1", "-p", str(port), "-U", "0",
           "-I", "1m", "-m", "64"]
    if os.geteuid() == 0:
        cmd += ["-u", "root"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        s.sendall(b"version\r\n")
        version = s.recv(100)
    # The expected replies are those of this exact version.
    assert version == b"VERSION 1.6.18\r\n", version
    yield port
    proc.terminate()
    proc.wait(10)


def exchange(port, data):
    """memcached's whole reply to data, the connection closed after it."""
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        s.sendall(b"flush_all\r\n")
        assert s.recv(4) == b"OK\r\n"
        out = b""
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        for _ in range(10000):
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
        return out


def echo(data, *args):
    assert ECHO, "MC_PROTO_ECHO must name the mc_proto_echo program"
    return subprocess.run([ECHO, *args, str(ITEM_MAX)], input=data,
                          capture_output=True, check=True, timeout=60).stdout


def closes(port, data):
    """Whether memcached closes the connection without waiting for EOF."""
    with socket.create_connection(("127.0.0.1", port), 2) as s:
        s.sendall(data)
        try:
            while s.recv(65536):
                pass
        except socket.timeout:
            return False
        except ConnectionResetError:
            pass
        return True


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: repr(c[:40]))
def test_parser_reply_matches_memcached(server, case):
    expected = exchange(server, case)
    got = echo(case)
    closed = got.endswith(b"<CLOSED>")
    assert got.replace(b"<CLOSED>", b"") == expected
    if closed:
        assert closes(server, case)


@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: repr(c[:30]))
def test_every_split_gives_the_same_parse(case):
    whole = echo(case, "--dump")
    for n in range(1, len(case)):
        assert echo(case, "--dump", "--split", str(n)) == whole


@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: repr(c[:30]))
def test_split_input_replies_match_memcached(server, case):
    assert echo(case, "--split", "1") == exchange(server, case)
