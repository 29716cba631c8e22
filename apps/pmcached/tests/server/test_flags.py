# SPDX-License-Identifier: BSD-3-Clause
"""memcached's command-line flags, each on a server of its own, with the
meaning memcached gives them (checked against memcached 1.6.18), plus
pmcached's own options (-e, --runtime, --domain, --backend).

Where memcached's real behaviour is looser than "same meaning" (the -c
count, the -m minimum), the assertion is one both servers must meet; an
assertion only pmcached must meet is marked pmcached_only.
"""
import os
import re
import socket
import stat
import struct
import subprocess
import time

import pytest

from mcserver import HOST, free_port, free_tcp_udp_port, listening_addresses

STORED = b"STORED\r\n"
TOO_LARGE = b"SERVER_ERROR object too large for cache\r\n"
OOM = b"SERVER_ERROR out of memory storing object\r\n"
TOO_MANY = b"ERROR Too many open connections\r\n"


def fit(key, item_max):
    return item_max - 48 - 8 - len(key) - 1 - 2


def run_binary(target, *args, timeout=10):
    """Run the server binary to completion (-h, -V, bad options)."""
    argv = [target.binary] + (["-u", "root"] if os.geteuid() == 0 else [])
    return subprocess.run(argv + list(args), capture_output=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def fill(c, size, limit_bytes):
    """set distinct keys of `size` bytes, pipelined, until a reply is not
    STORED or limit_bytes have been sent. Returns (stored keys, the
    first other reply or None)."""
    value = b"v" * size
    stored, i, batch = [], 0, 50
    while i * size < limit_bytes:
        keys = [b"fill%d" % n for n in range(i, i + batch)]
        c.send(b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k, size, value)
                        for k in keys))
        for k in keys:
            line = c.readline()
            if line != STORED:
                c.read_available(quiet=0.2)
                return stored, line
            stored.append(k)
        i += batch
    return stored, None


# ------------------------------------------------------------- -I -m -M

def test_I_sets_the_item_size_limit(make_server):
    # memcached 1.6.18 refuses -I below 512k unless slab_chunk_max is
    # lowered too ("slab_chunk_max ... cannot be larger than -I").
    limit = 512 * 1024
    c = make_server("-I", "512k").connect()
    n = fit(b"a", limit)
    c.call(b"set a 0 0 %d\r\n" % n + b"v" * n + b"\r\n", STORED)
    c.call(b"set b 0 0 %d\r\n" % (n + 1) + b"v" * (n + 1) + b"\r\nmn\r\n",
           TOO_LARGE + b"MN\r\n")
    c.call(b"set kk 0 0 %d\r\n" % n + b"v" * n + b"\r\nmn\r\n",
           TOO_LARGE + b"MN\r\n")                 # the key counts too
    assert c.get_value(b"a") == (0, b"v" * n)
    assert c.stats(b"settings")["item_size_max"] == str(limit)


def test_I_above_the_default_allows_larger_items(make_server):
    c = make_server("-I", "2m").connect()
    value = b"w" * (1536 * 1024)
    c.call(b"set big 0 0 %d\r\n" % len(value) + value + b"\r\n", STORED)
    assert c.get_value(b"big") == (0, value)
    assert c.stats(b"settings")["item_size_max"] == str(2 << 20)


def test_M_refuses_to_store_when_full_and_evicts_nothing(make_server):
    # memcached refuses -m 1 with the default -I 1m ("Cannot set item
    # size limit higher than 1/2 of memory max"); -m 2 is its smallest.
    c = make_server("-m", "2", "-M").connect()
    stored, reply = fill(c, 1000, limit_bytes=16 << 20)
    assert reply == OOM, reply
    assert len(stored) > 100
    st = c.stats()
    assert st["evictions"] == "0"
    assert int(st["curr_items"]) >= len(stored)
    for k in stored[:: max(1, len(stored) // 50)] + stored[-3:]:
        assert c.get_value(k) == (0, b"v" * 1000), k
    settings = c.stats(b"settings")
    assert settings["evictions"] == "off"
    assert settings["maxbytes"] == str(2 << 20)


@pytest.mark.pmcached_only
def test_M_refuses_an_incr_that_needs_room_and_keeps_the_value(make_server):
    """Under -M with the memory exactly full (pmcached counts an item's
    bytes exactly: its header, key and value, as stats "bytes" shows), an
    incr or ma whose number needs one byte more is refused with the error
    of memcached's incr, and the value stays: the store aborts, where it
    had committed the old item's removal and lost the key."""
    c = make_server("-m", "2", "-M").connect()
    c.call(b"set n 0 0 1\r\n9\r\n", STORED)
    header = int(c.stats()["bytes"]) - 2
    stored, reply = fill(c, 1000, limit_bytes=16 << 20)
    assert reply == OOM, reply
    left = (2 << 20) - int(c.stats()["bytes"]) - header - len(b"last")
    assert 0 <= left < 1000 + len(b"fill0"), left
    c.call(b"set last 0 0 %d\r\n%s\r\n" % (left, b"w" * left), STORED)
    assert int(c.stats()["bytes"]) == 2 << 20
    c.call(b"incr n 1\r\n", b"SERVER_ERROR out of memory\r\n")
    c.call(b"ma n\r\n", b"SERVER_ERROR out of memory\r\n")
    assert c.get_value(b"n") == (0, b"9")
    c.call(b"decr n 1\r\n", b"8\r\n")            # as long: fits in place


def test_m_without_M_evicts_instead_of_failing(make_server):
    c = make_server("-m", "2").connect()
    stored, reply = fill(c, 1000, limit_bytes=8 << 20)
    assert reply is None, reply
    st = c.stats()
    assert int(st["evictions"]) > 0
    assert int(st["bytes"]) <= 2 << 20
    assert c.get_value(stored[0]) is None        # the oldest went first
    assert c.get_value(stored[-1]) == (0, b"v" * 1000)
    assert st["limit_maxbytes"] == str(2 << 20)


# ------------------------------------------------------------------- -C

def test_C_disables_cas(make_server):
    c = make_server("-C").connect()
    c.call(b"set a 0 0 1\r\nx\r\n", STORED)
    c.call(b"gets a\r\n", b"VALUE a 0 1 0\r\nx\r\nEND\r\n")
    c.call(b"mg a c\r\n", b"HD c0\r\n")
    # With no unique to compare, memcached answers EXISTS to every cas.
    c.call(b"cas a 0 0 1 0\r\ny\r\n", b"EXISTS\r\n")
    c.call(b"cas a 0 0 1 5\r\ny\r\n", b"EXISTS\r\n")
    c.call(b"cas nope 0 0 1 0\r\ny\r\n", b"NOT_FOUND\r\n")
    assert c.stats(b"settings")["cas_enabled"] == "no"


# ------------------------------------------------------------------- -c

def open_until_refused(srv, most):
    """Connections that each answer version, until one is refused; returns
    (accepted connections, the refused one's bytes or None)."""
    accepted = []
    for _ in range(most):
        c = srv.connect(timeout=3)
        c.send(b"version\r\n")
        try:
            line = c.readline(timeout=3)
        except AssertionError:
            line = c.buf
        if not line.startswith(b"VERSION "):
            closed = c.closed(timeout=3)
            got = line + c.buf
            c.close()
            assert closed, "a refused connection must be closed"
            return accepted, got
        accepted.append(c)
    return accepted, None


def test_c_limits_connections(make_server):
    limit = 64
    srv = make_server("-c", limit)
    accepted, refused = open_until_refused(srv, limit + 5)
    # memcached counts its own descriptors (listeners, thread pipes)
    # against -c: with -t 4 it takes 40 clients at -c 64, not 64.
    print("accepted %d connections at -c %d" % (len(accepted), limit))
    assert refused == TOO_MANY
    assert 1 <= len(accepted) <= limit
    for i, c in enumerate(accepted):            # existing ones still work
        c.call(b"set k%d 0 0 1\r\nx\r\n" % i, STORED)
    accepted.pop().close()
    connect_when_room(srv).close()              # room again after a close
    for c in accepted:
        c.close()
    # the server sees the closes when its threads get to them: on a loaded
    # machine the first connections after them may still be refused
    assert connect_when_room(srv).stats(b"settings")["maxconns"] == str(limit)


def connect_when_room(srv, seconds=10):
    """A connection that answers version, once the server has room for it."""
    deadline = time.monotonic() + seconds
    while True:
        c = srv.connect()
        c.send(b"version\r\n")
        try:
            if c.readline(timeout=2).startswith(b"VERSION "):
                return c
        except AssertionError:
            pass
        c.close()
        assert time.monotonic() < deadline, "no room after a close"
        time.sleep(0.05)


@pytest.mark.pmcached_only
def test_c_accepts_exactly_c_clients(make_server):
    # pmcached refuses exactly the connections over -c: it does
    # not count its own descriptors as memcached does.
    limit = 16
    srv = make_server("-c", limit)
    accepted, refused = open_until_refused(srv, limit + 5)
    assert (len(accepted), refused) == (limit, TOO_MANY)


# ------------------------------------------------------------ -R -t -B

def test_R_still_answers_every_pipelined_request(make_server):
    c = make_server("-R", "1").connect()
    c.call(b"set a 0 0 1\r\nx\r\n", STORED)
    c.call(b"get a\r\n" * 300, b"VALUE a 0 1\r\nx\r\nEND\r\n" * 300)
    st = c.stats(b"settings")
    if "reqs_per_event" in st:
        assert st["reqs_per_event"] == "1"


def test_t_sets_the_thread_count(make_server):
    c = make_server("-t", "2").connect()
    assert c.stats()["threads"] == "2"


def test_B_ascii(make_server):
    c = make_server("-B", "ascii").connect()
    c.call(b"set a 0 0 1\r\nx\r\nget a\r\n",
           STORED + b"VALUE a 0 1\r\nx\r\nEND\r\n")
    assert c.stats(b"settings")["binding_protocol"] == "ascii"


# ---------------------------------------------------------------- -s -a

@pytest.mark.parametrize("mask", ["0700", "0766"])
def test_s_unix_socket_with_mask_and_no_tcp(make_server, mask):
    tcp = free_port()
    srv = make_server("-a", mask, "-p", tcp, unix="mc.sock")
    mode = stat.S_IMODE(os.stat(srv.unix).st_mode)
    assert stat.S_ISSOCK(os.stat(srv.unix).st_mode)
    assert mode == int(mask, 8), oct(mode)
    c = srv.connect()
    c.call(b"set a 0 0 1\r\nx\r\nget a\r\n",
           STORED + b"VALUE a 0 1\r\nx\r\nEND\r\n")
    # -s disables TCP: memcached listens on no TCP port at all.
    assert listening_addresses(tcp) == []
    assert c.stats(b"settings")["domain_socket"] == srv.unix


# ------------------------------------------------------------------- -A

def test_A_enables_shutdown(make_server):
    srv = make_server("-A")
    c = srv.connect()
    c.call(b"shutdown x\r\n", b"CLIENT_ERROR invalid shutdown mode\r\n")
    c.send(b"shutdown\r\n")
    assert c.closed(timeout=5)
    assert c.buf == b""
    assert srv.wait_exit(5) == 0


# ------------------------------------------------------------ -l -p -U

def test_l_binds_the_given_address(make_server):
    srv = make_server()
    assert listening_addresses(srv.port) == [HOST]


@pytest.mark.pmcached_only
def test_default_listen_address_is_loopback(make_server):
    # memcached's default is INADDR_ANY (0.0.0.0 and ::); pmcached's
    # default is 127.0.0.1 (README, Flags).
    port = free_port()
    srv = make_server("-p", port, port=port, listen=False)
    assert listening_addresses(srv.port) == [HOST]


def read_port_file(path, srv, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert srv.proc.poll() is None, "exited %s: %s" % (
            srv.proc.returncode, srv.stderr_tail())
        try:
            with open(path) as f:
                text = f.read()
            if text.endswith("\n"):
                return text
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    raise AssertionError("no port file %s" % path)


def test_port_file_names_the_tcp_port(make_server, tmp_path):
    path = str(tmp_path / "ports")
    srv = make_server(env={"MEMCACHED_PORT_FILENAME": path})
    assert read_port_file(path, srv) == "TCP INET: %d\n" % srv.port


def test_p_minus_one_picks_a_port_and_writes_it(make_server, tmp_path):
    # memcached's own test suite starts it with -p -1 (an ephemeral port).
    path = str(tmp_path / "ports")
    srv = make_server("-l", HOST, "-p", "-1", listen=False, start=False,
                      env={"MEMCACHED_PORT_FILENAME": path})
    srv.start(wait=False)
    m = re.fullmatch(r"TCP INET: (\d+)\n", read_port_file(path, srv))
    assert m
    srv.port = int(m.group(1))
    srv.wait_ready()


def test_U_serves_udp(make_server):
    port = free_tcp_udp_port()
    srv = make_server("-U", port, port=port)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.settimeout(3)
        # The frame header: request id, sequence 0, 1 datagram, reserved.
        u.sendto(struct.pack(">HHHH", 7, 0, 1, 0)
                 + b"set u 0 0 2\r\nhi\r\n", (HOST, port))
        assert u.recv(2048) == struct.pack(">HHHH", 7, 0, 1, 0) + STORED
        u.sendto(struct.pack(">HHHH", 8, 0, 1, 0) + b"get u\r\n",
                 (HOST, port))
        assert u.recv(2048) == (struct.pack(">HHHH", 8, 0, 1, 0)
                                + b"VALUE u 0 2\r\nhi\r\nEND\r\n")
    srv.connect().call(b"get u\r\n", b"VALUE u 0 2\r\nhi\r\nEND\r\n")


# ---------------------------------------------------------------- -d -P

def test_d_daemonizes_and_P_writes_the_pid(target, make_server, tmp_path):
    pidfile = str(tmp_path / "pid")
    srv = make_server("-d", "-P", pidfile, start=False)
    r = subprocess.run(srv.argv(), capture_output=True, timeout=10,
                       stdin=subprocess.DEVNULL, env=srv.env)
    assert r.returncode == 0, r.stderr
    pid = None
    try:
        deadline = time.monotonic() + 5
        while pid is None and time.monotonic() < deadline:
            try:
                with open(pidfile) as f:
                    pid = int(f.read().strip())
            except (FileNotFoundError, ValueError):
                time.sleep(0.05)
        assert pid, "no pid file"
        c = srv.connect()
        c.call(b"set a 0 0 1\r\nx\r\n", STORED)
        assert c.stats()["pid"] == str(pid)
        os.kill(pid, 15)
        deadline = time.monotonic() + 5
        while os.path.exists("/proc/%d" % pid):
            assert time.monotonic() < deadline, "daemon ignores SIGTERM"
            time.sleep(0.05)
    finally:
        if pid is None:                 # no pid file: ask the daemon
            try:
                pid = int(srv.connect(timeout=2).stats()["pid"])
            except (OSError, AssertionError, KeyError, ValueError):
                pass
        if pid and os.path.exists("/proc/%d" % pid):
            os.kill(pid, 9)


# ------------------------------------------------------------- -v -vv

def test_vv_logs_commands_and_default_does_not(make_server):
    quiet = make_server()
    loud = make_server("-vv")
    for srv in (quiet, loud):
        c = srv.connect()
        c.call(b"set vvkey 0 0 1\r\nx\r\nget vvkey\r\n",
               STORED + b"VALUE vvkey 0 1\r\nx\r\nEND\r\n")
        c.close()
    deadline = time.monotonic() + 3
    while "vvkey" not in loud.stderr_text():
        assert time.monotonic() < deadline, loud.stderr_text()[-500:]
        time.sleep(0.05)
    assert "vvkey" not in quiet.stderr_text()


def test_v_starts_and_serves(make_server):
    make_server("-v").connect().call(b"mn\r\n", b"MN\r\n")


# ------------------------------------------------------- -h -V -o, errors

def test_V_prints_the_version_and_exits(target):
    r = run_binary(target, "-V")
    assert r.returncode == 0
    assert re.fullmatch(rb"\S+ [0-9][^\s]*\n", r.stdout), r.stdout


def test_h_prints_usage_and_exits(target):
    r = run_binary(target, "-h")
    assert r.returncode == 0
    for flag in (b"-p", b"-m", b"-c", b"-I", b"-e"):
        assert flag in r.stdout


def test_o_hashpower_is_accepted(make_server):
    make_server("-o", "hashpower=16").connect().call(b"mn\r\n", b"MN\r\n")


@pytest.mark.parametrize("args", [["-B", "bogus"], ["-t", "0"],
                                  ["--no-such-flag"]])
def test_bad_options_are_refused(make_server, args):
    srv = make_server(*args, start=False)
    srv.start(wait=False)
    status = srv.wait_exit(timeout=3)
    assert status is not None, "still running with %s" % args
    assert status != 0
    assert srv.stderr_text()


@pytest.mark.memcached_control
def test_unknown_o_option_stops_memcached(make_server):
    srv = make_server("-o", "nosuchoption=1", start=False)
    srv.start(wait=False)
    assert srv.wait_exit(timeout=3) not in (None, 0)


@pytest.mark.pmcached_only
def test_unknown_o_option_is_warned_about_not_fatal(make_server):
    # pmcached keeps running (a memcached command line with options it
    # has no use for must still start it), and says what it ignored.
    srv = make_server("-o", "nosuchoption=1,hashpower=16")
    srv.connect().call(b"mn\r\n", b"MN\r\n")
    assert "nosuchoption" in srv.stderr_text()


# ------------------------------------------------------ pmcached's own

@pytest.mark.pmcached_only
def test_e_names_the_region_file(make_server):
    srv = make_server()
    srv.connect().call(b"set a 0 0 1\r\nx\r\n", STORED)
    assert os.path.getsize(srv.region) > 0


@pytest.mark.pmcached_only
@pytest.mark.parametrize("opt", ["--runtime=undo", "--runtime=redo",
                                 "--runtime=redo-async", "--runtime=twin",
                                 "--domain=pdom1",
                                 "--domain=pdom2", "--backend=file",
                                 "--backend=emulated", "--backend=journal"])
def test_pmcached_options_are_accepted(make_server, opt):
    c = make_server(opt).connect()
    c.call(b"set a 0 0 1\r\nx\r\nget a\r\n",
           STORED + b"VALUE a 0 1\r\nx\r\nEND\r\n")


@pytest.mark.pmcached_only
@pytest.mark.parametrize("opt", ["--runtime=bogus", "--domain=pdom9",
                                 "--backend=bogus",
                                 "--domain=pdom2 --backend=journal"])
def test_bad_pmcached_options_are_refused(make_server, opt):
    srv = make_server(*opt.split(), start=False)
    srv.start(wait=False)
    status = srv.wait_exit(timeout=3)
    assert status not in (None, 0), "accepted %s" % opt
    assert srv.stderr_text()
