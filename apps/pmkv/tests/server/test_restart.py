"""Stops and restarts: SIGTERM, SHUTDOWN and kill -9 keep every write; a
region of another kind, or a damaged one, is refused with a message and
exit status 1, and left as it was."""
import hashlib
import os
import signal
import subprocess

import redis

from kvserver import Server


def fill(c, n=500):
    for i in range(n):
        c.set("k%d" % i, "v%d" % i)
    c.incrby("ctr", 7)


def check(c, n=500):
    assert c.dbsize() == n + 1
    assert c.mget(["k%d" % i for i in range(n)]) == [
        b"v%d" % i for i in range(n)]
    assert c.get("ctr") == b"7"


def test_sigterm_shutdown_and_kill9_keep_everything(make_server):
    s = make_server()
    fill(redis.Redis(port=s.port))
    assert s.stop() == 0  # SIGTERM: a clean stop
    s.start()
    c = redis.Redis(port=s.port)
    check(c)
    try:
        c.shutdown()
    except redis.ConnectionError:
        pass
    assert s.proc.wait(10) == 0
    s.start()
    c = redis.Redis(port=s.port)
    check(c)
    s.kill(signal.SIGKILL)
    s.start()
    check(redis.Redis(port=s.port))


def test_check_flag(make_server, pmkv_bin):
    s = make_server()
    fill(redis.Redis(port=s.port), 50)
    s.stop()
    r = subprocess.run([pmkv_bin, "--check", "--region", s.region],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert "consistent, 51 keys" in r.stdout


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_foreign_and_damaged_regions_are_refused(pmkv_bin, tmp_path):
    other = tmp_path / "other.region"
    other.write_bytes(b"not a region at all" * 1000)
    before = digest(other)
    r = subprocess.run([pmkv_bin, "--port", "0", "--unixsocket",
                        str(tmp_path / "s"), "--region", str(other)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert str(other) in r.stderr and "pmkv:" in r.stderr
    assert digest(other) == before
    # a pmkv region whose table directory offset is damaged
    s = Server(pmkv_bin, str(tmp_path))
    s.start()
    redis.Redis(port=s.port).set("a", "b")
    s.stop()
    root_dir_field = find_root_dir_field(s.region)
    with open(s.region, "r+b") as f:
        f.seek(root_dir_field)
        f.write((12345).to_bytes(8, "little"))
    before = digest(s.region)
    r = subprocess.run([pmkv_bin, "--check", "--region", s.region],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "corrupt" in r.stderr
    r = subprocess.run([pmkv_bin, "--port", str(s.port), "--region",
                        s.region], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 1 and "corrupt" in r.stderr


def find_root_dir_field(path):
    """The file offset of the root's `dir` field: the root starts with
    PMKV_MAGIC ("PMKV__"), and dir is at offset 40 (layout.h)."""
    data = open(path, "rb").read()
    at = data.find(b"PMKV__\x00\x00")
    assert at > 0
    return at + 40
