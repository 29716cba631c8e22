# SPDX-License-Identifier: BSD-3-Clause
"""The connection and server commands and the configuration
(cmd_server.c, conf.c, info.c): AUTH, HELLO, RESET, ACL, CLIENT, CONFIG,
TIME, LASTSAVE, SAVE, BGSAVE, INFO; requirepass, protected mode, the idle
timeout, a redis.conf given first on the command line.

Against Redis 7.0 byte for byte where the replies are deterministic
(test_differential's pair: the same requests to both; HELLO's client id
masked, CONFIG GET's pairs compared as a set, since Redis's order is its
hash table's), with and without a password (a second Redis started with
--requirepass), and protected mode the same way: Redis 7.0 takes only
127.0.0.1, ::1 and its unix socket as local, so a client whose address is
127.0.0.2 (still loopback, nothing leaves the host) is refused by both.
Then pmkv on its own: CLIENT LIST and KILL, the timeout, CONFIG SET's
effects, the configuration file, INFO's sections.

The tests of the connection layer (KILL, the timeout, protected mode,
NOAUTH in a pipeline) run in every runtime's suite, where the event loops
(--io-threads) serve the connections too; the rest are 'features'.
"""
import os
import shutil
import socket
import subprocess
import time

import pytest
import redis

from kvserver import Server, free_port, wait_until
from rawresp import Conn, RedisServer, encode, parse
from test_differential import b, pair, redis_server  # noqa: F401

features = pytest.mark.features

PASSWORD = "sekrit"


# ---- comparing with Redis -------------------------------------------

def normal(req, raw):
    """A reply as compared: HELLO's id masked, CONFIG GET's pairs a set."""
    v = parse(raw)
    name = req[0].lower()
    if name == b"hello" and isinstance(v, list):
        return [0 if v[i - 1] == b"id" else x for i, x in enumerate(v)]
    if (name == b"config" and len(req) > 1 and req[1].lower() == b"get"
            and isinstance(v, list)):
        return sorted(zip(v[0::2], v[1::2]))
    return raw


def same(ours, theirs, reqs):
    """Send reqs one by one to both connections; each reply must agree."""
    for req in reqs:
        a = ours.send([req])[0]
        c = theirs.send([req])[0]
        assert normal(req, a) == normal(req, c), (
            "%r:\n  pmkv:  %r\n  redis: %r" % (req, a, c))


def lines(text):
    """A list of requests, one a line, split as a shell would."""
    import shlex
    return [b(*shlex.split(l)) for l in text.strip().splitlines()
            if l.strip() and not l.startswith("#")]


# Every request here leaves the servers as it found them, or the case
# puts them back: the pair's servers are the module's.
CASES = lines("""
AUTH
AUTH x
AUTH default x
AUTH a b c
AUTH nobody x
ACL
ACL nosuch
ACL WHOAMI
ACL whoami x
ACL USERS
CLIENT
CLIENT nosuch
CLIENT SETNAME
CLIENT SETNAME a b
CLIENT SETNAME "a b"
CLIENT SETNAME "a\\nb"
CLIENT GETNAME
CLIENT SETNAME conn1
CLIENT GETNAME
CLIENT SETNAME ""
CLIENT GETNAME
CLIENT GETNAME x
CLIENT ID x
CLIENT INFO x
CLIENT NO-EVICT
CLIENT NO-EVICT maybe
CLIENT NO-EVICT on
CLIENT NO-EVICT OFF
CLIENT KILL
CLIENT KILL 1.2.3.4:5
CLIENT KILL id
CLIENT KILL ID x
CLIENT KILL ID 0
CLIENT KILL ID -1
CLIENT KILL ID 99999
CLIENT KILL ADDR 1.2.3.4:5
CLIENT KILL LADDR 1.2.3.4:5
CLIENT KILL nosuch x
CLIENT KILL TYPE nosuch
CLIENT KILL TYPE master
CLIENT KILL TYPE replica SKIPME no
CLIENT KILL TYPE normal SKIPME maybe
CLIENT KILL USER nobody
CLIENT KILL USER default ID 99999
CLIENT KILL ID 5 TYPE
CLIENT KILL MAXAGE 10
CLIENT LIST TYPE nosuch
CLIENT LIST TYPE master
CLIENT LIST TYPE pubsub
CLIENT LIST ID x
CLIENT LIST ID 99999
CLIENT LIST ID
CLIENT LIST nosuch
CLIENT SETINFO lib-name x
HELLO 1
HELLO 4
HELLO x
HELLO 2 nosuch
HELLO 2 AUTH a
HELLO 2 SETNAME "a b"
HELLO 2 AUTH nobody x
HELLO
HELLO 2
HELLO 2 AUTH default anything SETNAME named
CLIENT GETNAME
TIME x
LASTSAVE x
SAVE x
BGSAVE x
BGSAVE a b
CONFIG
CONFIG nosuch
CONFIG GET
CONFIG SET
CONFIG SET timeout
CONFIG SET nosuch 1
CONFIG SET timeout x
CONFIG SET timeout -1
CONFIG SET timeout 99999999999
CONFIG SET timeout " 5"
CONFIG SET timeout 5x
CONFIG SET timeout +5
CONFIG SET timeout 010
CONFIG SET timeout 1 timeout 2
CONFIG SET hz 1 HZ 2
CONFIG SET timeout 1 hz
CONFIG SET timeout 5 nosuch 1
CONFIG SET timeout x nosuch 1
CONFIG SET timeout 5 maxmemory-policy nope
CONFIG GET timeout
CONFIG SET maxmemory-policy nope
CONFIG SET protected-mode maybe
CONFIG SET maxclients 0
CONFIG SET maxclients x
CONFIG SET hz -1
CONFIG SET hz 1000
CONFIG GET hz
CONFIG SET hz 0
CONFIG GET hz
CONFIG SET hz 10
CONFIG SET TIMEOUT 7 maxmemory-policy ALLKEYS-LRU
CONFIG GET timeout maxmemory-policy
CONFIG GET TIMEOUT
CONFIG GET timeout TIMEOUT
CONFIG GET Time*
CONFIG GET maxmemory-pol*
CONFIG GET nosuch
CONFIG SET timeout 0 maxmemory-policy noeviction
CONFIG SET maxclients 10001
CONFIG GET maxclients
CONFIG SET maxclients 10000
CONFIG SET protected-mode NO
CONFIG GET protected-mode
CONFIG SET protected-mode yes
CONFIG GET protected-mode
CONFIG SET requirepass "a b"
CONFIG GET requirepass
CONFIG SET requirepass ""
CONFIG GET requirepass
CONFIG GET databases save appendonly
CONFIG RESETSTAT x
CONFIG RESETSTAT
CONFIG REWRITE x
CONFIG REWRITE
# RESET: out of MULTI, database 0, no name, no WATCH
SELECT 3
SET k v
CLIENT SETNAME x
CLIENT NO-EVICT on
WATCH k
MULTI
SET k w
RESET
EXEC
GET k
CLIENT GETNAME
SELECT 3
GET k
DEL k
RESET x
RESET
PING
""")


@features
def test_against_redis(pair):  # noqa: F811
    same(pair.ours, pair.theirs, CASES)


class PasswordRedis(RedisServer):
    def argv(self):
        return super().argv() + ["--requirepass", PASSWORD]


@pytest.fixture
def password_pair(make_server, tmp_path):
    s = make_server("--requirepass", PASSWORD)
    (tmp_path / "redis").mkdir()
    r = PasswordRedis(str(tmp_path / "redis"))
    r.start()
    ours, theirs = Conn(s.port), Conn(r.port)
    yield ours, theirs
    ours.close()
    theirs.close()
    r.kill()


AUTH_CASES = lines("""
PING
NOSUCH x
GET
GET k
SET k v
CLIENT nosuch
CLIENT SETNAME
CLIENT SETNAME a b
CLIENT ID
CLIENT LIST
CONFIG nosuch
CONFIG GET
CONFIG GET timeout
ACL nosuch
ACL WHOAMI x
ACL WHOAMI
SELECT 1
MULTI
EXEC
DISCARD
RESET x
AUTH
AUTH a b c
AUTH wrong
AUTH default wrong
AUTH nobody sekrit
HELLO
HELLO 2
HELLO 2 AUTH default wrong
HELLO 4 AUTH default sekrit
HELLO 2 SETNAME "a b" AUTH default sekrit
HELLO 2 SETNAME nm
PING
RESET
AUTH sekrit
GET k
ACL WHOAMI
RESET
PING
AUTH default sekrit
AUTH wrong
PING
HELLO 2 AUTH default sekrit AUTH default wrong
PING
RESET
HELLO 2 AUTH default sekrit SETNAME nm
CLIENT GETNAME
CONFIG GET requirepass
CONFIG SET requirepass ""
AUTH x
AUTH default x
RESET
PING
HELLO
CONFIG SET requirepass sekrit
PING
RESET
PING
AUTH default sekrit
""")


@features
def test_auth_against_redis(password_pair):
    ours, theirs = password_pair
    same(ours, theirs, AUTH_CASES)


# ---- AUTH and requirepass ------------------------------------------

def test_noauth_in_a_pipeline(make_server):
    """Writes pipelined before AUTH (which may run in a group commit) are
    each refused, and none is applied."""
    s = make_server("--requirepass", PASSWORD)
    c = Conn(s.port)
    reqs = [b("SET", "k%d" % i, "v") for i in range(200)]
    assert set(c.send(reqs)) == {b"-NOAUTH Authentication required.\r\n"}
    assert c.send([b("AUTH", PASSWORD), b("DBSIZE")]) == [b"+OK\r\n",
                                                          b":0\r\n"]
    assert set(c.send(reqs)) == {b"+OK\r\n"}
    c.close()


@features
def test_requirepass(make_server):
    s = make_server("--requirepass", PASSWORD)
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=s.port).ping()
    with pytest.raises(redis.ResponseError, match="WRONGPASS"):
        redis.Redis(port=s.port, password="wrong").ping()
    c = redis.Redis(port=s.port, password=PASSWORD)
    assert c.ping() and c.set("k", "v")
    assert redis.Redis(port=s.port, username="default",
                       password=PASSWORD).get("k") == b"v"
    # taken away: a new client needs nothing; set again: a client that
    # connected meanwhile stays authenticated, a new one does not
    c.config_set("requirepass", "")
    free = redis.Redis(port=s.port)
    assert free.get("k") == b"v"
    c.config_set("requirepass", "other")
    assert free.get("k") == b"v"
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=s.port).get("k")
    assert redis.Redis(port=s.port, password="other").get("k") == b"v"


# ---- protected mode ---------------------------------------------------

def from_addr(src, port, data, read_for=2.0):
    """Connect to 127.0.0.1:port from the address src, send data, and read
    until the server closes or read_for seconds pass."""
    with socket.socket() as s:
        s.bind((src, 0))
        s.settimeout(read_for)
        s.connect(("127.0.0.1", port))
        s.sendall(data)
        out = b""
        end = time.monotonic() + read_for
        while time.monotonic() < end:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
        return out


def test_protected_mode_against_redis(make_server, redis_server):  # noqa
    """No password, protected mode on (the default): a client from
    127.0.0.2 gets Redis's DENIED text from both servers, and nothing
    else; one from 127.0.0.1 is served."""
    s = make_server()
    ping = encode(b("PING"))
    ours = from_addr("127.0.0.2", s.port, ping)
    theirs = from_addr("127.0.0.2", redis_server.port, ping)
    assert ours.startswith(b"-DENIED Redis is running in protected mode")
    assert ours == theirs
    assert from_addr("127.0.0.1", s.port, ping, 0.5) == b"+PONG\r\n"
    c = redis.Redis(port=s.port)
    assert c.info("stats")["rejected_connections"] == 1


def test_protected_mode_off_or_password(make_server, tmp_path):
    ping = encode(b("PING"))
    s = make_server("--protected-mode", "no", region=str(tmp_path / "a"))
    assert from_addr("127.0.0.2", s.port, ping, 0.5) == b"+PONG\r\n"
    s = make_server("--requirepass", PASSWORD, region=str(tmp_path / "b"))
    assert from_addr("127.0.0.2", s.port, ping, 0.5) == (
        b"-NOAUTH Authentication required.\r\n")
    # at run time: off, then on again
    s = make_server(region=str(tmp_path / "c"))
    c = redis.Redis(port=s.port)
    c.config_set("protected-mode", "no")
    assert from_addr("127.0.0.2", s.port, ping, 0.5) == b"+PONG\r\n"
    c.config_set("protected-mode", "yes")
    assert from_addr("127.0.0.2", s.port, ping).startswith(b"-DENIED")
    # the unix socket is local
    u = redis.Redis(unix_socket_path=s.unixsocket)
    assert u.ping()


# ---- CLIENT ------------------------------------------------------------

def fields(line):
    return dict(kv.split("=", 1) for kv in line.split(" "))


@features
def test_client_list_and_info(server):
    a = redis.Redis(port=server.port, client_name="alpha")
    bb = redis.Redis(port=server.port)
    ida, idb = a.client_id(), bb.client_id()
    assert ida != idb and ida > 0 and idb > 0
    bb.execute_command("SELECT", "5")
    bb.execute_command("MULTI")  # raw: redis-py's pipeline would wait
    bb.execute_command("SET", "x", "1")
    raw = a.execute_command("CLIENT", "LIST").decode()
    assert raw.endswith("\n")
    rows = {int(fields(l)["id"]): fields(l) for l in raw.splitlines()}
    me, other = rows[ida], rows[idb]
    assert me["name"] == "alpha" and me["cmd"] == "client|list"
    assert me["flags"] == "N" and me["db"] == "0" and me["multi"] == "-1"
    assert other["name"] == "" and other["db"] == "5"
    assert other["flags"] == "x" and other["multi"] == "1"
    assert other["cmd"] == "set"
    for f in ("addr", "laddr", "fd", "age", "idle", "qbuf", "qbuf-free",
              "user", "redir", "resp"):
        assert f in me, f
    assert me["laddr"] == "127.0.0.1:%d" % server.port
    assert other["addr"].startswith("127.0.0.1:")
    info = fields(a.execute_command("CLIENT", "INFO").decode().strip())
    assert info["id"] == str(ida) and info["cmd"] == "client|info"
    only = a.execute_command("CLIENT", "LIST", "ID", idb, 99999, idb)
    assert [int(fields(l)["id"]) for l in only.decode().splitlines()] == [
        idb, idb]
    bb.execute_command("DISCARD")
    u = redis.Redis(unix_socket_path=server.unixsocket)
    row = fields(u.execute_command("CLIENT", "INFO").decode().strip())
    assert row["flags"] == "U" and row["addr"] == server.unixsocket + ":0"
    a.execute_command("CLIENT", "NO-EVICT", "on")
    assert fields(a.execute_command("CLIENT", "INFO").decode()
                  .strip())["flags"] == "e"


def closed(sock, timeout=10.0):
    """Does the server close sock within timeout seconds?"""
    sock.settimeout(timeout)
    try:
        return sock.recv(100) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


@pytest.mark.parametrize("by", ["id", "addr", "old", "self"])
def test_client_kill_closes_the_connection(make_server, by):
    s = make_server()
    killer = Conn(s.port)
    victim = Conn(s.port)
    vid = parse(victim.send([b("CLIENT", "ID")])[0])
    row = victim.send([b("CLIENT", "INFO")])[0]
    addr = fields(parse(row).decode().strip())["addr"]
    if by == "self":
        assert victim.send([b("CLIENT", "KILL", addr)]) == [b"+OK\r\n"]
        assert closed(victim.sock)
        return
    req = {"id": b("CLIENT", "KILL", "ID", str(vid)),
           "addr": b("CLIENT", "KILL", "ADDR", addr),
           "old": b("CLIENT", "KILL", addr)}[by]
    assert killer.send([req]) == [b"+OK\r\n" if by == "old" else b":1\r\n"]
    assert closed(victim.sock)
    # gone from the list, and not killed twice; the killer is served
    assert killer.send([req]) == [b"-ERR No such client\r\n" if by == "old"
                                  else b":0\r\n"]
    listed = parse(killer.send([b("CLIENT", "LIST")])[0]).decode()
    assert "id=%d " % vid not in listed
    assert killer.send([b("PING")]) == [b"+PONG\r\n"]
    assert wait_until(lambda: parse(killer.send([b("CLIENT", "LIST")])[0])
                      .count(b"\n") == 1, 10)  # the victim's thread ended
    # skipme: the killer's own filter does not close it, unless SKIPME no
    assert killer.send([b("CLIENT", "KILL", "USER", "default")]) == [b":0\r\n"]
    assert killer.send([b("CLIENT", "KILL", "USER", "default", "SKIPME",
                          "no")]) == [b":1\r\n"]
    assert closed(killer.sock)


# ---- the idle timeout ---------------------------------------------------

def test_timeout_closes_an_idle_client(make_server):
    s = make_server("--timeout", "1")
    idle = socket.create_connection(("127.0.0.1", s.port), 5)
    busy = redis.Redis(port=s.port, socket_timeout=5)
    busy.ping()
    # busy keeps sending (every 0.2 s) while idle waits to be closed
    end = time.monotonic() + 15
    idle.settimeout(0.2)
    gone = False
    while not gone and time.monotonic() < end:
        busy.ping()
        try:
            gone = idle.recv(100) == b""
        except socket.timeout:
            pass
    assert gone, "the idle client was not closed"
    assert busy.ping()
    # set at run time: 0 keeps an idle client
    busy.config_set("timeout", "0")
    again = socket.create_connection(("127.0.0.1", s.port), 5)
    assert not closed(again, 2.5)
    again.close()


# ---- CONFIG -------------------------------------------------------------

@features
def test_config_set_then_get(make_server):
    s = make_server()
    c = redis.Redis(port=s.port, decode_responses=True)
    assert c.config_set("timeout", 30)
    c.execute_command("CONFIG", "SET", "hz", "50", "maxclients", "500",
                      "maxmemory-policy", "allkeys-lfu")
    got = c.config_get("*")
    assert got["timeout"] == "30" and got["hz"] == "50"
    assert got["maxclients"] == "500"
    assert got["maxmemory-policy"] == "allkeys-lfu"
    assert c.info("server")["hz"] == 50
    assert c.info("clients")["maxclients"] == 500
    assert c.info("memory")["maxmemory_policy"] == "allkeys-lfu"
    # all or nothing: the second value is bad, the first is not applied
    with pytest.raises(redis.ResponseError) as e:
        c.execute_command("CONFIG", "SET", "timeout", "40", "hz", "x")
    assert "argument 'hz'" in str(e.value)
    assert c.config_get("timeout") == {"timeout": "30"}
    # what cannot change while pmkv runs
    for name, value in (("port", "1"), ("bind", "127.0.0.1"),
                        ("maxmemory", "1gb"), ("dir", "/tmp"),
                        ("io-threads", "2")):
        with pytest.raises(redis.ResponseError) as e:
            c.config_set(name, value)
        assert "can't set immutable config" in str(e.value)
    assert got["port"] == str(s.port)
    assert got["unixsocket"] == s.unixsocket
    assert got["dir"] == os.path.dirname(os.path.abspath(s.region))
    assert got["dbfilename"] == os.path.basename(s.region)
    assert int(got["maxmemory"]) == c.info("memory")["maxmemory"]
    # maxclients lower than the clients connected: new ones are refused
    c.config_set("maxclients", 1)
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=s.port).ping()
    c.config_set("maxclients", 10000)
    assert redis.Redis(port=s.port).ping()


@features
def test_config_resetstat(server):
    c = redis.Redis(port=server.port)
    c.ping()
    c.config_resetstat()
    assert c.info("stats")["total_commands_processed"] == 1


# ---- redis.conf -----------------------------------------------------------

class ConfServer(Server):
    """pmkv started with a configuration file first, then flags."""

    def __init__(self, binary, workdir, conf, *flags, region=True):
        super().__init__(binary, workdir, *flags)
        self.conf = conf
        self.with_region = region

    def argv(self):
        a = [self.binary, self.conf, "--port", str(self.port)]
        return a + (["--region", self.region] if self.with_region
                    else []) + self.flags


def run_pmkv(pmkv_bin, *args):
    return subprocess.run([pmkv_bin] + list(args), capture_output=True,
                          text=True, timeout=30)


@features
def test_conf_file(pmkv_bin, tmp_path):
    sock = tmp_path / "conf.sock"
    conf = tmp_path / "redis.conf"
    conf.write_text(
        "# a comment, then blank lines\n\n   \n"
        "bind 127.0.0.1 -::1\n"
        "port 1\n"               # the flag after the file wins
        "unixsocket %s\n"
        "unixsocketperm 700\n"
        "requirepass \"two words\"\n"
        "maxclients 77\n"
        "TIMEOUT 300\n"
        "hz 20\n"
        "protected-mode no\n"
        "maxmemory-policy allkeys-lru\n"
        "io-threads 0\n"
        "dir %s\n"
        "dbfilename data.region\n"
        "save 900 1\n"           # Redis's, not pmkv's: named, skipped
        "appendonly no\n" % (sock, tmp_path))
    s = ConfServer(pmkv_bin, str(tmp_path), str(conf), "--timeout", "301",
                   region=False)
    s.start()
    try:
        c = redis.Redis(port=s.port, password="two words",
                        decode_responses=True)
        got = c.config_get("*")
        assert got["timeout"] == "301" and got["hz"] == "20"
        assert got["maxclients"] == "77"
        assert got["protected-mode"] == "no"
        assert got["maxmemory-policy"] == "allkeys-lru"
        assert got["requirepass"] == "two words"
        assert got["unixsocket"] == str(sock)
        assert got["unixsocketperm"] == "700"
        assert got["bind"] == "127.0.0.1 -::1"
        assert got["port"] == str(s.port)
        assert got["dir"] == str(tmp_path)
        assert got["dbfilename"] == "data.region"
        assert (tmp_path / "data.region").exists()
        assert oct(os.stat(sock).st_mode & 0o777) == "0o700"
        assert c.info("server")["config_file"] == str(conf)
        c.set("k", "v")
        log = s.log_text()
        assert "line 17: directive 'save' is not one pmkv has" in log
        assert "line 18: directive 'appendonly' is not one pmkv" in log
        # CONFIG REWRITE: the file anew, its other lines kept
        c.config_set("timeout", 42)
        c.config_set("maxmemory-policy", "volatile-ttl")
        assert c.config_rewrite()
        text = conf.read_text()
        assert "timeout 42\n" in text and "TIMEOUT" not in text
        assert "maxmemory-policy volatile-ttl\n" in text
        assert "requirepass \"two words\"\n" in text
        assert "# a comment, then blank lines\n" in text
        assert "dbfilename data.region\n" in text
    finally:
        s.kill()
    s = ConfServer(pmkv_bin, str(tmp_path), str(conf), region=False)
    s.start()
    try:
        c = redis.Redis(port=s.port, password="two words",
                        decode_responses=True)
        assert c.config_get("timeout") == {"timeout": "42"}
        assert c.get("k") == "v"  # the same region, dir/dbfilename
    finally:
        s.kill()


@features
@pytest.mark.parametrize("line,why", [
    ("port abc", "argument couldn't be parsed into an integer"),
    ("port 70000", "argument must be between 0 and 65535 inclusive"),
    ("timeout", "wrong number of arguments"),
    ("hz 1 2", "wrong number of arguments"),
    ("requirepass \"open", "unbalanced quotes"),
    ("maxmemory-policy lots", "must be one of the following"),
    ("protected-mode maybe", "argument must be 'yes' or 'no'"),
    ("maxmemory 1.5gb", "argument must be a memory value"),
    ("dir /nonexistent/pmkv", "No such file or directory"),
    ("dbfilename a/b", "dbfilename can't be a path, just a filename"),
])
def test_conf_file_errors(pmkv_bin, tmp_path, line, why):
    conf = tmp_path / "bad.conf"
    conf.write_text("# ok\nhz 10\n%s\n" % line)
    p = run_pmkv(pmkv_bin, str(conf), "--port", str(free_port()),
                 "--region", str(tmp_path / "r"))
    assert p.returncode == 1, p.stderr
    assert "%s, line 3" % conf in p.stderr and why in p.stderr, p.stderr
    assert not (tmp_path / "r").exists()


@features
def test_conf_file_missing_and_flags(pmkv_bin, tmp_path):
    p = run_pmkv(pmkv_bin, str(tmp_path / "none.conf"))
    assert p.returncode == 1 and "none.conf" in p.stderr
    # the directives are flags too, checked the same way
    for flag, value in (("--timeout", "-1"), ("--protected-mode", "x"),
                        ("--dbfilename", "a/b"), ("--nosuch", "1")):
        p = run_pmkv(pmkv_bin, flag, value, "--port", "0", "--region",
                     str(tmp_path / "r"))
        assert p.returncode == 2 and "usage" in p.stderr, (flag, p.stderr)


@features
def test_config_rewrite_without_a_file(server):
    c = redis.Redis(port=server.port)
    with pytest.raises(redis.ResponseError) as e:
        c.config_rewrite()
    assert str(e.value) == "The server is running without a config file"


# ---- HELLO, TIME, LASTSAVE, SAVE, BGSAVE, INFO, COMMAND ----------------

@features
def test_hello_time_save(server):
    c = Conn(server.port)
    hello = parse(c.send([b("HELLO", "2")])[0])
    me = parse(c.send([b("CLIENT", "ID")])[0])
    assert hello == [b"server", b"redis", b"version", b"7.0.15", b"proto", 2,
                     b"id", me, b"mode", b"standalone", b"role", b"master",
                     b"modules", []]
    assert c.send([b("HELLO", "3")]) == [
        b"-NOPROTO unsupported protocol version\r\n"]
    sec, usec = parse(c.send([b("TIME")])[0])
    assert abs(int(sec) - time.time()) < 60 and 0 <= int(usec) < 1000000
    assert abs(parse(c.send([b("LASTSAVE")])[0]) - time.time()) < 60
    assert c.send([b("SAVE"), b("BGSAVE"), b("BGSAVE", "SCHEDULE")]) == [
        b"+OK\r\n"] * 3
    c.close()


@features
def test_info_sections(server):
    c = redis.Redis(port=server.port)
    raw = Conn(server.port)
    text = parse(raw.send([b("INFO")])[0]).decode()
    heads = [l for l in text.split("\r\n") if l.startswith("#")]
    assert heads == ["# Server", "# Clients", "# Memory", "# Persistence",
                     "# Stats", "# Replication", "# CPU", "# Modules",
                     "# Cluster", "# Keyspace"]
    info = c.info("everything")
    for field in ("redis_version", "run_id", "tcp_port", "uptime_in_seconds",
                  "hz", "config_file", "connected_clients", "maxclients",
                  "used_memory", "used_memory_human", "used_memory_rss",
                  "maxmemory", "maxmemory_policy", "total_system_memory",
                  "rdb_last_save_time", "rdb_changes_since_last_save",
                  "aof_enabled", "total_commands_processed", "expired_keys",
                  "role", "connected_slaves", "master_replid",
                  "used_cpu_sys", "used_cpu_user", "cluster_enabled"):
        assert field in info, field
    assert info["redis_version"] == "7.0.15" and info["role"] == "master"
    assert info["connected_slaves"] == 0 and info["cluster_enabled"] == 0
    assert info["used_memory"] > 0 and info["maxmemory"] >= info["used_memory"]
    two = parse(raw.send([b("INFO", "server", "CPU")])[0]).decode()
    assert two.startswith("# Server\r\n") and "\r\n\r\n# CPU\r\n" in two
    assert "# Clients" not in two
    assert raw.send([b("INFO", "nosuch")]) == [b"$0\r\n\r\n"]
    raw.close()


@features
def test_command_knows_them(server):
    raw = Conn(server.port)
    got = parse(raw.send([b("COMMAND", "INFO", "hello", "TIME", "auth",
                            "client", "config", "acl", "reset")])[0])
    assert [e[:2] for e in got] == [
        [b"hello", -1], [b"time", 1], [b"auth", -2], [b"client", -2],
        [b"config", -2], [b"acl", -2], [b"reset", 1]]
    assert got[0][2] == [b"noscript", b"loading", b"stale", b"fast",
                         b"no_auth", b"allow_busy"]
    raw.close()


@features
@pytest.mark.skipif(not shutil.which("redis-cli"), reason="no redis-cli")
def test_redis_cli_help(server):
    """COMMAND DOCS is refused (pmkv has no documentation to give): then
    redis-cli takes its own for its help and hints. An empty reply would
    leave it none (it printed nothing for HELP SET)."""
    raw = Conn(server.port)
    assert raw.send([b("COMMAND", "DOCS")]) == [
        b"-ERR unknown subcommand 'DOCS'. Try COMMAND HELP.\r\n"]
    raw.close()
    out = subprocess.run(["redis-cli", "-p", str(server.port), "help",
                          "set"], capture_output=True, timeout=30).stdout
    assert b"Set the string value of a key" in out, out
