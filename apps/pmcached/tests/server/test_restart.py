# SPDX-License-Identifier: BSD-3-Clause
"""pmcached's promise: after kill -9 and a restart with the same -e file it
serves every acknowledged item (and nothing that was deleted, flushed or
expired). All tests here are pmcached_only: memcached keeps nothing across
kill -9 (test_proxy.py's controls show it).
"""
import os
import sys
import random
import subprocess
import re
import threading
import time

import pytest

from mcserver import wait_until
from apptest import version_of, versioned  # on sys.path: mcserver.py

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "..", "tests", "python"))
from region_header import TWIN_RESEAL, incompat  # noqa: E402

STORED = b"STORED\r\n"
RUNTIMES = ["undo", "redo", "redo-async"]

pytestmark = pytest.mark.pmcached_only


def populate(c, rnd):
    """A mix of every kind of change; the model of what must survive:
    {key: (flags, value) or None for absent}."""
    model = {}
    req = b""
    for i in range(300):
        key = b"item:%d" % i
        size = rnd.choice([0, 1, 10, 100, 1000, 5000, 60000])
        value = bytes(rnd.getrandbits(8) for _ in range(min(size, 64)))
        value = (value * (size // max(len(value), 1) + 1))[:size]
        flags = rnd.getrandbits(32)
        req += b"set %s %d 0 %d\r\n%s\r\n" % (key, flags, size, value)
        model[key] = (flags, value)
    c.call(req, STORED * 300)
    for i in range(0, 300, 7):                      # append / prepend
        key = b"item:%d" % i
        flags, value = model[key]
        c.call(b"append %s 0 0 3\r\nEND\r\n" % key, STORED)
        c.call(b"prepend %s 0 0 5\r\nBEGIN\r\n" % key, STORED)
        model[key] = (flags, b"BEGIN" + value + b"END")
    for i in range(3, 300, 11):                     # deletes
        key = b"item:%d" % i
        c.call(b"delete %s\r\n" % key, b"DELETED\r\n")
        model[key] = None
    for i in range(20):                             # counters
        key = b"counter:%d" % i
        c.call(b"set %s 0 0 1\r\n9\r\n" % key, STORED)
        c.call(b"incr %s %d\r\n" % (key, 10 ** i), b"%d\r\n" % (9 + 10 ** i))
        model[key] = (0, b"%d" % (9 + 10 ** i))
    c.call(b"set replaced 1 0 3\r\nold\r\nset replaced 2 0 3\r\nnew\r\n",
           STORED * 2)
    model[b"replaced"] = (2, b"new")
    c.call(b"ms meta 4 F77 T0\r\nmeta\r\n", b"HD\r\n")
    model[b"meta"] = (77, b"meta")
    return model


def verify(c, model):
    for key, want in model.items():
        assert c.get_value(key) == want, key


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_every_acknowledged_change_survives_kill9(make_server, runtime):
    srv = make_server("--runtime=" + runtime)
    c = srv.connect()
    model = populate(c, random.Random(runtime))
    c.call(b"set ttl 0 1000 1\r\nt\r\n", STORED)
    srv.restart()                       # SIGKILL, same port, same -e file
    c = srv.connect()
    verify(c, model)
    c.send(b"mg ttl t v\r\n")
    m = re.fullmatch(rb"VA 1 t(\d+)\r\n", c.readline())
    assert m and 990 <= int(m.group(1)) <= 1000
    c.expect(b"t\r\n")
    st = c.stats()
    assert int(st["curr_items"]) == sum(v is not None for v in model.values()) + 1


NWKEYS = 40
WINDOW = 16
SPREAD = 2000   # a value: its name, then up to ~2 KB (apptest.versioned)


class Stream:
    """Overwrites NWKEYS keys of its own with ever newer versions, WINDOW
    pipelined sets at a time, until the server dies. For each key it knows
    the last acknowledged version and the versions sent but not
    acknowledged."""

    def __init__(self, rnd, name):
        self.rnd = rnd
        self.name = name
        self.acked = {}                 # key -> last acknowledged version
        self.inflight = {}              # key -> versions sent, unanswered
        self.version = 0
        self.count = 0

    def run(self, srv, stop):
        try:
            c = srv.connect(timeout=2)
            while not stop.is_set():
                batch = []
                for _ in range(WINDOW):
                    key = b"%s:%d" % (self.name, self.rnd.randrange(NWKEYS))
                    self.version += 1
                    batch.append((key, self.version))
                    self.inflight.setdefault(key, set()).add(self.version)
                values = [(k, versioned(k, v, SPREAD)) for k, v in batch]
                c.send(b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (
                    k, len(value), value) for k, value in values))
                for key, version in batch:
                    if c.recv_exact(8) != STORED:
                        return
                    self.acked[key] = version
                    self.inflight[key] = {
                        v for v in self.inflight[key] if v > version}
                    self.count += 1
        except OSError:
            return

    def check(self, c):
        """Each key holds its last acknowledged version or a later one
        that was in flight: never an older one, a torn one or nothing.
        What was found becomes the new baseline: a write that survived a
        crash and was served must survive the next one too."""
        bad = []
        for i in range(NWKEYS):
            key = b"%s:%d" % (self.name, i)
            got = c.get_value(key)
            version = version_of(key, got[1], SPREAD) if got else None
            allowed = self.inflight.get(key, set()) | {self.acked.get(key)}
            if version not in allowed:
                bad.append((key, version, self.acked.get(key)))
            elif version is not None:
                self.acked[key] = version
            self.inflight[key] = set()
        return bad


def kill9_under_load(srv, streams, rnd, cycle, runtime):
    """The streams write, pipelined; kill -9 at a random moment; restart
    under runtime; every stream's keys hold what was acknowledged."""
    stop = threading.Event()
    threads = [threading.Thread(target=s.run, args=(srv, stop))
               for s in streams]
    for t in threads:
        t.start()
    time.sleep(rnd.uniform(0.05, 0.25))
    srv.kill9()
    stop.set()
    for t in threads:
        t.join(10)
        assert not t.is_alive()
    srv.args[0] = "--runtime=" + runtime
    srv.start()
    c = srv.connect()
    bad = [b for s in streams for b in s.check(c)]
    assert bad == [], "cycle %d: (key, found, acknowledged) %r" % (
        cycle, bad[:5])


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_kill9_during_writes_loses_no_acknowledged_write(make_server,
                                                         runtime):
    """Four connections overwrite their keys, pipelined, on two worker
    threads; kill -9 at a random moment, restart, check, twelve times. The
    runtime rotates at every restart (undo -> redo -> redo-async -> ...,
    from the parameter), so each runtime's recovery also meets logs left
    by the others."""
    first = RUNTIMES.index(runtime)
    srv = make_server("--runtime=" + runtime, "-t", "2")
    rnd = random.Random(runtime)
    streams = [Stream(random.Random(rnd.random()), b"w%d" % i)
               for i in range(4)]
    for cycle in range(12):
        kill9_under_load(srv, streams, rnd, cycle,
                         RUNTIMES[(first + cycle + 1) % 3])
    count = sum(s.count for s in streams)
    assert all(s.count for s in streams), "a stream got no acknowledgement"
    print("%d acknowledged writes checked" % count)


def test_twin_region_loses_no_acknowledged_write_and_refuses_others(
        make_server):
    """--runtime=twin creates a twin region (fixed size, a back copy of
    its heap): the same kill -9 cycles as above, six times, under twin
    only (a twin region runs nothing else); then a start under redo is
    refused with pmtx's reason, and the region still holds every key."""
    srv = make_server("--runtime=twin", "-t", "2", "-m", "16")
    # the runtimes are this test's subject: PMCACHED_ARGS's do not apply
    srv.extra = [a for a in srv.extra if not a.startswith("--runtime")]
    srv.terminate(timeout=5)
    os.unlink(srv.region)
    srv.start()
    rnd = random.Random("twin")
    streams = [Stream(random.Random(rnd.random()), b"w%d" % i)
               for i in range(4)]
    for cycle in range(6):
        kill9_under_load(srv, streams, rnd, cycle, "twin")
    assert all(s.count for s in streams), "a stream got no acknowledgement"
    assert srv.terminate(timeout=5) == 0, srv.stderr_tail()
    srv.args[0] = "--runtime=redo"
    srv.start(wait=False)
    assert srv.wait_exit(timeout=5) == 1
    assert "twin region runs twin transactions" in srv.stderr_text()
    srv.args[0] = "--runtime=twin"
    srv.start()
    c = srv.connect()
    assert [b for s in streams for b in s.check(c)] == []


def test_deletes_flushes_and_expiry_survive_kill9(make_server):
    srv = make_server()
    c = srv.connect()
    c.call(b"set gone 0 0 1\r\nx\r\nset flushed 0 0 1\r\nx\r\n", STORED * 2)
    c.call(b"set short 0 1 1\r\nx\r\n", STORED)
    c.call(b"delete gone\r\n", b"DELETED\r\n")
    c.call(b"flush_all\r\n", b"OK\r\n")
    c.call(b"set after 0 0 1\r\ny\r\nset short 0 1 1\r\nx\r\n", STORED * 2)
    assert wait_until(lambda: c.get_value(b"short") is None, timeout=4)
    srv.restart()
    c = srv.connect()
    for key in (b"gone", b"flushed", b"short"):
        assert c.get_value(key) is None, key
    assert c.get_value(b"after") == (0, b"y")


def test_cas_uniques_are_not_reused_after_restart(make_server):
    """A client holding a cas unique from before the crash must not be able
    to overwrite a value stored after it."""
    srv = make_server()
    c = srv.connect()
    before = set()
    for i in range(30):
        c.call(b"set k 0 0 1\r\n%d\r\n" % (i % 10), STORED)
        before.add(c.gets_cas(b"k"))
    stale = c.gets_cas(b"k")
    srv.restart()
    c = srv.connect()
    c.call(b"cas k 0 0 1 %d\r\nz\r\n" % c.gets_cas(b"k"), STORED)
    after = set()
    for i in range(60):
        c.call(b"set k 0 0 1\r\n%d\r\n" % (i % 10), STORED)
        after.add(c.gets_cas(b"k"))
    assert not before & after, sorted(before & after)[:5]
    c.call(b"cas k 0 0 1 %d\r\nz\r\n" % stale, b"EXISTS\r\n")


def test_sigterm_stops_cleanly_and_keeps_the_cache(make_server):
    srv = make_server()
    c = srv.connect()
    c.call(b"set a 3 0 5\r\nhello\r\n", STORED)
    assert srv.terminate(timeout=5) == 0, srv.stderr_tail()
    srv.start()
    assert srv.connect().get_value(b"a") == (3, b"hello")


def test_repeated_kill9_restarts(make_server):
    srv = make_server()
    for cycle in range(5):
        c = srv.connect()
        c.call(b"set cycle%d 0 0 1\r\n%d\r\n" % (cycle, cycle), STORED)
        srv.restart()
    c = srv.connect()
    for cycle in range(5):
        assert c.get_value(b"cycle%d" % cycle) == (0, b"%d" % cycle)


@pytest.mark.parametrize("domain,backend", [
    ("pdom0", "hardware"), ("pdom1", "hardware"), ("pdom2", "emulated"),
    ("pdom1", "file"), ("pdom2", "file"), ("pdom1", "journal")])
def test_kill9_on_each_domain_and_backend(make_server, domain, backend):
    srv = make_server("--domain=" + domain, "--backend=" + backend)
    c = srv.connect()
    model = populate(c, random.Random(domain + backend))
    srv.restart()
    verify(srv.connect(), model)


def test_region_refuses_a_second_server(make_server):
    """Two servers on one region file would corrupt it: pmtx holds an
    exclusive flock on an open region (src/region/region.c, invariant 2),
    so a second pmcached on the same -e file must exit with an error."""
    first = make_server()
    first.connect().call(b"set a 0 0 1\r\nx\r\n", STORED)
    second = make_server(start=False)
    second.region = first.region
    second.start(wait=False)
    assert second.wait_exit(timeout=5) not in (None, 0), \
        "a second pmcached opened a region in use"
    assert first.connect().get_value(b"a") == (0, b"x")


@pytest.mark.parametrize("content", [b"", b"not a region at all\n",
                                     b"\0" * 65536],
                         ids=["empty", "text", "zeroes"])
def test_a_foreign_or_empty_file_is_refused_and_left_alone(make_server,
                                                          tmp_path, content):
    """-e naming a file that is not a pmcached region (empty, text, a
    zeroed file as a crash during a non-atomic create would leave): exit
    1 with a message naming the file, and the file is not written."""
    path = tmp_path / "foreign.region"
    path.write_bytes(content)
    srv = make_server(start=False)
    srv.region = str(path)
    srv.start(wait=False)
    assert srv.wait_exit(timeout=5) == 1
    assert str(path) in srv.stderr_text()
    assert path.read_bytes() == content


def test_a_region_of_another_program_is_refused(make_server, tmp_path):
    """A valid pmtx region with another layout name is refused by name."""
    path = tmp_path / "other.region"
    pmtx = os.path.join(os.path.dirname(os.environ["PMCACHED_BIN"]),
                        "..", "..", "tools", "pmtx")
    if not os.path.exists(pmtx):
        pytest.skip("the pmtx command is not built next to pmcached")
    subprocess.run([pmtx, "create", str(path), "--layout", "other",
                    "--size", "8M"], check=True, capture_output=True)
    before = path.read_bytes()
    srv = make_server(start=False)
    srv.region = str(path)
    srv.start(wait=False)
    assert srv.wait_exit(timeout=5) == 1
    assert "layout" in srv.stderr_text()
    assert path.read_bytes() == before


def test_check_applies_the_journal_first(make_server):
    """On the journal backend a kill -9 leaves the last commits in the
    journal beside the region only, and pmtx refuses a private view of
    it: --check applies them first (the region opened once for writing),
    then checks; the restarted server then serves every item."""
    srv = make_server("--backend=journal")
    c = srv.connect()
    for i in range(50):
        c.call(b"set k%d 0 0 3\r\nabc\r\n" % i, STORED)
    srv.kill9()
    assert os.path.getsize(srv.region + ".pmtxj") > 0
    r = subprocess.run([os.environ["PMCACHED_BIN"], "--check", "-e",
                        srv.region], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert b"consistent, 50 items (its journal's commits applied first)" \
        in r.stdout
    r = subprocess.run([os.environ["PMCACHED_BIN"], "--check", "-e",
                        srv.region], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert b"consistent, 50 items\n" in r.stdout   # nothing left to apply
    srv.start()
    c = srv.connect()
    for i in range(50):
        assert c.get_value(b"k%d" % i) == (0, b"abc")


def test_check_reports_a_consistent_region_and_writes_nothing(make_server):
    srv = make_server()
    c = srv.connect()
    for i in range(50):
        c.call(b"set k%d 0 0 3\r\nabc\r\n" % i, STORED)
    srv.kill9()
    before = open(srv.region, "rb").read()
    r = subprocess.run([os.environ["PMCACHED_BIN"], "--check", "-e",
                        srv.region], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert b"consistent, 50 items" in r.stdout
    assert open(srv.region, "rb").read() == before
    # and a damaged one is reported: cut the file short
    with open(srv.region, "r+b") as f:
        f.truncate(len(before) // 2)
    r = subprocess.run([os.environ["PMCACHED_BIN"], "--check", "-e",
                        srv.region], capture_output=True, timeout=60)
    assert r.returncode == 1 and r.stderr


@pytest.fixture
def small_fs(tmp_path):
    """A 56 MiB tmpfs of its own (mounting needs root: skipped without)."""
    fs = tmp_path / "fs"
    fs.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=56m",
                       "pmcached-full", str(fs)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    yield fs
    subprocess.run(["umount", "-l", str(fs)], check=True)


def test_a_full_disk_evicts_and_loses_no_acknowledged_write(make_server,
                                                           small_fs):
    """-m 64 with its region on a 56 MiB disk: the disk fills before the
    memory limit. Stores go on, evicting the least recently used items in
    transactions of their own (lru.c U5), as memcached does at its limit;
    under -M they are refused; after kill -9 every item served has the
    value acknowledged for it, and the newest are all there."""
    region = str(small_fs / "cache.pmtx")
    srv = make_server("-m", "64", "-e", region, "--backend=file")
    c = srv.connect()
    for i in range(200):                    # 100 MB through a 56 MiB disk
        value = (b"%06d" % i) * (500000 // 6)
        c.call(b"set big%d 0 0 %d\r\n" % (i, len(value)) + value + b"\r\n",
               STORED)
    st = c.stats()
    assert int(st["evictions"]) > 50
    assert os.statvfs(small_fs).f_bavail * os.statvfs(small_fs).f_frsize \
        < (4 << 20)
    srv.restart()
    c = srv.connect()
    served = 0
    for i in range(200):
        got = c.get_value(b"big%d" % i)
        if got is not None:
            assert got[1] == (b"%06d" % i) * (500000 // 6), i
            served += 1
    assert served > 40
    for i in range(190, 200):
        assert c.get_value(b"big%d" % i) is not None, i
    c.close()
    srv.kill9()
    strict = make_server("-m", "64", "-e", region, "--backend=file", "-M")
    c = strict.connect()
    refused = 0
    for i in range(200, 260):
        v = b"x" * 500000
        c.send(b"set big%d 0 0 %d\r\n" % (i, len(v)) + v + b"\r\n")
        reply = c.readline()
        assert reply in (STORED,
                         b"SERVER_ERROR out of memory storing object\r\n")
        refused += reply != STORED
    assert refused > 0
    for i in range(190, 200):
        assert c.get_value(b"big%d" % i)[1][:6] == b"%06d" % i, i


def test_fast_restart_makes_a_twin_region_that_does_not_reseal(make_server):
    """--fast-restart with --runtime=twin creates a twin region without
    the reseal feature (pmtx_options PMTX_CREATE_TWIN_FAST_RESTART); it
    keeps every key across kill -9, and a plain twin region has the bit.
    Without --runtime=twin the flag is refused."""
    srv = make_server("-m", "16")
    # the runtime is this test's subject: PMCACHED_ARGS's does not apply
    srv.extra = [a for a in srv.extra if not a.startswith("--runtime")]
    srv.terminate(timeout=5)
    os.unlink(srv.region)
    srv.args = ["--runtime=twin", "--fast-restart", "-m", "16"]
    srv.start()
    c = srv.connect()
    for i in range(200):
        c.set(b"f%d" % i, b"v%d" % i)
    srv.kill9()
    assert incompat(srv.region) & TWIN_RESEAL == 0
    srv.start()
    c = srv.connect()
    assert [c.get_value(b"f%d" % i) for i in range(200)] == [
        (0, b"v%d" % i) for i in range(200)]
    assert srv.terminate(timeout=5) == 0, srv.stderr_tail()
    os.unlink(srv.region)
    srv.args = ["--runtime=twin", "-m", "16"]
    srv.start()
    assert srv.terminate(timeout=5) == 0, srv.stderr_tail()
    assert incompat(srv.region) & TWIN_RESEAL == TWIN_RESEAL
    os.unlink(srv.region)
    srv.args = ["--runtime=redo", "--fast-restart"]
    srv.start(wait=False)
    assert srv.wait_exit(timeout=5) == 64
    assert "--fast-restart is for a twin region" in srv.stderr_text()
    assert not os.path.exists(srv.region)
