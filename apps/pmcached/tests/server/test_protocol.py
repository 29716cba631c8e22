# SPDX-License-Identifier: BSD-3-Clause
"""memcached 1.6's text and meta protocol over a real socket, reply bytes
compared exactly.

Every expected reply here was first checked against Debian's memcached
1.6.18 (--target=memcached). Each test gets a connection to a server
shared by this module, on an empty cache (flush_all), and must leave the
connection in step: after the test, mn must be answered by MN and nothing
else.
"""
import re
import time

import pytest

from mcserver import wait_until


OK = b"OK\r\n"
STORED = b"STORED\r\n"
NOT_STORED = b"NOT_STORED\r\n"
END = b"END\r\n"
ERROR = b"ERROR\r\n"
BAD_FORMAT = b"CLIENT_ERROR bad command line format\r\n"
TOO_LARGE = b"SERVER_ERROR object too large for cache\r\n"
NON_NUMERIC = (b"CLIENT_ERROR cannot increment or decrement "
               b"non-numeric value\r\n")
BAD_DELTA = b"CLIENT_ERROR invalid numeric delta argument\r\n"
BAD_EXPTIME = b"CLIENT_ERROR invalid exptime argument\r\n"
ITEM_MAX = 1 << 20          # memcached's default -I


def fit(key, item_max=ITEM_MAX, flags=0):
    """Largest value memcached stores for key under -I item_max: item
    header 48 + cas 8 + key + 1 + (4 if flags) + value + 2 <= item_max."""
    return item_max - 48 - 8 - len(key) - 1 - (4 if flags else 0) - 2


# ---------------------------------------------------------------- storage

def test_set_then_get_returns_value_and_flags(conn):
    conn.call(b"set k 0 0 5\r\nhello\r\n", STORED)
    conn.call(b"get k\r\n", b"VALUE k 0 5\r\nhello\r\nEND\r\n")


def test_value_bytes_are_opaque_including_crlf_and_nul(conn):
    value = b"a\r\nb\x00c\r\n\xff\x80END\r\n"
    conn.call(b"set k 1 0 %d\r\n%s\r\n" % (len(value), value), STORED)
    conn.call(b"get k\r\n",
              b"VALUE k 1 %d\r\n%s\r\nEND\r\n" % (len(value), value))


def test_empty_value(conn):
    conn.call(b"set k 0 0 0\r\n\r\n", STORED)
    conn.call(b"get k\r\n", b"VALUE k 0 0\r\n\r\nEND\r\n")


def test_flags_are_32_bit(conn):
    conn.call(b"set k 4294967295 0 1\r\nx\r\n", STORED)
    conn.call(b"get k\r\n", b"VALUE k 4294967295 1\r\nx\r\nEND\r\n")


def test_set_overwrites(conn):
    conn.call(b"set k 1 0 1\r\na\r\n", STORED)
    conn.call(b"set k 2 0 3\r\nbcd\r\n", STORED)
    conn.call(b"get k\r\n", b"VALUE k 2 3\r\nbcd\r\nEND\r\n")


def test_add_stores_only_a_missing_key(conn):
    conn.call(b"add k 0 0 1\r\na\r\n", STORED)
    conn.call(b"add k 0 0 1\r\nb\r\n", NOT_STORED)
    conn.call(b"get k\r\n", b"VALUE k 0 1\r\na\r\nEND\r\n")


def test_replace_stores_only_an_existing_key(conn):
    conn.call(b"replace k 0 0 1\r\na\r\n", NOT_STORED)
    conn.call(b"get k\r\n", END)
    conn.call(b"set k 0 0 1\r\na\r\n", STORED)
    conn.call(b"replace k 3 0 2\r\nbb\r\n", STORED)
    conn.call(b"get k\r\n", b"VALUE k 3 2\r\nbb\r\nEND\r\n")


def test_append_prepend_keep_the_items_flags(conn):
    conn.call(b"append k 0 0 1\r\nx\r\n", NOT_STORED)
    conn.call(b"prepend k 0 0 1\r\nx\r\n", NOT_STORED)
    conn.call(b"set k 5 0 2\r\nab\r\n", STORED)
    conn.call(b"append k 9 0 2\r\ncd\r\n", STORED)
    conn.call(b"prepend k 7 0 1\r\nz\r\n", STORED)
    conn.call(b"get k\r\n", b"VALUE k 5 5\r\nzabcd\r\nEND\r\n")


def test_noreply_storage_commands_send_nothing(conn):
    conn.send(b"set k 1 0 1 noreply\r\na\r\n"
              b"add k 0 0 1 noreply\r\nb\r\n"          # fails silently
              b"add k2 0 0 1 noreply\r\nc\r\n"
              b"replace k2 2 0 1 noreply\r\nd\r\n"
              b"replace nope 0 0 1 noreply\r\ne\r\n"   # fails silently
              b"append k 0 0 1 noreply\r\nf\r\n"
              b"prepend k 0 0 1 noreply\r\ng\r\n"
              b"cas k 0 0 1 1 noreply\r\nh\r\n"        # EXISTS, silently
              b"cas nope 0 0 1 1 noreply\r\ni\r\n")    # NOT_FOUND, silently
    conn.sync()
    conn.call(b"get k k2 nope\r\n",
              b"VALUE k 1 3\r\ngaf\r\nVALUE k2 2 1\r\nd\r\nEND\r\n")


def test_cas_stores_only_with_the_current_unique(conn):
    conn.call(b"cas k 0 0 1 1\r\nx\r\n", b"NOT_FOUND\r\n")
    conn.call(b"set k 0 0 1\r\na\r\n", STORED)
    cas = conn.gets_cas(b"k")
    conn.call(b"cas k 4 0 1 %d\r\nb\r\n" % (cas + 1), b"EXISTS\r\n")
    conn.call(b"cas k 4 0 1 %d\r\nb\r\n" % cas, STORED)
    conn.call(b"cas k 4 0 1 %d\r\nc\r\n" % cas, b"EXISTS\r\n")
    conn.call(b"get k\r\n", b"VALUE k 4 1\r\nb\r\nEND\r\n")
    conn.call(b"cas k 0 0 1 %d noreply\r\nd\r\n" % conn.gets_cas(b"k"), b"")
    conn.call(b"get k\r\n", b"VALUE k 0 1\r\nd\r\nEND\r\n")


def test_every_change_gives_a_new_cas_unique(conn):
    conn.call(b"set k 0 0 1\r\n1\r\n", STORED)
    seen = [conn.gets_cas(b"k")]
    for req, reply in ((b"set k 0 0 1\r\n2\r\n", STORED),
                       (b"append k 0 0 1\r\n3\r\n", STORED),
                       (b"prepend k 0 0 1\r\n4\r\n", STORED),
                       (b"incr k 1\r\n", b"424\r\n"),
                       (b"decr k 1\r\n", b"423\r\n")):
        conn.call(req, reply)
        seen.append(conn.gets_cas(b"k"))
    assert len(set(seen)) == len(seen), seen
    # Reading does not change it.
    assert conn.gets_cas(b"k") == seen[-1]


# --------------------------------------------------------------- retrieval

def test_get_many_keys_in_order_skipping_misses(conn):
    conn.call(b"set a 1 0 1\r\nA\r\nset c 3 0 2\r\nCC\r\n", STORED + STORED)
    conn.call(b"get a b c\r\n",
              b"VALUE a 1 1\r\nA\r\nVALUE c 3 2\r\nCC\r\nEND\r\n")
    conn.call(b"get c a c\r\n",
              b"VALUE c 3 2\r\nCC\r\nVALUE a 1 1\r\nA\r\n"
              b"VALUE c 3 2\r\nCC\r\nEND\r\n")
    conn.call(b"get nope1 nope2\r\n", END)


def test_gets_many_keys_give_each_cas(conn):
    conn.call(b"set a 0 0 1\r\nA\r\nset b 0 0 1\r\nB\r\n", STORED + STORED)
    ca, cb = conn.gets_cas(b"a"), conn.gets_cas(b"b")
    assert ca != cb
    conn.call(b"gets a nope b\r\n",
              b"VALUE a 0 1 %d\r\nA\r\nVALUE b 0 1 %d\r\nB\r\nEND\r\n"
              % (ca, cb))


def test_get_of_a_hundred_keys(conn):
    keys = [b"key%03d" % i for i in range(100)]
    conn.send(b"".join(b"set %s 0 0 %d noreply\r\n%s\r\n" % (k, len(k), k)
                       for k in keys[::2]))
    conn.sync()
    want = b"".join(b"VALUE %s 0 %d\r\n%s\r\n" % (k, len(k), k)
                    for k in keys[::2]) + END
    conn.call(b"get " + b" ".join(keys) + b"\r\n", want)


def test_get_without_key_is_an_error(conn):
    conn.call(b"get\r\n", ERROR)
    conn.call(b"gets\r\n", ERROR)


def test_gat_returns_values_and_sets_the_ttl(conn):
    conn.call(b"set a 0 0 1\r\nA\r\nset b 2 0 2\r\nBB\r\n", STORED + STORED)
    conn.call(b"mg a t\r\n", b"HD t-1\r\n")
    conn.call(b"gat 100 a nope b\r\n",
              b"VALUE a 0 1\r\nA\r\nVALUE b 2 2\r\nBB\r\nEND\r\n")
    conn.send(b"mg a t\r\n")
    assert re.fullmatch(rb"HD t(100|99)\r\n", conn.readline())
    conn.call(b"gat 0 a\r\n", b"VALUE a 0 1\r\nA\r\nEND\r\n")
    conn.call(b"mg a t\r\n", b"HD t-1\r\n")
    conn.call(b"gat 10 nope\r\n", END)


def test_gats_returns_cas(conn):
    conn.call(b"set a 0 0 1\r\nA\r\n", STORED)
    cas = conn.gets_cas(b"a")
    conn.call(b"gats 100 a\r\n", b"VALUE a 0 1 %d\r\nA\r\nEND\r\n" % cas)


def test_gat_errors(conn):
    conn.call(b"gat 10\r\n", END)              # no key: nothing found
    conn.call(b"gat\r\n", ERROR)
    conn.call(b"gat x a\r\n", BAD_EXPTIME)


# -------------------------------------------------- delete, touch, expiry

def test_delete(conn):
    conn.call(b"delete k\r\n", b"NOT_FOUND\r\n")
    conn.call(b"set k 0 0 1\r\nx\r\n", STORED)
    conn.call(b"delete k\r\n", b"DELETED\r\n")
    conn.call(b"get k\r\n", END)
    conn.call(b"set k 0 0 1\r\nx\r\n", STORED)
    conn.call(b"delete k 0\r\n", b"DELETED\r\n")        # legacy form
    conn.call(b"set k 0 0 1\r\nx\r\n", STORED)
    conn.call(b"delete k noreply\r\ndelete k noreply\r\n", b"")
    conn.call(b"get k\r\n", END)
    conn.call(b"delete k 1\r\n", b"CLIENT_ERROR bad command line format."
              b"  Usage: delete <key> [noreply]\r\n")


def test_touch_sets_the_ttl(conn):
    conn.call(b"touch k 10\r\n", b"NOT_FOUND\r\n")
    conn.call(b"set k 0 0 1\r\nx\r\n", STORED)
    conn.call(b"touch k 100\r\n", b"TOUCHED\r\n")
    conn.send(b"mg k t\r\n")
    assert re.fullmatch(rb"HD t(100|99)\r\n", conn.readline())
    conn.call(b"touch k 0 noreply\r\n", b"")
    conn.call(b"mg k t\r\n", b"HD t-1\r\n")
    conn.call(b"touch k x\r\n", BAD_EXPTIME)
    conn.call(b"touch k\r\n", ERROR)


def test_negative_exptime_is_already_expired(conn):
    conn.call(b"set k 0 -1 1\r\nx\r\n", STORED)
    conn.call(b"get k\r\n", END)


def test_item_expires_after_its_ttl(conn):
    conn.call(b"set k 0 1 1\r\nx\r\nset forever 0 0 1\r\ny\r\n",
              STORED + STORED)
    assert wait_until(lambda: conn.get_value(b"k") is None, timeout=4)
    conn.call(b"get forever\r\n", b"VALUE forever 0 1\r\ny\r\nEND\r\n")


# -------------------------------------------------------------- incr/decr

def test_incr_decr(conn):
    conn.call(b"incr n 1\r\n", b"NOT_FOUND\r\n")
    conn.call(b"decr n 1\r\n", b"NOT_FOUND\r\n")
    conn.call(b"set n 7 0 1\r\n5\r\n", STORED)
    conn.call(b"incr n 10\r\n", b"15\r\n")
    conn.call(b"decr n 3\r\n", b"12\r\n")
    conn.call(b"get n\r\n", b"VALUE n 7 2\r\n12\r\nEND\r\n")
    conn.call(b"incr n 1 noreply\r\ndecr n 3 noreply\r\n", b"")
    conn.call(b"get n\r\n", b"VALUE n 7 2\r\n10\r\nEND\r\n")


def test_incr_wraps_at_2_to_the_64(conn):
    conn.call(b"set n 0 0 20\r\n18446744073709551615\r\n", STORED)
    conn.call(b"incr n 1\r\n", b"0\r\n")
    conn.call(b"incr n 18446744073709551615\r\n", b"18446744073709551615\r\n")
    conn.call(b"incr n 2\r\n", b"1\r\n")


def test_decr_floors_at_zero(conn):
    conn.call(b"set n 0 0 1\r\n5\r\n", STORED)
    conn.call(b"decr n 6\r\n", b"0\r\n")
    conn.call(b"decr n 18446744073709551615\r\n", b"0\r\n")


def test_incr_can_make_the_value_longer(conn):
    conn.call(b"set n 3 0 2\r\n99\r\n", STORED)
    conn.call(b"incr n 1\r\n", b"100\r\n")
    conn.call(b"get n\r\n", b"VALUE n 3 3\r\n100\r\nEND\r\n")
    conn.call(b"incr n 18446744073709551000\r\n",
              b"18446744073709551100\r\n")
    conn.call(b"get n\r\n", b"VALUE n 3 20\r\n18446744073709551100\r\nEND\r\n")


def test_decr_keeps_the_length_and_pads_with_spaces(conn):
    # memcached rewrites a shorter number in place, blank-padded.
    conn.call(b"set n 0 0 3\r\n100\r\n", STORED)
    conn.call(b"decr n 1\r\n", b"99\r\n")
    conn.call(b"get n\r\n", b"VALUE n 0 3\r\n99 \r\nEND\r\n")
    conn.call(b"incr n 18446744073709551615\r\n", b"98\r\n")
    conn.call(b"get n\r\n", b"VALUE n 0 3\r\n98 \r\nEND\r\n")


def test_incr_of_a_non_number(conn):
    conn.call(b"set s 0 0 2\r\nab\r\n", STORED)
    conn.call(b"incr s 1\r\n", NON_NUMERIC)
    conn.call(b"decr s 1\r\n", NON_NUMERIC)
    conn.call(b"get s\r\n", b"VALUE s 0 2\r\nab\r\nEND\r\n")


def test_incr_bad_delta(conn):
    conn.call(b"set n 0 0 1\r\n1\r\n", STORED)
    for delta in (b"x", b"-1", b"18446744073709551616"):
        conn.call(b"incr n %s\r\n" % delta, BAD_DELTA)
    conn.call(b"incr n\r\n", ERROR)


# ------------------------------------------------ flush_all, misc commands

def test_flush_all_empties_the_cache_but_not_later_sets(conn):
    conn.call(b"set a 0 0 1\r\nx\r\nset b 0 0 1\r\ny\r\n", STORED + STORED)
    conn.call(b"flush_all\r\n", OK)
    conn.call(b"get a b\r\n", END)
    conn.call(b"set a 0 0 1\r\nz\r\n", STORED)
    conn.call(b"get a\r\n", b"VALUE a 0 1\r\nz\r\nEND\r\n")
    conn.call(b"flush_all noreply\r\n", b"")
    conn.call(b"get a\r\n", END)
    conn.call(b"flush_all 0\r\n", OK)
    conn.call(b"flush_all x\r\n", BAD_EXPTIME)


def test_flush_all_with_a_delay(make_server):
    # Its own server: a pending delayed flush must not reach other tests.
    c = make_server().connect()
    c.call(b"set a 0 0 1\r\nx\r\n", STORED)
    c.call(b"flush_all 2\r\n", OK)
    c.call(b"get a\r\n", b"VALUE a 0 1\r\nx\r\nEND\r\n")
    assert wait_until(lambda: c.get_value(b"a") is None, timeout=5)
    c.sync()


def test_version(conn):
    conn.send(b"version\r\n")
    assert re.fullmatch(rb"VERSION [0-9][^\r\n ]*\r\n", conn.readline())


def test_verbosity(conn):
    conn.call(b"verbosity 1\r\n", OK)
    conn.call(b"verbosity 0 noreply\r\n", b"")
    conn.call(b"verbosity 0\r\n", OK)
    conn.call(b"verbosity\r\n", ERROR)


def test_quit_closes_without_a_reply(conn):
    conn.send(b"quit\r\n")
    assert conn.closed()
    assert conn.buf == b""


def test_quit_after_pipelined_commands(conn):
    conn.send(b"set a 0 0 1\r\nx\r\nget a\r\nquit\r\nget a\r\n")
    assert conn.closed()
    assert conn.buf == STORED + b"VALUE a 0 1\r\nx\r\nEND\r\n"


def test_shutdown_is_refused_without_A(conn, server):
    conn.call(b"shutdown\r\n", b"ERROR: shutdown not enabled\r\n")
    conn.call(b"shutdown graceful\r\n", b"ERROR: shutdown not enabled\r\n")
    assert server.alive()
    conn.call(b"set a 0 0 1\r\nx\r\n", STORED)


def test_unknown_commands(conn):
    for line in (b"bogus", b"", b"GET a", b"mget a", b"sett a 0 0 1"):
        conn.call(line + b"\r\n", ERROR)


def test_bare_newline_ends_a_line(conn):
    conn.call(b"set a 0 0 1\nx\r\nget a\n", STORED +
              b"VALUE a 0 1\r\nx\r\nEND\r\n")


def test_pipelined_requests_are_answered_in_order(conn):
    req, want = b"", b""
    for i in range(100):
        req += b"set k%d 0 0 %d\r\n%d\r\nget k%d\r\n" % (
            i, len(b"%d" % i), i, i)
        want += STORED + b"VALUE k%d 0 %d\r\n%d\r\nEND\r\n" % (
            i, len(b"%d" % i), i)
    req += b"incr k42 8\r\ndelete k7\r\nget k7 k42\r\n"
    want += b"50\r\nDELETED\r\nVALUE k42 0 2\r\n50\r\nEND\r\n"
    conn.call(req, want)


def test_a_request_sent_one_byte_at_a_time(conn):
    req = b"set k 3 0 5\r\nhello\r\nget k\r\n"
    for i in range(len(req)):
        conn.send(req[i:i + 1])
        time.sleep(0.001)
    conn.expect(STORED + b"VALUE k 3 5\r\nhello\r\nEND\r\n")


# ------------------------------------------------------- keys and limits

def test_key_of_250_bytes_is_accepted_251_refused(conn):
    k250, k251 = b"k" * 250, b"k" * 251
    conn.call(b"set %s 0 0 1\r\nx\r\n" % k250, STORED)
    conn.call(b"get %s\r\n" % k250, b"VALUE %s 0 1\r\nx\r\nEND\r\n" % k250)
    # The line is refused; its data line is then read as a command.
    conn.call(b"set %s 0 0 1\r\nx\r\n" % k251, BAD_FORMAT + ERROR)
    conn.call(b"get %s\r\n" % k251, BAD_FORMAT)
    conn.call(b"delete %s\r\n" % k251, BAD_FORMAT)
    conn.call(b"incr %s 1\r\n" % k251, BAD_FORMAT)


def test_value_just_under_and_over_the_default_item_size(conn):
    n = fit(b"a")
    conn.call(b"set a 0 0 %d\r\n" % n + b"v" * n + b"\r\n", STORED)
    assert conn.get_value(b"a") == (0, b"v" * n)
    conn.call(b"set b 0 0 %d\r\n" % (n + 1) + b"v" * (n + 1) + b"\r\nmn\r\n",
              TOO_LARGE + b"MN\r\n")
    conn.call(b"get b\r\n", END)


def test_too_large_value_is_swallowed_and_set_drops_the_old_value(conn):
    big = 2 * ITEM_MAX
    conn.call(b"set k 0 0 1\r\nx\r\nappend k 0 0 1\r\ny\r\n", STORED * 2)
    # append/prepend that are too large leave the item alone ...
    conn.call(b"append k 0 0 %d\r\n" % big + b"v" * big + b"\r\nmn\r\n",
              TOO_LARGE + b"MN\r\n")
    conn.call(b"get k\r\n", b"VALUE k 0 2\r\nxy\r\nEND\r\n")
    # ... but a set that is too large unlinks the old value (memcached:
    # "avoid stale data persisting in cache because we failed alloc").
    conn.call(b"set k 0 0 %d\r\n" % big + b"v" * big + b"\r\nmn\r\n",
              TOO_LARGE + b"MN\r\n")
    conn.call(b"get k\r\n", END)
    conn.call(b"set k 0 0 %d noreply\r\n" % big + b"v" * big + b"\r\n", b"")


def test_too_large_reply_comes_after_the_data(conn):
    # memcached holds the connection's replies while it swallows the
    # value; all of them arrive once the data has been read.
    big = ITEM_MAX + 10
    conn.send(b"set a 0 0 1\r\nx\r\nset k 0 0 %d\r\n" % big)
    conn.send(b"v" * big + b"\r\nget a\r\n")
    conn.expect(STORED + TOO_LARGE + b"VALUE a 0 1\r\nx\r\nEND\r\n")


def test_large_value_round_trip(conn):
    value = bytes(range(256)) * 3900          # 998,400 bytes
    conn.call(b"set big 9 0 %d\r\n" % len(value) + value + b"\r\n", STORED)
    assert conn.get_value(b"big") == (9, value)


def test_bad_data_chunk(conn):
    conn.call(b"set k 0 0 1\r\nx\r\n", STORED)
    # length + 2 bytes are consumed; "\r\n" that follows is an empty line.
    conn.call(b"set k 0 0 3\r\nabcde\r\n",
              b"CLIENT_ERROR bad data chunk\r\nERROR\r\n")
    conn.call(b"get k\r\n", b"VALUE k 0 1\r\nx\r\nEND\r\n")


def test_bad_command_lines(conn):
    for line in (b"set a 0 0 -1", b"set a 0 0 abc", b"set a x 0 1",
                 b"set a 0 0 4294967295", b"cas a 0 0 1 x"):
        conn.call(line + b"\r\n", BAD_FORMAT)
    conn.call(b"set a 0 0\r\n", ERROR)


def test_a_line_over_2048_bytes_without_newline_closes(conn):
    conn.send(b"x" * 3000)
    assert conn.closed(timeout=3)
    assert conn.buf == b""


def test_a_long_line_is_fine_once_its_newline_comes(conn):
    conn.send(b"y" * 2000)
    time.sleep(0.2)
    conn.call(b"\r\n", ERROR)


def test_a_get_line_may_exceed_2048_bytes(conn):
    conn.call(b"set k 0 0 1\r\nx\r\n", STORED)
    conn.send(b"get " + b"k " * 1500)
    time.sleep(0.2)
    conn.call(b"\r\n", b"VALUE k 0 1\r\nx\r\n" * 1500 + END)


# ------------------------------------------------------------ meta: mg

def test_mg_miss_and_hit(conn):
    conn.call(b"mg nope\r\n", b"EN\r\n")
    conn.call(b"mg nope v\r\n", b"EN\r\n")
    conn.call(b"set m 3 0 3\r\nbar\r\n", STORED)
    conn.call(b"mg m\r\n", b"HD\r\n")
    conn.call(b"mg m v\r\n", b"VA 3\r\nbar\r\n")


def test_mg_flags_in_request_order(conn):
    conn.call(b"set m 3 0 3\r\nbar\r\n", STORED)
    conn.call(b"mg m v f t k s Oab\r\n", b"VA 3 f3 t-1 km s3 Oab\r\nbar\r\n")
    conn.call(b"mg m Oab s k\r\n", b"HD Oab s3 km\r\n")


def test_mg_c_is_the_gets_cas(conn):
    conn.call(b"set m 0 0 1\r\nx\r\n", STORED)
    cas = conn.gets_cas(b"m")
    conn.call(b"mg m c\r\n", b"HD c%d\r\n" % cas)


def test_mg_q_hides_only_the_miss(conn):
    conn.call(b"set m 0 0 1\r\nx\r\n", STORED)
    conn.call(b"mg nope q v\r\nmg m q v\r\nmg nope q k O1\r\nmn\r\n",
              b"VA 1\r\nx\r\nMN\r\n")


def test_mg_T_updates_the_ttl(conn):
    conn.call(b"set m 0 0 1\r\nx\r\n", STORED)
    conn.call(b"mg m T30 t v\r\n", b"VA 1 t30\r\nx\r\n")
    conn.call(b"mg m t\r\n", b"HD t30\r\n")


def test_mg_base64_key(conn):
    conn.call(b"set abc 0 0 2\r\nhi\r\n", STORED)
    conn.call(b"mg abc k\r\n", b"HD kabc\r\n")
    conn.call(b"ms YWJk 2 b k\r\nho\r\n", b"HD kYWJk b\r\n")
    conn.call(b"mg YWJk b k v\r\n", b"VA 2 kYWJk b\r\nho\r\n")
    conn.call(b"get abd\r\n", b"VALUE abd 0 2\r\nho\r\nEND\r\n")


def test_mg_k_in_the_stored_form(conn):
    # k comes back in the form the item was stored with (an item stored
    # under a b key keeps a "binary key" bit), not the request's.
    conn.call(b"set abc 0 0 2\r\nhi\r\n", STORED)
    conn.call(b"mg YWJj b k v O9\r\n", b"VA 2 kabc O9\r\nhi\r\n")
    conn.call(b"ms YWJk 2 b\r\nho\r\n", b"HD\r\n")
    conn.call(b"mg abd k\r\n", b"HD kYWJk b\r\n")


def test_mg_errors(conn):
    conn.call(b"mg m zz\r\n", b"CLIENT_ERROR invalid flag\r\n")
    conn.call(b"mg m v v\r\n", b"CLIENT_ERROR duplicate flag\r\n")
    conn.call(b"mg m Nx\r\n", b"CLIENT_ERROR bad token in command line "
              b"format\r\n")
    conn.call(b"mg\r\n", ERROR)
    conn.call(b"mg " + b"k" * 251 + b"\r\n", BAD_FORMAT)


# ------------------------------------------------------------ meta: ms

def test_ms_with_T_and_F(conn):
    conn.call(b"ms m 2 T0 F5\r\nhi\r\n", b"HD\r\n")
    conn.call(b"mg m v f t\r\n", b"VA 2 f5 t-1\r\nhi\r\n")
    conn.call(b"get m\r\n", b"VALUE m 5 2\r\nhi\r\nEND\r\n")
    conn.call(b"ms m 2 T100\r\nab\r\n", b"HD\r\n")
    conn.send(b"mg m t v\r\n")
    assert re.fullmatch(rb"VA 2 t(100|99)\r\n", conn.readline())
    conn.expect(b"ab\r\n")


def test_ms_modes(conn):
    conn.call(b"ms m 1 MA\r\nx\r\n", b"NS\r\n")        # append: missing
    conn.call(b"ms m 1 MR\r\nx\r\n", b"NS\r\n")        # replace: missing
    conn.call(b"ms m 1 ME\r\nb\r\n", b"HD\r\n")        # add
    conn.call(b"ms m 1 ME\r\nz\r\n", b"NS\r\n")
    conn.call(b"ms m 1 MA\r\nc\r\n", b"HD\r\n")
    conn.call(b"ms m 1 MP\r\na\r\n", b"HD\r\n")
    conn.call(b"mg m v\r\n", b"VA 3\r\nabc\r\n")
    conn.call(b"ms m 1 MR\r\nr\r\n", b"HD\r\n")
    conn.call(b"ms m 1 MS\r\ns\r\n", b"HD\r\n")
    conn.call(b"mg m v\r\n", b"VA 1\r\ns\r\n")
    # Modes are upper case only in memcached 1.6.18.
    for mode in (b"MZ", b"Ms", b"Ma", b"Me"):
        conn.call(b"ms m 1 %s\r\nx\r\n" % mode,
                  b"CLIENT_ERROR invalid mode for ms M token\r\n")


def test_ms_I_flag(conn):
    conn.call(b"ms m 1 I\r\nq\r\n", b"HD\r\n")
    conn.call(b"mg m v\r\n", b"VA 1\r\nq\r\n")


def test_ms_cas_k_O_and_q(conn):
    conn.call(b"ms m 1 C1\r\nx\r\n", b"NF\r\n")
    conn.call(b"ms m 2 k Oxy\r\nab\r\n", b"HD km Oxy\r\n")
    cas = conn.gets_cas(b"m")
    conn.call(b"ms m 1 C%d\r\nx\r\n" % (cas + 1), b"EX\r\n")
    conn.call(b"ms m 1 C%d\r\nx\r\n" % cas, b"HD\r\n")
    conn.call(b"ms m 1 q\r\ny\r\nmn\r\n", b"MN\r\n")
    conn.call(b"mg m v\r\n", b"VA 1\r\ny\r\n")


def test_ms_errors(conn):
    conn.call(b"ms m 2\r\nabc\r\n",
              b"CLIENT_ERROR bad data chunk\r\nERROR\r\n")
    conn.call(b"ms m x\r\nab\r\n", BAD_FORMAT + ERROR)
    conn.call(b"ms m\r\n", BAD_FORMAT)
    n = 2 * ITEM_MAX
    conn.call(b"ms m %d T0\r\n" % n + b"v" * n + b"\r\nmn\r\n",
              TOO_LARGE + b"MN\r\n")


# ------------------------------------------------------- meta: md ma mn me

def test_md(conn):
    conn.call(b"md m\r\n", b"NF\r\n")
    conn.call(b"md m q\r\n", b"NF\r\n")          # q hides only HD
    conn.call(b"set m 0 0 1\r\nx\r\n", STORED)
    conn.call(b"md m q\r\nmn\r\n", b"MN\r\n")
    conn.call(b"get m\r\n", END)
    conn.call(b"set m 0 0 1\r\nx\r\n", STORED)
    conn.call(b"md m k Oz\r\n", b"HD km Oz\r\n")
    conn.call(b"set m 0 0 1\r\nx\r\n", STORED)
    cas = conn.gets_cas(b"m")
    conn.call(b"md m C%d\r\n" % (cas + 1), b"EX\r\n")
    conn.call(b"md m C%d\r\n" % cas, b"HD\r\n")
    conn.call(b"md m zz\r\n", b"CLIENT_ERROR invalid or duplicate flag\r\n")


def test_ma_autovivify_delta_and_modes(conn):
    conn.call(b"ma n\r\n", b"NF\r\n")
    conn.call(b"ma n N0 J13\r\n", b"HD\r\n")           # created as 13
    conn.call(b"ma n v\r\n", b"VA 2\r\n14\r\n")
    conn.call(b"ma n MD D5 v\r\n", b"VA 1\r\n9\r\n")
    conn.call(b"ma n MI D100 v\r\n", b"VA 3\r\n109\r\n")
    conn.call(b"ma n M- D1000 v\r\n", b"VA 1\r\n0\r\n")  # floors at 0
    conn.call(b"ma n M+ v\r\n", b"VA 1\r\n1\r\n")
    conn.call(b"ma n MD\r\n", b"HD\r\n")
    conn.call(b"ma n MI\r\n", b"HD\r\n")
    conn.call(b"ma n q\r\nmn\r\n", b"MN\r\n")
    # 109 -> 2 in place: the length stays 3, blank-padded.
    conn.call(b"get n\r\n", b"VALUE n 0 3\r\n2  \r\nEND\r\n")
    # "MA" is not a mode of ma (its modes are I + D -, upper case only).
    for mode in (b"MA", b"Md", b"Mi"):
        conn.call(b"ma n %s\r\n" % mode,
                  b"CLIENT_ERROR invalid mode for ma M token\r\n")


def test_ma_autovivify_returns_J_and_N_sets_ttl(conn):
    conn.call(b"ma a N0 J13 v\r\n", b"VA 2\r\n13\r\n")
    conn.call(b"ma a N0 J13 v\r\n", b"VA 2\r\n14\r\n")
    conn.call(b"ma b N100 v t\r\n", b"VA 1 t100\r\n0\r\n")


def test_ma_wraps_and_refuses_non_numbers(conn):
    conn.call(b"set n 0 0 20\r\n18446744073709551615\r\n", STORED)
    conn.call(b"ma n v\r\n", b"VA 1\r\n0\r\n")
    conn.call(b"set s 0 0 1\r\nx\r\n", STORED)
    conn.send(b"ma s\r\n")
    assert conn.readline().startswith(b"CLIENT_ERROR ")


def test_mn(conn):
    conn.call(b"mn\r\n", b"MN\r\n")


def test_me(conn):
    conn.call(b"me nope\r\n", b"EN\r\n")
    conn.call(b"set e 0 0 1\r\nx\r\n", STORED)
    conn.send(b"me e\r\n")
    line = conn.readline()
    m = re.fullmatch(rb"ME e((?: \w+=\S+)+)\r\n", line)
    assert m, line
    fields = dict(f.split(b"=") for f in m.group(1).split())
    for name in (b"exp", b"la", b"cas", b"fetch", b"cls", b"size"):
        assert name in fields, line
    assert fields[b"exp"] == b"-1" and fields[b"fetch"] == b"no", line


# ------------------------------------------------------------------ stats

INT_FIELDS = ("pid", "uptime", "time", "pointer_size", "curr_items",
              "total_items", "bytes", "curr_connections",
              "total_connections", "connection_structures", "cmd_get",
              "cmd_set", "get_hits", "get_misses", "evictions",
              "bytes_read", "bytes_written", "limit_maxbytes", "threads")
FLOAT_FIELDS = ("rusage_user", "rusage_system")


def test_stats_fields_and_types(conn, server):
    st = conn.stats()
    for name in INT_FIELDS:
        assert re.fullmatch(r"\d+", st.get(name, "")), (name, st.get(name))
    for name in FLOAT_FIELDS:
        assert re.fullmatch(r"\d+\.\d{6}", st.get(name, "")), (name,
                                                              st.get(name))
    assert re.fullmatch(r"[0-9][^ ]*", st.get("version", "")), st
    assert int(st["pid"]) == server.pid
    assert int(st["pointer_size"]) == 64
    assert abs(int(st["time"]) - time.time()) < 5
    assert int(st["limit_maxbytes"]) == 64 << 20
    assert int(st["threads"]) == 4
    assert int(st["curr_connections"]) >= 1


def test_stats_counters_follow_the_commands(conn, server):
    before = conn.stats()
    conn.call(b"set a 0 0 3\r\nabc\r\n", STORED)
    conn.call(b"get a nope\r\n", b"VALUE a 0 3\r\nabc\r\nEND\r\n")
    other = server.connect()
    other.call(b"mn\r\n", b"MN\r\n")
    after = conn.stats()
    other.close()

    def delta(name):
        return int(after[name]) - int(before[name])
    assert delta("cmd_set") == 1
    assert delta("cmd_get") == 2
    assert delta("get_hits") == 1
    assert delta("get_misses") == 1
    assert delta("total_items") == 1
    # memcached reclaims flushed items lazily: curr_items may still count
    # items flushed before this test.
    assert int(after["curr_items"]) >= 1
    assert int(after["bytes"]) > 0
    assert delta("total_connections") == 1
    assert int(after["curr_connections"]) >= 2
    assert delta("bytes_read") > 0 and delta("bytes_written") > 0


def test_stats_settings_defaults(conn, server):
    st = conn.stats(b"settings")
    assert st["cas_enabled"] == "yes"
    assert st["tcp_backlog"] == "1024"
    # memcached: auto-negotiate; a server without the binary protocol
    # may honestly say ascii.
    assert st["binding_protocol"] in ("auto-negotiate", "ascii")
    assert st["item_size_max"] == str(ITEM_MAX)
    assert st["maxbytes"] == str(64 << 20)
    assert st["maxconns"] == "1024"
    assert st["tcpport"] == str(server.port)
    assert st["evictions"] == "on"


def test_stats_items_slabs_conns_are_well_formed(conn):
    conn.call(b"set a 0 0 3\r\nabc\r\nset b 0 0 600\r\n" + b"b" * 600
              + b"\r\n", STORED * 2)
    for sub in (b"items", b"slabs", b"conns"):
        st = conn.stats(sub)          # checks every line and the END
        assert st, sub
        for name, value in st.items():
            assert value != "", (sub, name)


def test_stats_reset_and_unknown(conn):
    conn.call(b"stats reset\r\n", b"RESET\r\n")
    conn.call(b"stats nosuch\r\n", ERROR)
