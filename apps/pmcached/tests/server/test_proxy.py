# SPDX-License-Identifier: BSD-3-Clause
"""A cache tier of three servers: one of them is killed with SIGKILL and
restarted on the same port with the same -e file, and every key must come
back, read through twemproxy (nutcracker, ketama over fnv1a_64, no
ejection) and through pymemcache's HashClient.

Against pmcached nothing may be lost. Against memcached (a negative
control, memcached_control) the same scenario must lose exactly the killed
instance's keys, even with memcached's own restartable mode (-e): that is
what shows these checks can fail.
"""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from mcserver import HOST, Conn, free_port

NKEYS = 300
NUTCRACKER = shutil.which("nutcracker") or "/usr/sbin/nutcracker"


def keyset():
    return {b"tier:%03d" % i: b"value-%d-" % i + b"x" * (i % 70)
            for i in range(NKEYS)}


def get_many(conn, keys):
    """{key: value} of the hits of one get over `keys` (raw protocol)."""
    conn.send(b"get " + b" ".join(keys) + b"\r\n")
    out = {}
    while True:
        line = conn.readline()
        if line == b"END\r\n":
            return out
        m = re.fullmatch(rb"VALUE (\S+) \d+ (\d+)\r\n", line)
        if not m:
            raise IOError("unexpected reply %r" % line)
        out[m.group(1)] = conn.recv_exact(int(m.group(2)) + 2)[:-2]


def owners(servers, keys):
    """For each key, the indexes of the servers that hold it."""
    held = {k: [] for k in keys}
    keys = list(keys)
    for i, srv in enumerate(servers):
        c = srv.connect()
        for j in range(0, len(keys), 50):
            for k in get_many(c, keys[j:j + 50]):
                held[k].append(i)
        c.close()
    return held


@pytest.fixture
def trio(make_server):
    """Three servers, each with its region file (memcached: -e too)."""
    return [make_server(memfile=True, name="s%d" % i) for i in range(3)]


class Nutcracker:
    def __init__(self, backends):
        self.dir = tempfile.mkdtemp(prefix="pmcached-test-nc-",
                                    dir="/dev/shm")
        self.port = free_port()
        self.conf = os.path.join(self.dir, "nutcracker.yml")
        with open(self.conf, "w") as f:
            f.write("tier:\n"
                    "  listen: %s:%d\n"
                    "  hash: fnv1a_64\n"
                    "  distribution: ketama\n"
                    "  auto_eject_hosts: false\n"
                    "  timeout: 2000\n"
                    "  server_retry_timeout: 200\n"
                    "  servers:\n" % (HOST, self.port))
            for i, srv in enumerate(backends):
                f.write("    - %s:%d:1 s%d\n" % (HOST, srv.port, i))
        self.proc = None

    def check_config(self):
        r = subprocess.run([NUTCRACKER, "-t", "-c", self.conf],
                           capture_output=True, timeout=10,
                           stdin=subprocess.DEVNULL)
        text = (r.stdout + r.stderr).decode(errors="replace")
        assert r.returncode == 0 and "syntax is ok" in text, text

    def start(self):
        log = os.path.join(self.dir, "nutcracker.log")
        self.proc = subprocess.Popen(
            [NUTCRACKER, "-c", self.conf, "-s", str(free_port()),
             "-a", HOST, "-o", log, "-p", os.path.join(self.dir, "pid"),
             "-v", "4"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while True:
            assert self.proc.poll() is None, self.log_tail()
            try:
                c = self.connect()
                if get_many(c, [b"probe"]) == {}:
                    c.close()
                    return
            except (OSError, AssertionError):
                pass
            assert time.monotonic() < deadline, self.log_tail()
            time.sleep(0.05)

    def connect(self):
        s = socket.create_connection((HOST, self.port), 3)
        return Conn(s, 3)

    def log_tail(self):
        try:
            with open(os.path.join(self.dir, "nutcracker.log")) as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def nutcracker(trio):
    if not os.access(NUTCRACKER, os.X_OK):
        pytest.skip("nutcracker (twemproxy) is not installed")
    nc = Nutcracker(trio)
    nc.check_config()
    nc.start()
    yield nc
    nc.stop()


def read_all_with_retry(read_batch, keys, timeout=15):
    """Read every key through a front (proxy or client) that may fail for
    a moment while it reconnects to a restarted backend."""
    keys = list(keys)
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = {}
            for j in range(0, len(keys), 50):
                got.update(read_batch(keys[j:j + 50]))
            return got
        except (OSError, IOError, AssertionError) as e:
            if time.monotonic() > deadline:
                raise AssertionError("front still failing: %r" % e)
            time.sleep(0.2)


def kill_one_and_restart(trio, values):
    """Place the keys, kill -9 the server holding most, restart it; the
    victim's index and the keys it held."""
    held = owners(trio, values)
    assert all(len(v) == 1 for v in held.values()), \
        "a key on no server or on two"
    counts = [sum(1 for v in held.values() if v == [i]) for i in range(3)]
    assert all(n > 0 for n in counts), counts
    victim = counts.index(max(counts))
    trio[victim].restart()              # SIGKILL, same port, same -e file
    lost = {k for k, v in held.items() if v == [victim]}
    return victim, lost


def proxy_scenario(trio, nutcracker):
    values = keyset()
    c = nutcracker.connect()
    for k, v in values.items():
        c.call(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v), b"STORED\r\n")
    c.close()
    victim, lost = kill_one_and_restart(trio, values)

    def read_batch(keys):
        conn = nutcracker.connect()
        try:
            return get_many(conn, keys)
        finally:
            conn.close()
    return values, lost, read_all_with_retry(read_batch, values)


def hashclient_scenario(trio):
    try:
        from pymemcache.client.hash import HashClient
    except ImportError:
        pytest.skip("pymemcache is not installed")

    def client():
        return HashClient([(HOST, s.port) for s in trio], connect_timeout=2,
                          timeout=3, default_noreply=False,
                          retry_attempts=1, retry_timeout=0.1,
                          dead_timeout=0.1)
    values = keyset()
    hc = client()
    for k, v in values.items():
        assert hc.set(k.decode(), v) is True
    hc.close()
    victim, lost = kill_one_and_restart(trio, values)
    # A new client, as after a client restart: same servers, same hashing.
    hc = client()

    def read_batch(keys):
        got = hc.get_many([k.decode() for k in keys])
        return {k.encode(): v for k, v in got.items()}
    try:
        return values, lost, read_all_with_retry(read_batch, values)
    finally:
        hc.close()


@pytest.mark.pmcached_only
def test_proxy_every_key_survives_kill9_of_one_instance(trio, nutcracker):
    values, lost, got = proxy_scenario(trio, nutcracker)
    assert lost                         # the victim did hold keys
    missing = sorted(k for k in values if got.get(k) != values[k])
    assert missing == [], "%d keys lost or wrong" % len(missing)


@pytest.mark.pmcached_only
def test_hashclient_every_key_survives_kill9_of_one_instance(trio):
    values, lost, got = hashclient_scenario(trio)
    assert lost
    missing = sorted(k for k in values if got.get(k) != values[k])
    assert missing == [], "%d keys lost or wrong" % len(missing)


@pytest.mark.memcached_control
def test_proxy_control_memcached_loses_the_killed_instances_keys(
        trio, nutcracker):
    values, lost, got = proxy_scenario(trio, nutcracker)
    assert lost
    assert set(values) - set(got) == lost
    assert all(got[k] == values[k] for k in got)


@pytest.mark.memcached_control
def test_hashclient_control_memcached_loses_the_killed_instances_keys(trio):
    values, lost, got = hashclient_scenario(trio)
    assert lost
    assert set(values) - set(got) == lost
    assert all(got[k] == values[k] for k in got)
