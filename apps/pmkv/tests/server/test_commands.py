# SPDX-License-Identifier: BSD-3-Clause
"""Every command through the Python redis client (python3-redis): replies,
Redis's error texts, binary keys and values, and the value limit."""
import subprocess
import time

import pytest
import redis

from kvserver import raw


def error_of(client, *command):
    """The error text the server answers command with (it must answer
    one)."""
    with pytest.raises(redis.ResponseError) as e:
        client.execute_command(*command)
    return str(e.value)


def test_ping_echo(r, server):
    assert r.ping() is True
    assert r.echo(b"a\r\nb\x00") == b"a\r\nb\x00"
    assert raw(server.port, b"PING hi\r\nPING\r\n", 0.3) == (
        b"$2\r\nhi\r\n+PONG\r\n")


def test_get_set(r):
    assert r.get("k") is None
    assert r.set("k", "v") is True
    assert r.get("k") == b"v"
    assert r.set("k", "w" * 1000) is True
    assert r.get("k") == b"w" * 1000
    assert r.set("k", "") is True
    assert r.get("k") == b""


def test_set_nx_xx_get(r):
    assert r.set("k", "1", nx=True) is True
    assert r.set("k", "2", nx=True) is None
    assert r.get("k") == b"1"
    assert r.set("other", "x", xx=True) is None
    assert r.exists("other") == 0
    assert r.set("k", "3", xx=True) is True
    assert r.set("k", "4", get=True) == b"3"
    assert r.set("new", "1", get=True) is None
    assert r.get("new") == b"1"


def test_set_expiry(r):
    r.set("k", "v", ex=100)
    assert 90 <= r.ttl("k") <= 100  # bounds loose enough for a busy CI
    r.set("k", "v", px=5000)
    assert 0 < r.pttl("k") <= 5000
    r.set("k", "v", px=50)
    time.sleep(0.2)
    assert r.get("k") is None
    assert r.exists("k") == 0
    assert r.ttl("k") == -2
    r.set("p", "v")
    assert r.ttl("p") == -1
    r.set("p", "v", exat=int(time.time()) + 100)
    assert 90 <= r.ttl("p") <= 100
    r.set("p", "w", keepttl=True)
    assert r.ttl("p") > 0
    r.set("p", "w")
    assert r.ttl("p") == -1


@pytest.mark.parametrize("args,err", [
    (["k", "v", "EX", "0"], "invalid expire time in 'set' command"),
    (["k", "v", "EX", "-5"], "invalid expire time in 'set' command"),
    (["k", "v", "EX", "x"], "value is not an integer or out of range"),
    (["k", "v", "NX", "XX"], "syntax error"),
    (["k", "v", "EX", "10", "PX", "10"], "syntax error"),
    (["k", "v", "EX"], "syntax error"),
    (["k", "v", "KEEPTTL", "EX", "5"], "syntax error"),
    (["k", "v", "BOGUS"], "syntax error"),
])
def test_set_errors_store_nothing(r, args, err):
    assert error_of(r, "SET", *args) == err
    assert r.exists("k") == 0


def test_del_exists_mget_mset(r):
    assert r.mset({"a": "1", "b": "2", "c": "3"}) is True
    assert r.mget("a", "x", "c") == [b"1", None, b"3"]
    assert r.exists("a", "b", "a", "x") == 3
    assert r.delete("a", "x", "b") == 2
    assert r.dbsize() == 1
    assert error_of(r, "MSET", "a", "1", "b") == \
        "wrong number of arguments for 'mset' command"
    assert r.exists("a") == 0


def test_incr_decr(r):
    assert r.incr("n") == 1
    assert r.incrby("n", 10) == 11
    assert r.decr("n") == 10
    assert r.decrby("n", 20) == -10
    assert r.get("n") == b"-10"
    r.set("n", "9223372036854775807")
    assert error_of(r, "INCR", "n") == \
        "increment or decrement would overflow"
    assert r.get("n") == b"9223372036854775807"
    r.set("s", "abc")
    for command in (("INCR", "s"), ("INCRBY", "n", "1.5")):
        assert error_of(r, *command) == \
            "value is not an integer or out of range"
    r.set("t", "5", ex=100)
    r.incr("t")
    assert r.ttl("t") > 0  # INCR keeps the expiry


def test_append_strlen(r):
    assert r.append("s", "ab") == 2
    assert r.append("s", "cd") == 4
    assert r.get("s") == b"abcd"
    assert r.append("s", b"x" * 5000) == 5004
    assert r.strlen("s") == 5004
    assert r.strlen("none") == 0


def test_binary_keys_and_values(r):
    keys = [b"\x00", b"\x00\x00", b"a\r\nb", b"\xff\xfe", b" space ",
            bytes(range(256))]
    for i, k in enumerate(keys):
        assert r.set(k, bytes([i]) * 3 + b"\x00\r\n") is True
    for i, k in enumerate(keys):
        assert r.get(k) == bytes([i]) * 3 + b"\x00\r\n"
    assert set(r.keys("*")) == set(keys)
    assert r.delete(*keys) == len(keys)


def test_keys_and_scan(r):
    for i in range(300):
        r.set("user:%d" % i, i)
    r.set("other", 1)
    assert len(r.keys("user:*")) == 300
    assert r.keys("user:1?") == [] or all(
        len(k) == 7 for k in r.keys("user:1?"))
    assert sorted(r.keys("user:1[0-2]")) == [b"user:10", b"user:11",
                                             b"user:12"]
    assert r.keys("nomatch*") == []
    seen = set()
    cur = 0
    steps = 0
    while True:
        cur, ks = r.scan(cur, match="user:*", count=25)
        seen.update(ks)
        steps += 1
        if cur == 0:
            break
    assert len(seen) == 300 and steps > 3
    assert set(r.scan_iter(count=1000)) == seen | {b"other"}


def test_dbsize_flushall(r):
    for i in range(1000):
        r.set(i, i)
    assert r.dbsize() == 1000
    assert r.flushall() is True
    assert r.dbsize() == 0
    assert r.get(1) is None
    r.set("a", 1)
    assert r.flushdb() is True
    assert r.dbsize() == 0


def test_info_sections(r):
    r.set("a", 1)
    info = r.info()
    assert info["redis_mode"] == "standalone"
    assert info["db0"]["keys"] == 1
    assert info["pmkv_every_write_durable"] == 1
    assert info["loading"] == 0
    pers = r.info("persistence")
    assert "pmkv_runtime" in pers and "redis_version" not in pers
    assert pers["pmkv_store_version"] in ("opt", "wrapped")
    assert "db0" in r.info("keyspace")


def test_command(r, server):
    n = r.command_count()
    table = r.command()
    assert len(table) == n
    for c in ("get", "set", "del", "incr", "scan", "shutdown"):
        assert c in table
    assert table["get"]["arity"] == 2 and table["set"]["arity"] == -3
    assert raw(server.port, b"COMMAND INFO get nosuch\r\n", 0.3) == (
        b"*2\r\n*6\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n"
        b"+fast\r\n:1\r\n:1\r\n:1\r\n$-1\r\n")


def test_names_are_found_in_any_case_and_only_whole(r):
    """Every command of COMMAND's table in mixed case is a command (an
    arity error at worst); a name with a letter too many or too few, or
    with a control byte in place of a letter, is not."""
    def unknown(*args):
        try:
            r.execute_command(*args)
        except redis.ResponseError as e:
            return str(e).startswith("unknown command")
        return False
    names = [n for n in r.command() if n not in (
        "shutdown", "quit", "flushall", "flushdb", "multi", "reset",
        "swapdb", "monitor", "debug")]
    assert len(names) > 20
    for name in names:
        mixed = "".join(c.upper() if i % 2 else c
                        for i, c in enumerate(name))
        assert not unknown(mixed), mixed
        assert not unknown(name.upper()), name
        for near in (name + "s", name[:-1]):  # LPUSH and LPUSHX both are
            assert near in names or unknown(near), near
    for bad in (b"GE\x14", b"S\x05T", b"PIN\x07", b"get\x00", b"\x00"):
        assert unknown(bad), bad


def test_unknown_and_arity_errors(r):
    assert error_of(r, "XADD", "h", "*", "v") == (
        "unknown command 'XADD', with args beginning with: 'h' '*' 'v' ")
    assert error_of(r, "GET") == \
        "wrong number of arguments for 'get' command"
    assert error_of(r, "SELECT", "16") == "DB index is out of range"
    assert r.execute_command("SELECT", "0") is True


def test_active_expiry_removes_expired_keys(make_server):
    """Keys whose expiry passed are removed by the server itself (server.c
    V3), not only when a command meets them: DBSIZE falls to the live keys
    and INFO's expired_keys counts the rest; keys without an expiry, or
    with a later one, stay."""
    s = make_server("--hz", "100")
    c = redis.Redis(port=s.port, socket_timeout=10)
    p = c.pipeline(transaction=False)
    for i in range(500):
        p.set("gone%d" % i, "x", px=50)
    for i in range(100):
        p.set("kept%d" % i, "y")
        p.set("later%d" % i, "z", ex=3600)
    p.execute()
    assert c.dbsize() <= 700
    deadline = time.monotonic() + 20
    while c.dbsize() > 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert c.dbsize() == 200
    assert c.info("stats")["expired_keys"] == 500
    assert c.get("kept7") == b"y" and c.get("later7") == b"z"
    assert 3500 < c.ttl("later7") <= 3600


def test_hz_is_checked(pmkv_bin, tmp_path):
    for bad in ("0", "501", "x"):
        p = subprocess.run([pmkv_bin, "--hz", bad, "--port", "0",
                            "--region", str(tmp_path / "r")],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode != 0 and "usage" in p.stderr


def test_value_limit_stores_nothing(make_server):
    s = make_server("--proto-max-bulk-len", "1kb")
    c = redis.Redis(port=s.port)
    c.set("k", "small")
    c.append("k", b"x" * 600)
    assert error_of(c, "APPEND", "k", b"y" * 600) == \
        "string exceeds maximum allowed size (proto-max-bulk-len)"
    assert c.get("k") == b"small" + b"x" * 600
    c.set("k", "small")
    # beyond the limit, the bulk itself is refused, as Redis refuses one
    # over its proto-max-bulk-len, and the connection closed
    assert error_of(c, "SET", "big", b"x" * 2000) == \
        "Protocol error: invalid bulk length"
    c = redis.Redis(port=s.port)
    assert c.exists("big") == 0 and c.get("k") == b"small"


def test_unix_socket(server):
    c = redis.Redis(unix_socket_path=server.unixsocket)
    assert c.set("u", "1") is True
    assert c.get("u") == b"1"
