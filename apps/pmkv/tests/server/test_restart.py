# SPDX-License-Identifier: BSD-3-Clause
"""Stops and restarts: SIGTERM, SHUTDOWN and kill -9 keep every write; a
region of another kind, or a damaged one, or one of the other version, is
refused with a message and exit status 1, and left as it was."""
import hashlib
import os
import signal
import subprocess
import sys
import tarfile

import redis

from kvserver import Server

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "..", "tests", "python"))
from region_header import TWIN_RESEAL, incompat  # noqa: E402


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
    # a pmkv region whose key space offset (root offset 32) is damaged
    s = Server(pmkv_bin, str(tmp_path))
    s.start()
    redis.Redis(port=s.port).set("a", "b")
    s.stop()
    with open(s.region, "r+b") as f:
        f.seek(find_root(s.region) + 32)
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


def find_root(path):
    """The file offset of the root: it starts with PMKV_MAGIC ("PMKV__",
    layout.h)."""
    data = open(path, "rb").read()
    at = data.find(b"PMKV__\x00\x00")
    assert at > 0
    return at


def refused(pmkv_bin, s, *flags):
    """Start pmkv over s's region with flags: it must exit 1 and leave the
    region as it was; its message is returned."""
    before = digest(s.region)
    r = subprocess.run([pmkv_bin, "--port", str(s.port), "--region",
                        s.region] + list(flags), capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1, r.stderr
    assert digest(s.region) == before
    return r.stderr


def test_versions_are_kept_apart(pmkv_bin, tmp_path):
    opt = Server(pmkv_bin, str(tmp_path / "opt"), "--opt")
    os.makedirs(opt.dir)
    opt.start()
    redis.Redis(port=opt.port).set("a", "opt")
    opt.stop()
    assert "the store is the opt version" in refused(pmkv_bin, opt,
                                                     "--wrapped")
    assert "cannot run under cow" in refused(pmkv_bin, opt,
                                             "--runtime", "cow")
    # a new store under cow is the wrapped version; it keeps its version
    # when reopened with no flag, under another runtime
    w = Server(pmkv_bin, str(tmp_path / "w"), "--runtime", "cow")
    os.makedirs(w.dir)
    w.start()
    c = redis.Redis(port=w.port)
    c.set("a", "wrapped")
    assert c.info("persistence")["pmkv_store_version"] == "wrapped"
    w.stop()
    w.flags = ["--runtime", "undo"]
    w.start()
    c = redis.Redis(port=w.port)
    assert c.get("a") == b"wrapped"
    assert c.info("persistence")["pmkv_runtime"] == "undo"
    w.stop()
    assert "the store is the wrapped version" in refused(pmkv_bin, w,
                                                         "--opt")
    # a wrapped store whose meta offset (root offset 72) is damaged
    with open(w.region, "r+b") as f:
        f.seek(find_root(w.region) + 72)
        f.write((12345).to_bytes(8, "little"))
    assert "corrupt" in refused(pmkv_bin, w)


def test_journal_backend(make_server, pmkv_bin):
    """--backend journal: INFO names the journal beside the region; after
    kill -9 every write is back, whether `pmkv --check` or the restarted
    server replays the journal; FLUSHALL and a clean stop too."""
    s = make_server("--backend", "journal")
    journal = s.region + ".pmtxj"
    c = redis.Redis(port=s.port)
    info = c.info("persistence")
    assert info["pmkv_backend"] == "journal"
    assert info["pmkv_journal"] == journal
    assert info["pmkv_journal_size"] == os.path.getsize(journal) > 0
    fill(c)
    s.kill(signal.SIGKILL)
    r = subprocess.run([pmkv_bin, "--check", "--region", s.region,
                        "--backend", "journal"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "consistent, 501 keys" in r.stdout
    s.start()
    c = redis.Redis(port=s.port)
    check(c)
    c.set("after", "check")
    s.kill(signal.SIGKILL)
    s.start()  # the server replays the journal itself
    c = redis.Redis(port=s.port)
    assert c.get("after") == b"check"
    c.delete("after")
    check(c)
    c.flushall()
    c.set("only", "one")
    s.kill(signal.SIGKILL)
    s.start()
    c = redis.Redis(port=s.port)
    assert c.dbsize() == 1 and c.get("only") == b"one"
    assert s.stop() == 0
    assert os.path.exists(journal)


def test_fast_restart_makes_a_twin_region_that_does_not_reseal(pmkv_bin,
                                                               tmp_path):
    fast = Server(pmkv_bin, str(tmp_path / "fast"), "--runtime", "twin",
                  "--maxmemory", "64mb", "--fast-restart")
    os.makedirs(fast.dir)
    fast.start()
    fill(redis.Redis(port=fast.port))
    fast.kill(signal.SIGKILL)
    assert incompat(fast.region) & TWIN_RESEAL == 0
    fast.start()  # opened again with the flag: ignored at open
    check(redis.Redis(port=fast.port))
    fast.stop()
    fast.flags = ["--runtime", "twin"]
    fast.start()  # and without it: the region keeps its kind
    check(redis.Redis(port=fast.port))
    fast.stop()
    assert incompat(fast.region) & TWIN_RESEAL == 0
    plain = Server(pmkv_bin, str(tmp_path / "plain"), "--runtime", "twin",
                   "--maxmemory", "64mb")
    os.makedirs(plain.dir)
    plain.start()
    plain.stop()
    assert incompat(plain.region) & TWIN_RESEAL == TWIN_RESEAL
    r = subprocess.run([pmkv_bin, "--port", "0", "--region",
                        str(tmp_path / "x.region"), "--fast-restart"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "twin" in r.stderr
    assert not os.path.exists(tmp_path / "x.region")


GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                      "golden", "regions-1.1.tar.xz")


def test_format_1_regions(pmkv_bin, tmp_path):
    """A region of format 1.1 (tests/golden): the opt version's is refused
    with its format, what this pmkv reads and what to do, and left as it
    was; the wrapped version's, still format 1.1, serves its keys."""
    with tarfile.open(GOLDEN) as t:
        t.extractall(tmp_path)
    opt = Server(pmkv_bin, str(tmp_path))
    opt.region = str(tmp_path / "pmkv-1.1-opt.region")
    msg = refused(pmkv_bin, opt)
    assert "format 1.1 (the opt version" in msg
    assert "reads the opt version of format 2.0" in msg
    assert "serve it with the pmkv that wrote it" in msg
    r = subprocess.run([pmkv_bin, "--check", "--region", opt.region],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "format 1.1" in r.stderr
    w = Server(pmkv_bin, str(tmp_path), "--runtime", "undo")
    w.region = str(tmp_path / "pmkv-1.1-wrapped.region")
    w.start()
    c = redis.Redis(port=w.port)
    assert c.info("persistence")["pmkv_store_version"] == "wrapped"
    assert c.mget("greeting", "counter", "a", "b", "c", "later") == [
        b"hello", b"42", b"1", b"2", b"3", b"v"]
    assert c.dbsize() == 6 and c.ttl("later") > 0
    assert w.stop() == 0
