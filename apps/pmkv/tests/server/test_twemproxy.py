# SPDX-License-Identifier: BSD-3-Clause
"""Scale-out on an existing engine: twemproxy (nutcracker, redis: true,
ketama over fnv1a_64, no ejection) in front of three pmkv. Keys of every
type are written through the proxy; one pmkv is killed with SIGKILL:
while it is down the keys of the other two are served as before, and
after its restart on the same port and region every key it held is
served again through the proxy, none lost."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
import redis

from kvserver import Server, free_port

pytestmark = pytest.mark.features

NUTCRACKER = shutil.which("nutcracker") or "/usr/sbin/nutcracker"
NKEYS = 300


class Nutcracker:
    def __init__(self, backends):
        self.dir = tempfile.mkdtemp(prefix="pmkv-test-nc-", dir="/dev/shm")
        self.port = free_port()
        self.conf = os.path.join(self.dir, "nutcracker.yml")
        with open(self.conf, "w") as f:
            f.write("tier:\n"
                    "  listen: 127.0.0.1:%d\n"
                    "  redis: true\n"
                    "  hash: fnv1a_64\n"
                    "  distribution: ketama\n"
                    "  auto_eject_hosts: false\n"
                    "  timeout: 2000\n"
                    "  server_retry_timeout: 200\n"
                    "  servers:\n" % self.port)
            for i, srv in enumerate(backends):
                f.write("    - 127.0.0.1:%d:1 s%d\n" % (srv.port, i))
        self.proc = None

    def start(self):
        r = subprocess.run([NUTCRACKER, "-t", "-c", self.conf],
                           capture_output=True, timeout=10,
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stderr
        self.proc = subprocess.Popen(
            [NUTCRACKER, "-c", self.conf, "-s", str(free_port()),
             "-a", "127.0.0.1", "-o", os.path.join(self.dir, "log"),
             "-p", os.path.join(self.dir, "pid")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while True:
            assert self.proc.poll() is None
            try:
                if self.client().get("probe") is None:
                    return
            except redis.RedisError:
                pass
            assert time.monotonic() < deadline, "nutcracker did not start"
            time.sleep(0.05)

    def client(self):
        return redis.Redis(port=self.port, socket_timeout=5)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def tier(pmkv_bin, tmp_path):
    if not os.access(NUTCRACKER, os.X_OK):
        pytest.skip("nutcracker (twemproxy) is not installed")
    servers = []
    for i in range(3):
        d = tmp_path / ("s%d" % i)
        d.mkdir()
        servers.append(Server(pmkv_bin, str(d)).start())
    nc = Nutcracker(servers)
    nc.start()
    yield servers, nc
    nc.stop()
    for s in servers:
        s.kill()


def write_all(c):
    """A key of each type per i; what each must read back."""
    want = {}
    for i in range(NKEYS):
        kind = i % 4
        k = "tier:%d" % i
        if kind == 0:
            c.set(k, "v%d" % i)
        elif kind == 1:
            c.hset(k, mapping={"f": i, "g": -i})
        elif kind == 2:
            c.rpush(k, "a%d" % i, "b%d" % i)
        else:
            c.zadd(k, {"m%d" % i: i})
        want[k] = kind
    return want


def read(c, k, kind):
    i = int(k.split(":")[1])
    if kind == 0:
        return c.get(k) == b"v%d" % i
    if kind == 1:
        return c.hgetall(k) == {b"f": b"%d" % i, b"g": b"%d" % -i}
    if kind == 2:
        return c.lrange(k, 0, -1) == [b"a%d" % i, b"b%d" % i]
    return c.zrange(k, 0, -1, withscores=True) == [(b"m%d" % i, float(i))]


def test_a_killed_backend_comes_back_whole(tier):
    servers, nc = tier
    c = nc.client()
    want = write_all(c)
    held = [redis.Redis(port=s.port).dbsize() for s in servers]
    assert sum(held) == NKEYS and all(held), held
    victim = servers[1]
    on_victim = {k for k in want
                 if redis.Redis(port=victim.port).exists(k)}
    victim.kill(signal.SIGKILL)
    # the others' keys are served while it is down
    for k, kind in want.items():
        if k not in on_victim:
            assert read(c, k, kind), k
    victim.start()
    deadline = time.monotonic() + 10
    while True:  # the proxy retries the server after server_retry_timeout
        try:
            c.get("tier:probe")
            if all(read(c, k, want[k]) for k in on_victim):
                break
        except redis.RedisError:
            pass
        assert time.monotonic() < deadline, "the restarted keys are not back"
        time.sleep(0.1)
    assert all(read(c, k, kind) for k, kind in want.items())
