# SPDX-License-Identifier: BSD-3-Clause
"""memcached-tool (Debian's memcached 1.6.18 package) against pmcached and
a memcached started beside it, loaded with the same items: its display,
stats, settings, dump and keys modes give the same output but for what
legitimately differs, which is masked:

  display   Max_age: the age of a class's oldest item, seconds counted
            on each server's clock (memcached's ticks once a second from
            its start, not on the wall clock's seconds).
  stats     pid, uptime, time, rusage_*; bytes (each server's own item
            accounting: memcached's slab item headers, pmcached's blocks);
            bytes_written, conn_yields, connection_structures and
            total_connections (how each server schedules and counts its
            connections); crawler_items_checked, lru_crawler_running and
            lru_crawler_starts (memcached's crawler also runs by itself). Names only memcached has (its slab mover, LRU
            maintainer, logger, read buffers, ...) are listed below, and
            pmcached's own (pmtx_*, region_*, ...): a name that appears
            or disappears on either side fails the test.
  settings  tcpport (two servers), memory_file, hash_algorithm (pmcached
            hashes keys with XXH3), oldest (memcached's relative clock);
            memcached's own and pmcached's own names listed likewise.
  dump,keys an item's exp and la may differ by a second or two (each
            server's clock); cas is each server's unique; the order is
            each server's walk of its LRUs.

Also lru_crawler metadump by class and hash against memcached's, and
(pmcached only) a metadump of 20,000 items made in parts lists each
exactly once, and lru_crawler crawl reclaims expired items.

Skipped unless $PMCACHED_BIN names pmcached and memcached and its
memcached-tool are installed.
"""
import os
import re
import subprocess
import time

import pytest

from mcserver import start_pair

TOOL = "/usr/share/memcached/scripts/memcached-tool"

MASKED_STATS = {"pid", "uptime", "time", "rusage_user", "rusage_system",
                "bytes", "bytes_written", "conn_yields",
                "connection_structures", "total_connections",
                "crawler_items_checked", "lru_crawler_running",
                "lru_crawler_starts"}
# memcached's own: its slab mover, LRU maintainer and crawler thread,
# logger, read and response buffers, NAPI ids
MEMCACHED_ONLY_STATS = {
    "direct_reclaims",
    "evicted_active", "evicted_unfetched", "expired_unfetched",
    "log_watcher_sent", "log_watcher_skipped", "log_watchers",
    "log_worker_dropped", "log_worker_written", "lru_bumps_dropped",
    "lru_maintainer_juggles",
    "lrutail_reflocked", "malloc_fails", "moves_to_cold", "moves_to_warm",
    "moves_within_lru", "read_buf_bytes", "read_buf_bytes_free",
    "read_buf_count", "read_buf_oom", "reserved_fds", "response_obj_bytes",
    "response_obj_count", "response_obj_oom", "round_robin_fallback",
    "slab_global_page_pool", "slab_reassign_busy_deletes",
    "slab_reassign_busy_items", "slab_reassign_chunk_rescues",
    "slab_reassign_evictions_nomem", "slab_reassign_inline_reclaim",
    "slab_reassign_rescues", "slab_reassign_running", "slabs_moved",
    "time_in_listen_disabled_us", "unexpected_napi_ids"}
PMCACHED_STATS = {"pmtx_runtime", "pmtx_domain", "pmtx_backend",
                  "region_bytes", "region_max_bytes", "restart_generation",
                  "reclaimed_at_start", "hash_expansions", "store_errors",
                  "lock_waits_table", "lock_waits_stripe",
                  "lock_waits_stripe_max", "lock_waits_stripes",
                  "lock_waits_lru", "lock_waits_pending"}

MASKED_SETTINGS = {"tcpport", "memory_file", "hash_algorithm", "oldest"}
# memcached's own: extstore, its segmented LRU and slab mover, TLS, NAPI,
# buffers and its logger
MEMCACHED_ONLY_SETTINGS = {
    "ext_compact_under", "ext_drop_under", "ext_drop_unread", "ext_item_age",
    "ext_item_size", "ext_low_ttl", "ext_max_frag", "ext_max_sleep",
    "ext_recache_rate", "ext_wbuf_size", "hot_lru_pct", "hot_max_factor",
    "inline_ascii_response", "lru_maintainer_thread", "lru_segmented",
    "num_napi_ids", "read_buf_mem_limit", "slab_automove",
    "slab_automove_freeratio", "slab_automove_ratio",
    "slab_automove_window", "slab_reassign", "ssl_ca_cert",
    "ssl_chain_cert", "ssl_ciphers", "ssl_enabled", "ssl_kernel_tls",
    "ssl_key", "ssl_keyformat", "ssl_min_version", "ssl_session_cache",
    "ssl_verify_mode", "ssl_wbuf_size", "tail_repair_time", "temp_lru",
    "temporary_ttl", "track_sizes", "warm_lru_pct", "warm_max_factor",
    "watcher_logbuf_size", "worker_logbuf_size"}
PMCACHED_SETTINGS = {"pmtx_runtime", "pmtx_domain", "pmtx_backend"}


def _tool_installed():
    if not os.path.exists(TOOL):
        pytest.skip("memcached-tool is not installed")


def _load():
    """The same items for both: sizes over 17 classes and one chunked item,
    flags 0 to 2, some with an expiry, keys that need URI-encoding."""
    out = []
    for i in range(300):
        n = (i * 37) % 3000
        out.append(b"set key%d %d %d %d\r\n%s\r\n"
                   % (i, i % 3, 1000 if i % 4 == 0 else 0, n, b"v" * n))
    out.append(b"set big 0 0 600000\r\n" + b"b" * 600000 + b"\r\n")
    out.append(b"set sp%20ace:x 5 0 1\r\nx\r\nset caf\xc3\xa9 0 0 2\r\nxy\r\n")
    return b"".join(out)


@pytest.fixture(scope="module")
def pair():
    _tool_installed()
    servers = start_pair()
    try:
        for s in servers:
            c = s.connect()
            c.send(_load() + b"get key1 key2 big\r\nmn\r\n")
            c.read_until(b"MN\r\n", timeout=30)
            c.close()
        yield servers
    finally:
        for s in servers:
            s.cleanup()


def tool(server, mode):
    for _ in range(30):
        out = subprocess.run(["perl", TOOL, "127.0.0.1:%d" % server.port,
                              mode], capture_output=True, timeout=60,
                             check=True).stdout.decode("latin-1")
        if mode not in ("dump", "keys") or out:
            return out
        time.sleep(0.2)   # memcached's own crawler was busy
    return out


def _pairs(text):
    """stats and settings: {name: value} from the tool's table."""
    return dict(line.split(None, 1) for line in text.splitlines()[1:]
                if line.strip())


def test_display(pair):
    mc, pm = (tool(s, "display").splitlines() for s in pair)

    def masked(rows):   # Max_age is the third column
        return [re.sub(r"^(\s*\d+\s+\S+\s+)\d+s", r"\1*s", r) for r in rows]
    assert masked(pm) == masked(mc)
    assert len(pm) > 15


def _compare_named(pair, mode, masked, mc_only, pm_only):
    mc, pm = (_pairs(tool(s, mode)) for s in pair)
    assert set(mc) - set(pm) == mc_only
    assert set(pm) - set(mc) == pm_only
    differ = {k for k in set(mc) & set(pm) - masked if mc[k] != pm[k]}
    assert not differ, {k: (mc[k], pm[k]) for k in differ}


def test_stats(pair):
    _compare_named(pair, "stats", MASKED_STATS, MEMCACHED_ONLY_STATS,
                   PMCACHED_STATS)


def test_settings(pair):
    _compare_named(pair, "settings", MASKED_SETTINGS,
                   MEMCACHED_ONLY_SETTINGS, PMCACHED_SETTINGS)


def _records(text):
    """dump: {key: (flags, exp, value)}."""
    out = {}
    for m in re.finditer(r"add (\S+) (\d+) (-?\d+) (\d+)\r\n", text):
        n = int(m.group(4))
        value = text[m.end():m.end() + n]
        out[m.group(1)] = (int(m.group(2)), int(m.group(3)), value)
    return out


def _close(a, b):
    return abs(a - b) <= 2


def test_dump(pair):
    mc, pm = (_records(tool(s, "dump")) for s in pair)
    assert set(pm) == set(mc) and len(pm) == 303
    for k in mc:
        (mf, me, mv), (pf, pe, pv) = mc[k], pm[k]
        assert (pf, pv) == (mf, mv), k
        assert _close(pe, me) if me else pe == 0, (k, me, pe)


METALINE = re.compile(r"key=(\S+) exp=(-?\d+) la=(\d+) cas=(\d+) "
                      r"fetch=(yes|no) cls=(\d+) size=(\d+)$")


def _meta(text):
    out = {}
    for line in text.splitlines():
        m = METALINE.match(line)
        assert m, line
        out[m.group(1)] = m.groups()[1:]
    return out


def _same_meta(mc, pm):
    assert set(pm) == set(mc)
    for k in mc:
        me, ml, _, mf, mcls, msz = mc[k]
        pe, pl, _, pf, pcls, psz = pm[k]
        assert (pf, pcls, psz) == (mf, mcls, msz), k
        assert (me == pe == "-1") or _close(int(me), int(pe)), k
        assert _close(int(ml), int(pl)), k


def test_keys(pair):
    mc, pm = (_meta(tool(s, "keys")) for s in pair)
    assert len(pm) == 303
    _same_meta(mc, pm)


def metadump(server, which):
    for _ in range(30):
        c = server.connect()
        c.send(b"lru_crawler metadump %s\r\n" % which)
        got = c.read_until(b"\r\n", timeout=30).decode("latin-1")
        c.close()
        if not got.startswith("BUSY"):
            return got
        time.sleep(0.2)
    return got


@pytest.mark.parametrize("which", [b"all", b"hash", b"1", b"2,14,39",
                                   b"63"])
def test_metadump(pair, which):
    mc, pm = (metadump(s, which) for s in pair)
    assert mc.endswith("END\r\n") and pm.endswith("END\r\n")
    _same_meta(_meta(mc[:-5]), _meta(pm[:-5]))


@pytest.mark.pmcached_only
def test_a_long_metadump_lists_every_item_once(make_server):
    srv = make_server()
    c = srv.connect()
    c.send(b"".join(b"set k%d 0 0 3\r\nabc\r\n" % i for i in range(20000)))
    c.send(b"mn\r\n")
    c.read_until(b"MN\r\n", timeout=60)
    c.send(b"lru_crawler metadump all\r\n")
    text = c.read_until(b"END\r\n", timeout=60).decode()
    keys = [line.split()[0] for line in text.splitlines()[:-1]]
    assert len(keys) == 20000 and len(set(keys)) == 20000
    c.sync()   # the connection serves requests again after the dump


@pytest.mark.pmcached_only
def test_crawl_reclaims_expired_items(make_server):
    srv = make_server()
    c = srv.connect()
    c.send(b"".join(b"set e%d 0 1 1\r\nx\r\n" % i for i in range(100)) +
           b"set keep 0 0 1\r\nx\r\nmn\r\n")
    c.read_until(b"MN\r\n")
    assert c.stats()["curr_items"] == "101"
    time.sleep(2.2)
    c.call(b"lru_crawler crawl all\r\n", b"OK\r\n")
    c.sync()   # the crawl is done before the next request
    st = c.stats()
    assert st["curr_items"] == "1" and st["crawler_reclaimed"] == "100"
    items = c.stats(b"items")
    assert sum(int(v) for k, v in items.items()
               if k.endswith(":crawler_reclaimed")) == 100
