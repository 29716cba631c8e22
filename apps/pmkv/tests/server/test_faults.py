"""A disk that fails. With the commit's sync failing (fdatasync and msync
fail with EIO through an LD_PRELOAD library, faultsync.c, while a flag
file exists), a write gets Redis's MISCONF error and is not acknowledged.
From then on the region's memory is unknown until it is opened again
(store.c S11), so every command that reads the table gets the same error
(before, reads saw the failed write, and a group's INCR, run again after
its group failed, was applied twice); the server stays up, answers PING
and INFO, and INFO counts the failures. Restarted on a sound disk, every
acknowledged write is there and writes are taken again. Run on the two
disk backends whatever the suite's PMKV_ARGS."""
import os

import pytest
import redis

from kvserver import Server


@pytest.fixture
def fault_lib():
    lib = os.environ.get("PMKV_FAULT_LIB")
    if not lib or not os.path.exists(lib):
        pytest.skip("PMKV_FAULT_LIB is not set to faultsync's library")
    return lib


@pytest.mark.parametrize("backend", ["journal", "file"])
def test_a_failed_commit_is_refused_and_nothing_committed_is_lost(
        pmkv_bin, tmp_path, fault_lib, backend, monkeypatch):
    flag = tmp_path / "disk-fails"
    monkeypatch.setenv("PMKV_FAULT_FLAG", str(flag))
    monkeypatch.setenv("LD_PRELOAD", fault_lib)
    flags = ("--backend", backend, "--maxmemory", "32mb")
    s = Server(pmkv_bin, str(tmp_path), *flags).start()
    monkeypatch.delenv("LD_PRELOAD")  # this process's children: no
    r = redis.Redis(port=s.port, socket_timeout=10)
    try:
        assert r.set("a", "1") and r.set("n", "10")
        assert r.info("persistence")["pmkv_write_errors"] == 0
        flag.touch()
        for cmd in (("SET", "b", "2"), ("INCR", "n"), ("DEL", "a"),
                    ("GET", "a"), ("GET", "n"), ("MGET", "a", "b"),
                    ("KEYS", "*"), ("SCAN", "0")):
            with pytest.raises(redis.ResponseError) as e:
                r.execute_command(*cmd)
            assert str(e.value).startswith(
                "MISCONF Errors writing to the region: persist barrier "
                "failed (I/O error)"), cmd
        flag.unlink()  # a sound disk again: the store stays refused
        with pytest.raises(redis.ResponseError, match="^MISCONF"):
            r.get("a")
        assert r.ping()
        assert r.info("persistence")["pmkv_write_errors"] == 9
        assert "a commit failed" in s.log_text()
    finally:
        r.close()
        s.kill()
    s2 = Server(pmkv_bin, str(tmp_path), *flags, port=s.port,
                region=s.region).start()
    r = redis.Redis(port=s2.port, socket_timeout=10)
    try:
        # acknowledged: a and n; refused: b, INCR and DEL, whose outcome
        # a client cannot know (as for a request in flight at a crash)
        assert r.get("a") in (b"1", None)
        assert r.get("n") in (b"10", b"11")
        assert r.get("b") in (b"2", None)
        assert r.set("c", "3") and r.get("c") == b"3"
        assert r.info("persistence")["pmkv_write_errors"] == 0
    finally:
        r.close()
        s2.kill()
