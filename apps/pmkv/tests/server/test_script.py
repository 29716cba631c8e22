# SPDX-License-Identifier: BSD-3-Clause
"""EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (script.c).

Against Redis 7.0 byte for byte (test_differential's pair: one connection
to each server, the same requests): Lua to RESP and RESP to Lua, errors
and their replies, pcall, KEYS and ARGV, the script cache, the
protection of the globals, the libraries, read-only scripts, a seeded
random part; a second pair of connections for WATCH; then a busy script
(BUSY, SCRIPT KILL, UNKILLABLE) on pmkv and on a Redis of its own with
the same short time limit; then pmkv's own guarantees, which Redis does
not give: a script is one transaction (after a kill -9 all of it or
none, and a SHUTDOWN NOSAVE or a failed group leaves nothing of it).

Deliberate differences (README): no cjson, struct or cmsgpack;
redis.setresp(3) refused (RESP2 only); redis.REDIS_VERSION is pmkv's
7.0.0; WATCH is BUSY while a script is busy. The differential cases
avoid what is each server's own (table addresses, KEYS' order, INFO).
"""
import os
import random
import shlex
import signal
import socket
import threading
import time

import pytest

from kvserver import wait_until
from rawresp import Conn, RedisServer, encode, parse
from test_differential import Pair, b, pair, redis_server  # noqa: F401
from test_multi import all_or_nothing_after_kill9

pytestmark = pytest.mark.features

LONG = os.environ.get("PMTX_LONG_TESTS") == "1"
EXTRA = shlex.split(os.environ.get("PMKV_ARGS", ""))
WRAPPED = "--wrapped" in EXTRA  # strings only, one database
# A loop thread that runs a script serves none of its other connections
# until the script ends (script.c X3): the busy tests need a thread each.
needs_threads = pytest.mark.skipif(
    "--io-threads" in EXTRA, reason="a busy script blocks its event loop")
KILLS = int(os.environ.get("PMKV_SCRIPT_KILLS", 200 if LONG else 20))
RANDOM = int(os.environ.get("PMKV_SCRIPT_RANDOM", 3000 if LONG else 300))
LIMIT_MS = 200  # the busy tests' lua-time-limit
BUSY = (b"-BUSY Redis is busy running a script. You can only call SCRIPT "
        b"KILL or SHUTDOWN NOSAVE.\r\n")


@pytest.fixture(scope="module", autouse=True)
def _pmkv_has_eval(server):
    """The module runs once cmd.c's table has script.c's commands."""
    c = Conn(server.port)
    try:
        info = parse(c.send([b("COMMAND", "INFO", "eval")])[0])
    finally:
        c.close()
    if info == [None]:
        pytest.skip("EVAL is not in pmkv's command table (cmd.c) yet")


def ev(script, *rest):
    """EVAL script with numkeys and the rest ("0" if nothing given)."""
    return b("EVAL", script, *(rest or ("0",)))


# ---- Lua to RESP -------------------------------------------------------

LUA_TO_RESP = [
    ev("return 1"), ev("return 1.9"), ev("return -1.9"), ev("return 0.5"),
    ev("return -0.5"), ev("return 'x'"), ev("return ''"),
    ev("return '\\255\\0\\1'"), ev("return true"), ev("return false"),
    ev("return nil"), ev("return"), ev("return {}"), ev("return {{}}"),
    ev("return {1,2,nil,3}"), ev("return {1,'a',{2,{3}},false,true}"),
    ev("return {1, false, 3}"), ev("local t = {} t[1]=1 t[3]=3 return t"),
    ev("return {[1]=1,[2]=2,x=3}"), ev("return {ok='fine'}"),
    ev("return {ok='a\\r\\nb\\n'}"), ev("return {ok='a\\0b'}"),
    ev("return {ok=''}"), ev("return {err='bad thing'}"),
    ev("return {err='-X bad thing'}"), ev("return {err='a\\r\\nb\\n'}"),
    ev("return {err=''}"), ev("return {err=5}"), ev("return {ok=5}"),
    ev("return {ok='a', err='b'}"), ev("return {1,2,err='x'}"),
    ev("return {{ok='x'}, {err='e'}, 1}"),
    ev("return {1e20, -1e20, 0/0, 1/0, -1/0}"),
    ev("return 4294967296 * 4294967296"), ev("return 9007199254740993"),
    ev("return -9223372036854775808"), ev("return 9223372036854775807"),
    ev("return function() end"),
    ev("return coroutine.create(function() end)"),
    ev("local t = setmetatable({}, {__index=function(t,k) return k end})"
       " return t"),
    ev("return {double=1.5}"), ev("return {double=0.1}"),
    ev("return {double=1/0}"), ev("return {map={a=1}}"),
    ev("return {set={a=true}}"), ev("return {big_number='12\\r\\n3'}"),
    ev("return {verbatim_string={format='txt', string='hello'}}"),
    ev("local t = {} for i=1,300 do t = {t} end return t"),
    ev("local t = {} for i=1,1000 do t[i] = i * 3 end return t"),
    ev("return unpack({1,2})"), ev("return 1 + '2'"),
]

# ---- RESP to Lua: redis.call's replies ---------------------------------

RESP_TO_LUA = [
    b("SET", "w", "2"),
    ev("return redis.call('get','w')"), ev("return redis.call('incr','w')"),
    ev("return type(redis.call('incr','w'))"),
    ev("return redis.call('get','nosuchkey')"),
    ev("return type(redis.call('get','nosuchkey'))"),
    ev("return redis.call('ping')"), ev("return type(redis.call('ping'))"),
    ev("return redis.call('ping').ok"), ev("return redis.call('ping', 'x')"),
    ev("return redis.call('type','w')"),
    ev("return redis.call('type','w').ok"),
    ev("return redis.call('mget','w','nope','w')"),
    ev("return #redis.call('mget','w','nope','w')"),
    ev("local t = redis.call('mget','w','nope') return type(t[2])"),
    ev("return redis.call('exists','w','w')"),
    ev("return redis.call('ttl','nokey')"),
    ev("return redis.call('echo', 'a\\0b')"),
    ev("return redis.call('echo', 3.0)"),
    ev("return redis.call('echo', -3.25)"),
    ev("return redis.call('echo', 1e100)"),
    ev("return redis.call('echo', 2^63)"),
    ev("redis.call('set', 'n', 0.1) return redis.call('get','n')"),
    ev("redis.call('set', 'n', -0) return redis.call('get','n')"),
    ev("redis.call('set', 'n', 1e300) return redis.call('get','n')"),
    ev("redis.call('set', 'n', 1/0) return redis.call('get','n')"),
    ev("return redis.call('incrby','n2','9007199254740993')"),
    ev("return tostring(redis.call('incrby','n2','1'))"),
    ev("return redis.call('get', 1)"),
    ev("return redis.call('GET', 'w')"), ev("return redis.call('gEt', 'w')"),
    ev("return redis.call('set','k','\\255\\0\\1') and "
       "redis.call('get','k')"),
    ev("return redis.call('dbsize')"),
    ev("local k = redis.call('keys','*') table.sort(k) return k"),
    ev("return redis.call('flushall')"), b("DBSIZE"),
]

# ---- errors ------------------------------------------------------------

ERRORS = [
    b("SET", "s", "x"),
    # EVAL's own arguments
    b("EVAL", "return 1"), b("EVAL"), ev("return #KEYS", "3", "a"),
    ev("return 1", "-1"), ev("return 1", "x"), ev("return 1", "01"),
    ev("return 1", " 1"), ev("return 1", "99999999999999999999"),
    # compiling
    ev("return 'unbalanced"), ev("return )"), ev("end"),
    ev("return 1 end"), ev("#!lua"), ev("#!lua flags=bogus\nreturn 1"),
    ev("#!python\nreturn 1"), ev("#!lua x=1\nreturn 1"),
    ev("#! lua\nreturn 1"), ev("#!\nreturn 1"),
    ev("#!lua name=x\nreturn 1"), ev("#!lua\nreturn 1"),
    ev("#!lua\r\nreturn 1"), ev("#!lua flags=\nreturn 1"),
    ev("#!lua  flags=no-writes \nreturn 1"),
    ev("#!lua flags=allow-stale,allow-cross-slot-keys,no-cluster,"
       "allow-oom\nreturn 1"), ev("#!lua\nerror('x')"),
    # running
    ev("error('boom')"), ev("error({err='boom'})"),
    ev("error({err='ERR boom'})"), ev("error()"), ev("error(12)"),
    ev("error(true)"), ev("error({err=5})"),
    ev("error(redis.error_reply('MYERR bad'))"),
    ev("return assert(false, 'assert msg')"), ev("return assert(false)"),
    ev("return 'a' + 1"), ev("return nil + 1"),
    ev("local t = nil; return t.x"),
    ev("redis.call('set','w9','1') error('x')"), b("GET", "w9"),
    # redis.call's refusals and the commands' own errors
    ev("return redis.call('nosuch')"), ev("return redis.pcall('nosuch')"),
    ev("return redis.call('get')"), ev("return redis.call('GET','a','b')"),
    ev("return redis.call('sEt')"), ev("return redis.call('exists')"),
    ev("return redis.call('echo')"),
    ev("return redis.call('ping', 'a', 'b')"),
    ev("return redis.call('multi')"), ev("return redis.call('exec')"),
    ev("return redis.call('discard')"), ev("return redis.call('watch','x')"),
    ev("return redis.call('unwatch')"),
    ev("return redis.call('eval','return 1','0')"),
    ev("return redis.call('evalsha','x','0')"),
    ev("return redis.call('eval_ro','return 1','0')"),
    ev("return redis.call('evalsha_ro','x','0')"),
    ev("return redis.call('script','exists','x')"),
    ev("return redis.call('script')"), ev("return redis.call('quit')"),
    ev("return redis.call('shutdown')"), ev("return redis.call('client','id')"),
    ev("return redis.call('config','get','save')"),
    ev("return redis.call('subscribe','x')"),
    ev("return redis.call()"), ev("return redis.call({})"),
    ev("return redis.call('set','a',{})"), ev("return redis.call('get', true)"),
    ev("return redis.call('get', nil)"),
    ev("return redis.call('get', 'a', nil)"),
    ev("return redis.call('get', KEYS[5])"),
    ev("return redis.pcall()"), ev("return redis.pcall({})"),
    ev("return redis.call('incr','s')"), ev("return redis.pcall('incr','s')"),
    ev("local t = redis.pcall('incr','s'); return t.err"),
    ev("local t = redis.pcall('nosuchcmd') "
       "return {t.err, t.ignore_error_stats_update}"),
    ev("return redis.call('lpush','s','x')"),
    ev("return redis.pcall('lpush','s','x')"),
    ev("return redis.call('set','k','v','ex','0')"),
    ev("return redis.call('set','k','v','badopt')"),
    ev("return redis.call('set','x','y','get','z')"),
    ev("return redis.pcall('get','x','y')"),
    ev("return redis.pcall('get').err"),
    ev("return {1,2,3,redis.pcall('incr','s')}"),
    ev("return redis.call('select','99')"),
    # pcall (Redis's own: an error table becomes its err string)
    ev("return pcall(function() error('x') end)"),
    ev("local ok, e = pcall(function() error('x') end); return e"),
    ev("local ok, e = pcall(function() redis.call('nosuch') end) return e"),
    ev("return {pcall(error, 'zz')}"), ev("return select('#', pcall(error))"),
    ev("local ok, e = pcall(error, {err='TBL x'}); return e"),
    ev("local ok, e = pcall(error, {foo='x'}); return type(e)"),
    ev("local ok, e = pcall(redis.call, 'nosuch') return {tostring(ok), e}"),
    ev("local a, b = xpcall(function() error('q') end, "
       "function(e) return 'H:' .. e end); return b"),
    ev("local a, b = xpcall(function() redis.call('nosuch') end, "
       "function(e) return type(e) end); return b"),
    # redis.error_reply and redis.status_reply
    ev("return redis.error_reply('My Error')"),
    ev("return redis.error_reply('-My Error')"),
    ev("return redis.error_reply('')"), ev("return redis.error_reply('-')"),
    ev("return redis.error_reply('NOSPACE')"),
    ev("return redis.error_reply('-NOSPACE')"),
    ev("return redis.error_reply('x\\r\\ny ')"),
    ev("return redis.error_reply('a\\0b')"),
    ev("return redis.error_reply(5)"), ev("return redis.error_reply()"),
    ev("return redis.status_reply('FINE')"),
    ev("return redis.status_reply('a\\r\\nb')"),
    ev("return redis.status_reply('a\\0b')"),
    ev("return redis.status_reply('')"), ev("return redis.status_reply()"),
    ev("local t = redis.error_reply('My Error') return t.err"),
    ev("local t = redis.error_reply('NOSPACE') return t.err"),
]

# ---- the globals, the libraries, the redis table -----------------------

GLOBALS = [
    ev("return a"), ev("a=1"), ev("local function f() x = 1 end f()"),
    ev("print('x')"), ev("_G.x = 1"), ev("rawset(_G,'x',1)"),
    ev("setmetatable(_G, nil)"), ev("string.foo = 1"),
    ev("redis.call = nil"), ev("redis = 1"), ev("KEYS = {}"),
    ev("table.insert(string, 1)"), ev("math.pi = 3"), ev("bit.band = nil"),
    ev("getmetatable('').__index = {}; return 1"),
    ev("return getmetatable('').__index == string"),
    ev("return ('x'):rep(2)"), ev("return rawget(_G, 'nope')"),
    ev("return rawget(string, 'rep') ~= nil"), ev("return #string"),
    ev("return _G._G == _G"), ev("return next(_G) ~= nil"),
    ev("local n=0 for k,v in pairs(string) do n=n+1 end return n"),
    ev("local t={} for k,v in pairs(redis) do t[#t+1]=k end "
       "table.sort(t) return t"),
    ev("local t={} for k,v in pairs(math) do t[#t+1]=k end "
       "table.sort(t) return t"),
    ev("local t={} for k,v in pairs(table) do t[#t+1]=k end "
       "table.sort(t) return t"),
    ev("local t={} for k,v in pairs(string) do t[#t+1]=k end "
       "table.sort(t) return t"),
    ev("local t={} for k,v in pairs(bit) do t[#t+1]=k end "
       "table.sort(t) return t"),
    ev("local t={} for k,v in pairs(coroutine) do t[#t+1]=k end "
       "table.sort(t) return t"),
    ev("KEYS[1] = 'z'; return KEYS[1]", "1", "a"),
    ev("local f = loadstring('y = 5'); f()"),
    ev("return loadstring('return 5')()"), ev("return loadstring('x')"),
    ev("return {loadstring('return )')}"),
    ev("return type(f_e0e1f9fabfc9d4800c877a703b823ac0578ff8db)"),
] + [ev("return type(%s)" % g) for g in (
    "os", "io", "debug", "require", "dofile", "loadfile", "getfenv",
    "setfenv", "newproxy", "module", "package", "loadstring", "load",
    "math.random", "gcinfo", "collectgarbage", "xpcall", "select",
    "unpack", "rawequal", "tonumber", "tostring", "assert",
    "__redis__err__handler")] + [
    ev("return _VERSION"), ev("return gcinfo() > 0"),
    ev("return collectgarbage('count') > 0"),
    ev("return string.format('%5.2f', 3.14159)"),
    ev("return table.concat({'a','b'}, ',')"),
    ev("return coroutine.wrap(function() coroutine.yield(7) end)()"),
    ev("return coroutine.wrap(function() "
       "return redis.call('echo','co') end)()"),
    ev("return {select(2, 'a', 'b', 'c')}"),
    ev("return tostring(1e15)"), ev("return tostring(0.1)"),
    ev("return string.dump(function() end) ~= nil"),
    # the bit library
    ev("return bit.band(0xff, 0x0f)"), ev("return bit.tohex(65535)"),
    ev("return bit.tobit(0xffffffff)"), ev("return bit.tohex(-1, -4)"),
    ev("return bit.tohex(255, 2)"), ev("return bit.tohex(0x12345678, 20)"),
    ev("return {bit.bnot(0), bit.bor(1,2,4), bit.bxor(7,2), "
       "bit.lshift(1,31), bit.rshift(-1,28), bit.arshift(-256, 4), "
       "bit.rol(0x12345678, 12), bit.ror(0x12345678, 12), "
       "bit.bswap(0x12345678)}"),
    ev("return bit.band()"), ev("return bit.band('x')"),
    ev("return bit.tobit(2^52+7)"), ev("return bit.tobit(1.5)"),
    ev("return bit.tobit(-1.5)"), ev("return bit.tobit('12')"),
    ev("return bit.band(1)"), ev("return bit.lshift(1, 33)"),
    ev("return bit.tohex(1, 0)"), ev("return bit.tohex(1, -9)"),
    ev("return bit.rol(1, 0)"), ev("return bit.ror(1, 32)"),
    # redis.*
    ev("return redis.sha1hex('')"), ev("return redis.sha1hex('abc')"),
    ev("return redis.sha1hex(5)"), ev("return redis.sha1hex({})"),
    ev("return redis.sha1hex(nil)"), ev("return redis.sha1hex()"),
    ev("return redis.sha1hex(string.rep('x', 1000))"),
    ev("return redis.log(redis.LOG_WARNING, 'hello', 'there')"),
    ev("return redis.log(redis.LOG_WARNING, 1, nil, {}, 'x')"),
    ev("return redis.log(redis.LOG_DEBUG, 'dbg')"),
    ev("return redis.log('1', 'dbg')"), ev("return redis.log(99, 'hello')"),
    ev("return redis.log(-1, 'hello')"), ev("return redis.log('x', 'hello')"),
    ev("return redis.log(1)"),
    ev("return {redis.LOG_DEBUG,redis.LOG_VERBOSE,redis.LOG_NOTICE,"
       "redis.LOG_WARNING}"),
    ev("return redis.setresp(2)"), ev("return redis.setresp(4)"),
    ev("return redis.setresp()"),
    ev("return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, "
       "redis.REPL_REPLICA, redis.REPL_ALL}"),
    ev("return redis.set_repl(redis.REPL_ALL)"),
    ev("return redis.set_repl(99)"), ev("return redis.set_repl()"),
    ev("return redis.replicate_commands()"), ev("return redis.breakpoint()"),
    ev("return redis.debug('x')"),
    ev("return redis.acl_check_cmd('get','x')"),
    ev("return redis.acl_check_cmd('nosuch')"),
    ev("return redis.acl_check_cmd()"),
    ev("return type(redis.REDIS_VERSION_NUM)"),
]

# ---- KEYS and ARGV -----------------------------------------------------

KEYS_ARGV = [
    ev("return {KEYS[1],KEYS[2],ARGV[1],ARGV[2]}", "2", "a", "b", "c", "d"),
    ev("return #ARGV", "0", "a", "b"), ev("return KEYS", "2", "a", "b", "c"),
    ev("return ARGV", "2", "a", "b", "c"), ev("return {#KEYS, #ARGV}"),
    ev("return {#KEYS, #ARGV}", "3", "a", "b", "c"),
    b("EVAL", "return {KEYS[1], ARGV[1]}", "1", b"\x00\xff", b""),
    ev("redis.call('set', KEYS[1], ARGV[1]) return redis.call('get', KEYS[1])",
       "1", "kk", "vv"),
    ev("return redis.call('mset', unpack(ARGV))", "0", "p", "1", "q", "2"),
    b("MGET", "p", "q"),
]

# ---- the script cache --------------------------------------------------

SHA1 = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"  # "return 1"
SHA2 = "7f923f79fe76194c868d7e1d0820de36700eb649"  # "return 2"
CACHE = [
    b("SCRIPT", "FLUSH"), b("EVALSHA", SHA1, "0"), b("EVALSHA", "abc", "0"),
    b("EVALSHA", SHA1, "x"), b("EVALSHA", "x" * 41, "z"),
    b("EVALSHA", SHA1, "-1"), b("EVALSHA", SHA1, "5"),
    b("SCRIPT", "EXISTS", SHA1), ev("return 1"), b("SCRIPT", "EXISTS", SHA1),
    b("EVALSHA", SHA1, "0"), b("EVALSHA", SHA1.upper(), "0"),
    b("EVALSHA_RO", SHA1, "0"),
    b("SCRIPT", "EXISTS", SHA1, "x", SHA1.upper(), SHA2),
    b("SCRIPT", "LOAD", "return 2"), b("SCRIPT", "EXISTS", SHA2),
    b("EVALSHA", SHA2, "0"), b("SCRIPT", "LOAD", "return 2"),
    b("SCRIPT", "LOAD", "return )"), ev("return )"),
    b("SCRIPT", "EXISTS", "7d5bc7a4ab2a3479ae1ad3a9e4b3d1d8d4a5ea0d"),
    b("SCRIPT", "LOAD", "#!lua flags=bogus\nreturn 1"),
    b("SCRIPT", "LOAD",
      "#!lua flags=no-writes\nreturn redis.call('set','a','1')"),
    b("EVALSHA", "71c6978aa8dbb43cfeb7536150d4b9326e6031a2", "0"),
    b("SCRIPT", "FLUSH", "ASYNC"), b("SCRIPT", "EXISTS", SHA1, SHA2),
    b("EVALSHA", SHA2, "0"), b("SCRIPT", "FLUSH", "sync"),
    b("SCRIPT", "FLUSH", "x"), b("SCRIPT", "FLUSH", "SYNC", "x"),
    b("SCRIPT", "EXISTS"), b("SCRIPT", "EXISTS", "a", "b"),
    b("SCRIPT", "KILL"), b("SCRIPT", "KILL", "x"), b("SCRIPT", "NOSUCH"),
    b("SCRIPT", "x" * 200), b("SCRIPT"), b("SCRIPT", "LOAD"),
    b("SCRIPT", "LOAD", "a", "b"), b("SCRIPT", "HELP"),
    b("SCRIPT", "help", "x"), b("SCRIPT", "DEBUG", "no"),
    b("SCRIPT", "DEBUG", "maybe"), b("SCRIPT", "DEBUG"),
    b("EVALSHA_RO", SHA1, "0"), b("EVAL_RO"), b("EVALSHA"),
    # a global a script leaves is gone with SCRIPT FLUSH's new state
    ev("return tostring(math.huge)"),
]

# ---- read-only scripts -------------------------------------------------

READ_ONLY = [
    b("SET", "a", "1.5"),
    b("EVAL_RO", "return redis.call('set','a','1')", "0"),
    b("EVAL_RO", "return redis.call('get','a')", "0"),
    b("EVAL_RO", "return redis.pcall('del','a')", "0"),
    b("EVAL_RO", "return redis.call('ping')", "0"),
    b("EVAL_RO", "return redis.call('nosuch')", "0"),
    b("EVAL_RO", "return redis.call('flushall')", "0"),
    b("EVAL_RO", "return redis.call('multi')", "0"),
    b("EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"),
    b("EVAL_RO", "#!lua\nreturn 1", "0"),
    b("EVAL_RO", "#!lua flags=allow-oom\nreturn 1", "0"),
    ev("#!lua flags=no-writes\nreturn redis.call('set','a','1')"),
    ev("#!lua flags=no-writes\nreturn redis.call('get','a')"),
    ev("#!lua\nreturn redis.call('set','a','5')"), b("GET", "a"),
    b("EVALSHA_RO", "0000000000000000000000000000000000000000", "0"),
    b("EVAL_RO", "return 1"), b("EVAL_RO", "return 1", "-1"),
]

# ---- with the rest of the server ---------------------------------------

WITH_SERVER = [
    # MULTI: a script queued runs at EXEC, in EXEC's transaction
    [b("MULTI"), ev("return redis.call('incr','x')"), ev("return 1", "-1"),
     ev("error('q')"), ev("redis.call('set','y','1') return 2"),
     b("EXEC"), b("MGET", "x", "y")],
    [b("MULTI"), b("EVAL", "return 1"), b("EXEC")],
    [b("MULTI"), b("SCRIPT", "LOAD", "return 7"),
     b("EVALSHA", "5e4dd0e8bfa03aaf1c0d1c6a0ad0ec8ff8d4cf86", "0"),
     b("EXEC")],
    # SELECT inside a script is the script's alone (opt: 16 databases)
    [] if WRAPPED else [
        ev("return redis.call('select','1')"), b("SET", "k0", "v0"),
        ev("redis.call('select','1') redis.call('set','db1key','v') "
           "return redis.call('exists','k0')"),
        b("EXISTS", "db1key"), b("SELECT", "1"), b("GET", "db1key"),
        b("FLUSHDB"), b("SELECT", "0")],
    # expiry set by a script
    [ev("redis.call('set','e','1','ex','100') return redis.call('ttl','e')"),
     ev("return redis.call('expire','e','200')"), b("TTL", "e"),
     ev("return redis.call('persist','e')"), b("TTL", "e")],
    # math.random: Redis's sequence (both servers start with it)
    [ev("return {tostring(math.random()), tostring(math.random(100)), "
        "tostring(math.random(5,9))}"),
     ev("return tostring(math.random())"),
     ev("math.randomseed(42) return {tostring(math.random()), "
        "math.random(1000000)}"),
     ev("return math.random(0)"), ev("return math.random(3, 1)"),
     ev("return math.random(1, 2, 3)")],
]


# ---- the collections (on a pmkv of their own: fresh_pair) -------------

COLLECTIONS = [  # (the commands it needs, the request)
    ("rpush", b("RPUSH", "l", "a", "b")),
    ("lrange", ev("return redis.call('lrange','l',0,-1)")),
    ("hset hgetall", ev("redis.call('hset','h','f','v','g','w') "
                        "local r = redis.call('hgetall','h') "
                        "table.sort(r) return r")),
    ("sadd smembers", ev("redis.call('sadd','st','a','b','c') "
                         "local r = redis.call('smembers','st') "
                         "table.sort(r) return r")),
    ("zadd zrange", ev("redis.call('zadd','z',1,'a',2.5,'b') "
                       "return redis.call('zrange','z',0,-1,'withscores')")),
    ("zscore", ev("return redis.call('zscore','z','b')")),
    ("rpush lpop llen", ev("redis.call('rpush','li','1','2','3') return "
                           "{redis.call('lpop','li'), "
                           "redis.call('llen','li')}")),
    ("type", ev("return redis.call('type','h').ok .. "
                "redis.call('type','st').ok")),
    ("lpush", ev("return redis.call('lpush','h','x')")),
    ("hget", ev("return redis.pcall('hget','l','x')")),
]


def test_random_sequence_first(pair):  # noqa: F811
    """math.random's sequence from a fresh start (first in the module)."""
    pair.run([ev("return {tostring(math.random()), math.random(1000000)}")])


@pytest.mark.parametrize("group", ["lua_to_resp", "resp_to_lua", "errors",
                                   "globals", "keys_argv", "cache",
                                   "read_only"])
def test_cases(pair, group):  # noqa: F811
    cases = {"lua_to_resp": LUA_TO_RESP, "resp_to_lua": RESP_TO_LUA,
             "errors": ERRORS, "globals": GLOBALS, "keys_argv": KEYS_ARGV,
             "cache": CACHE, "read_only": READ_ONLY}[group]
    for req in cases:  # one at a time: a failure names its request
        pair.run([req])


@pytest.mark.parametrize("case", range(len(WITH_SERVER)))
def test_with_server(pair, case):  # noqa: F811
    pair.run(WITH_SERVER[case])  # (an empty case: not for this version)


@pytest.fixture
def fresh_pair(make_server, redis_server):  # noqa: F811
    """A pair on a pmkv of its own and an emptied Redis: the collections
    and the random scripts write keys of every kind, kept away from the
    module's server and its other tests."""
    s = make_server()
    p = Pair(s.port, redis_server.port)
    p.theirs.send([b("FLUSHALL")])
    yield p
    p.close()
    assert not p.differences, "%d differences" % len(p.differences)


@pytest.mark.skipif(WRAPPED, reason="the wrapped version holds strings only")
def test_collections(fresh_pair):
    """Every type through scripts (the types pmkv has so far)."""
    info = parse(fresh_pair.ours.send([b("COMMAND", "INFO", *sorted(
        {n for need, _ in COLLECTIONS for n in need.split()}))])[0])
    has = {e[0].decode() for e in info if e}
    for need, req in COLLECTIONS:
        if set(need.split()) <= has:
            fresh_pair.run([req])


def test_watch_sees_a_script(pair, server, redis_server):  # noqa: F811
    """A script's write marks the clients that WATCH its key; a script
    that only reads does not."""
    other = Pair(server.port, redis_server.port)
    try:
        for script in ["redis.call('set','k','1')",
                       "redis.call('incr','k')",
                       "return redis.call('get','k')",
                       "redis.call('set','other','1')"]:
            pair.run([b("SET", "k", "0"), b("WATCH", "k")])
            other.run([ev(script)])
            pair.run([b("MULTI"), b("INCR", "k"), b("EXEC"),
                      b("GET", "k")])
    finally:
        other.close()


# ---- random scripts ----------------------------------------------------

RKEYS = ["k1", "k2", "k3", "l1", "h1"]
RCALLS = [
    "'set', K, V", "'get', K", "'incr', K", "'incrby', K, N", "'del', K",
    "'append', K, V", "'exists', K, K", "'lpush', K, V", "'lrange', K, 0, -1",
    "'hset', K, V, V", "'hget', K, V", "'type', K", "'strlen', K",
    "'mget', K, K", "'setnx', K, V", "'getset', K, V", "'decr', K",
    "'rpop', K", "'llen', K", "'hlen', K", "'ttl', K", "'expire', K, 100",
    "'persist', K", "'getdel', K", "'nosuch', K", "'get'", "'ping'",
]
if WRAPPED:  # strings only
    RCALLS = [c for c in RCALLS if c.split(",")[0].strip("'") not in
              ("lpush", "lrange", "hset", "hget", "rpop", "llen", "hlen")]
RVALUES = ["'1'", "'x'", "7", "-3", "2.5", "''", "'9223372036854775807'",
           "KEYS[1]", "ARGV[1]"]


def random_script(rnd):
    """A script of a few redis.call/pcall, keeping what they return, and
    returning it in one of Redis's shapes."""
    lines = ["local r = {}"]
    for i in range(rnd.randint(1, 5)):
        call = rnd.choice(RCALLS)
        while "K" in call.replace("'", ""):
            call = call.replace("K", repr(rnd.choice(RKEYS)), 1)
        while ", V" in call:
            call = call.replace(", V", ", " + rnd.choice(RVALUES), 1)
        call = call.replace(", N", ", " + rnd.choice(["1", "-2", "'x'"]))
        fn = rnd.choice(["call", "pcall", "pcall"])
        lines.append("r[%d] = redis.%s(%s)" % (i + 1, fn, call))
    lines.append(rnd.choice([
        "return r", "return r[1]", "return #r", "return {r[1], 'end'}",
        "return redis.status_reply('DONE')", "error('stop')",
        "return type(r[1])", "return {ok = type(r[1])}",
        "return {err = type(r[#r])}"]))
    return "\n".join(lines)


def test_random_scripts(fresh_pair):
    """Seeded random scripts over a few keys of every kind (so that
    WRONGTYPE, missing keys and errors happen), compared byte for byte;
    each as EVAL, then again by EVALSHA."""
    rnd = random.Random(int(os.environ.get("PMKV_SCRIPT_SEED", 7)))
    for _ in range(RANDOM):
        script = random_script(rnd)
        req = ev(script, "1", rnd.choice(RKEYS), rnd.choice(["a", "5"]))
        fresh_pair.run([req])
        if rnd.random() < 0.2:
            ours = fresh_pair.ours.send([b("SCRIPT", "LOAD", script)])[0]
            fresh_pair.theirs.send([b("SCRIPT", "LOAD", script)])
            fresh_pair.run([b("EVALSHA", parse(ours).decode(), *req[2:])])


# ---- busy scripts: pmkv and a Redis of its own -------------------------

def _eval_in_thread(port, script):
    """EVAL script on a new connection in a thread; out[0]: its reply
    (or the exception that ended it)."""
    out = []
    conn = Conn(port, timeout=60)

    def run():
        try:
            out.append(conn.send([ev(script)])[0])
        except (ConnectionError, OSError, socket.timeout) as e:
            out.append(e)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out, conn


def _until_busy(conn):
    """PING until the server says BUSY (the script has run past its time
    limit): at most 2,000 tries."""
    for _ in range(2000):
        r = conn.send([b("PING")])[0]
        if r == BUSY:
            return
        assert r == b"+PONG\r\n", r
        time.sleep(0.01)
    raise AssertionError("the script never got busy")


@needs_threads
def test_busy_script_against_redis(make_server, tmp_path, monkeypatch):
    """BUSY, SCRIPT KILL and NOTBUSY, as Redis 7.0 answers them, on both
    servers with lua-time-limit 200 ms (waiting for the states, no timed
    assertion)."""
    monkeypatch.setenv("PMKV_LUA_TIME_LIMIT", str(LIMIT_MS))
    s = make_server()
    redis = RedisServer(str(tmp_path / "busy-redis"))
    os.makedirs(redis.dir, exist_ok=True)
    redis.start()
    try:
        Conn(redis.port).send([b("CONFIG", "SET", "lua-time-limit",
                                 str(LIMIT_MS))])
        for port in (s.port, redis.port):
            seen = []
            other = Conn(port, timeout=60)
            t, out, conn = _eval_in_thread(port, "local i = 0 while true "
                                           "do i = i + 1 end")
            _until_busy(other)
            for req in [b("GET", "x"), b("SET", "x", "1"), b("MULTI"),
                        b("SET", "a", "1"), b("EXEC"), b("EXEC"),
                        b("MULTI"), b("DISCARD"), b("UNWATCH"),
                        b("SHUTDOWN"), b("SCRIPT", "EXISTS", "x"),
                        b("EVAL", "return 1", "0"),
                        b("SCRIPT", "KILL", "x"), b("SCRIPT", "KILL")]:
                seen.append(other.send([req])[0])
            t.join(30)
            assert out, "the killed script did not answer"
            seen.append(out[0])
            seen += other.send([b("SCRIPT", "KILL"), b("GET", "x"),
                                b("PING")])
            conn.close()
            other.close()
            if port == s.port:
                ours = seen
        assert ours == seen, "pmkv: %r\nredis: %r" % (ours, seen)
        assert ours[0] == BUSY and ours[-1] == b"+PONG\r\n"
    finally:
        redis.kill()


@needs_threads
def test_unkillable_then_shutdown_nosave(make_server, monkeypatch):
    """A busy script that wrote is UNKILLABLE (Redis's text), and is
    BUSY to the others, to a connection made while it runs too; SHUTDOWN
    NOSAVE ends the server without committing it: after a restart
    nothing the script wrote is there (Redis loses it too), and what was
    acknowledged before is."""
    monkeypatch.setenv("PMKV_LUA_TIME_LIMIT", str(LIMIT_MS))
    s = make_server()
    other = Conn(s.port, timeout=60)
    other.send([b("SET", "before", "1")])
    t, out, conn = _eval_in_thread(s.port, "redis.call('set','x','1') "
                                   "while true do end")
    _until_busy(other)
    assert other.send([b("SCRIPT", "KILL")])[0].startswith(
        b"-UNKILLABLE Sorry the script already executed write commands")
    late = Conn(s.port, timeout=60)  # accepted while the script runs
    assert late.send([b("GET", "x")])[0] == BUSY
    late.sock.sendall(encode(b("SHUTDOWN", "NOSAVE")))
    assert wait_until(lambda: not s.alive(), 30, step=0.05)
    t.join(30)
    assert out and not isinstance(out[0], bytes)  # no reply: closed
    for c in (other, late, conn):
        c.close()
    s.start()
    c = Conn(s.port)
    assert c.send([b("MGET", "before", "x")])[0] == \
        b"*2\r\n$1\r\n1\r\n$-1\r\n"
    c.close()


def _sigterm_during(s, script):
    """SIGTERM while script is busy: the server ends (0); the script's
    client gets an error or a closed connection."""
    other = Conn(s.port, timeout=60)
    t, out, conn = _eval_in_thread(s.port, script)
    _until_busy(other)
    s.proc.send_signal(signal.SIGTERM)
    assert wait_until(lambda: not s.alive(), 30, step=0.05)
    assert s.proc.returncode == 0
    t.join(30)
    assert out and (not isinstance(out[0], bytes) or
                    out[0].startswith(b"-ERR Script killed")), out
    other.close()
    conn.close()


@needs_threads
def test_stopping_server_and_a_busy_script(make_server, monkeypatch):
    """SIGTERM under a busy script: one that has not written is killed
    and the server stops; one that has ends the server without
    committing it (X4): after a restart its write is not there."""
    monkeypatch.setenv("PMKV_LUA_TIME_LIMIT", str(LIMIT_MS))
    s = make_server()
    _sigterm_during(s, "while true do end")
    s.start()
    _sigterm_during(s, "redis.call('set','x','1') while true do end")
    s.start()
    c = Conn(s.port)
    assert c.send([b("EXISTS", "x")])[0] == b":0\r\n"
    c.close()


# ---- pmkv's own guarantees ---------------------------------------------

def test_setresp3_is_refused(server):
    c = Conn(server.port)
    try:
        r = c.send([ev("redis.setresp(3) return 1")])[0]
        assert r.startswith(b"-ERR pmkv's scripts speak RESP2 only")
        assert c.send([ev("redis.setresp(2) return 1")])[0] == b":1\r\n"
    finally:
        c.close()


def test_failed_group_leaves_nothing(make_server):
    """A script whose write finds no room (a 16 MB region, or the suite's
    --maxmemory): the reply is
    the OOM error alone, and nothing the script wrote stays, the writes
    before the refusal included (Redis would keep those)."""
    s = make_server("--maxmemory", "16mb")
    c = Conn(s.port, timeout=60)
    try:
        c.send([b("SET", "kept", "1")])
        r = c.send([ev("redis.call('set','first','1') "
                       "for i = 1, 256 do redis.call('set', 'big' .. i, "
                       "string.rep('x', 1000000)) end return 'all'")])[0]
        assert r.startswith(b"-OOM command not allowed"), r
        got = c.send([b("EXISTS", "first", "big1", "big2"),
                      b("GET", "kept")])
        assert got == [b":0\r\n", b"$1\r\n1\r\n"]
        # and the store still takes writes
        assert c.send([ev("return redis.call('set','after','1')")])[0] == \
            b"+OK\r\n"
    finally:
        c.close()


def _script_loop(port, n, acked, stop):
    """Scripts of n INCRs, one per key, until the server dies; acked[0]:
    the scripts acknowledged."""
    req = encode(ev("for i = 1, %d do redis.call('incr', 'm' .. i) end "
                    "return %d" % (n, n)))
    want = b":%d\r\n" % n
    try:
        c = Conn(port, timeout=5)
        while not stop.is_set():
            c.sock.sendall(req)
            if c.reply() != want:
                return
            acked[0] += 1
    except (ConnectionError, OSError, socket.timeout):
        pass


def test_script_all_or_nothing_after_kill9(make_server):
    """kill -9 while a client runs scripts of 400 INCRs on 400 keys."""
    n = 400
    all_or_nothing_after_kill9(
        make_server, lambda port, acked, stop: _script_loop(port, n, acked,
                                                            stop),
        ["m%d" % i for i in range(1, n + 1)], 11, KILLS, "a script")
