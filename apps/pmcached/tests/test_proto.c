/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_proto.c - unit tests of the memcached protocol parser and its
 * reply helpers: every command and error, every split of the input, and
 * pipelined requests in one buffer.
 */
#include <setjmp.h> /* cmocka needs it; the project code never uses it */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto.h"

static struct mc_limits lim;
static struct mc_request req;

static int parse(const char *s, size_t *consumed)
{
	mc_limits_default(&lim);
	return mc_parse(s, strlen(s), &lim, &req, consumed);
}

/* All of in is one request, parsed into req. */
static void parses(const char *in)
{
	size_t used;
	assert_int_equal(parse(in, &used), MC_OK);
	assert_int_equal(used, strlen(in));
}

static void expect_error(const char *in, const char *err, size_t swallow)
{
	size_t used;
	assert_int_equal(parse(in, &used), MC_ERROR);
	assert_string_equal(req.error, err);
	assert_int_equal(req.swallow, swallow);
	assert_true(used <= strlen(in));
}

static bool str_is(struct mc_str s, const char *want)
{
	return s.len == strlen(want) && memcmp(s.p, want, s.len) == 0;
}

static void storage_commands_parse_every_field(void **state)
{
	size_t used;
	const char *in = "cas k 7 -1 3 99 noreply\r\nabc\r\nrest";
	assert_int_equal(parse(in, &used), MC_OK);
	assert_int_equal(req.cmd, MC_CMD_CAS);
	assert_true(str_is(req.key, "k"));
	assert_int_equal(req.flags, 7);
	assert_int_equal(req.exptime, -1);
	assert_int_equal(req.bytes, 3);
	assert_int_equal(req.cas, 99);
	assert_true(req.noreply);
	assert_true(str_is(req.data, "abc"));
	assert_int_equal(used, strlen(in) - 4);
	const char *cmds[] = {"set", "add", "replace", "append", "prepend"};
	for (size_t i = 0; i < 5; i++) {
		char line[64];
		snprintf(line, sizeof(line), "%s k 0 0 1\nx\r\n", cmds[i]);
		assert_int_equal(parse(line, &used), MC_OK);
		assert_string_equal(mc_cmd_name(req.cmd), cmds[i]);
		assert_false(req.noreply);
	}
}

static void storage_errors_are_memcacheds(void **state)
{
	const char *fmt = "CLIENT_ERROR bad command line format";
	char big[400];
	snprintf(big, sizeof(big), "set %0251d 0 0 1\r\nx\r\n", 0);
	expect_error(big, fmt, 0);
	expect_error("set k 0 0 -1\r\n", fmt, 0);
	expect_error("set k x 0 1\r\nx\r\n", fmt, 0);
	expect_error("set k 0 0 2147483646\r\n", fmt, 0);
	expect_error("cas k 0 0 1 -1\r\nx\r\n", fmt, 0);
	expect_error("set k 0 0\r\n", "ERROR", 0);
	expect_error("set k 0 0 1\r\nxyz\r\n", "CLIENT_ERROR bad data chunk",
	             0);
	expect_error("set k 0 0 2000000\r\n",
	             "SERVER_ERROR object too large for cache", 2000002);
	size_t used;
	/* The data block is its length plus two bytes, whatever they are;
	 * the rest ("\r\n") is parsed as the next line. */
	const char *in = "set k 0 0 1 noreply\r\nxyz\r\n";
	assert_int_equal(parse(in, &used), MC_ERROR);
	assert_true(req.error_quiet);
	assert_int_equal(used, strlen(in) - 2);
}

static void item_size_limit_matches_memcacheds_header(void **state)
{
	size_t used;
	char line[64];
	size_t fit = 1024 * 1024 - 48 - 8 - 2 - 2;
	snprintf(line, sizeof(line), "set k 0 0 %zu\r\n", fit);
	assert_int_equal(parse(line, &used), MC_NEED_MORE);
	snprintf(line, sizeof(line), "set k 0 0 %zu\r\n", fit + 1);
	assert_int_equal(parse(line, &used), MC_ERROR);
	assert_int_equal(used, strlen(line));
	assert_int_equal(req.swallow, fit + 3);
}

static void get_lists_every_key(void **state)
{
	size_t used;
	char line[1200] = "gets";
	for (int i = 0; i < 100; i++)
		snprintf(line + strlen(line), 16, " k%d", i);
	strcat(line, "\r\n");
	assert_int_equal(parse(line, &used), MC_OK);
	assert_int_equal(req.cmd, MC_CMD_GETS);
	assert_int_equal(req.nkeys, 100);
	size_t pos = 0, n = 0;
	struct mc_str k;
	while (mc_key_next(&req, &pos, &k)) {
		char want[8];
		snprintf(want, sizeof(want), "k%zu", n++);
		assert_true(str_is(k, want));
	}
	assert_int_equal(n, 100);
	parses("gat 10 a b\n");
	assert_int_equal(req.exptime, 10);
	assert_int_equal(req.nkeys, 2);
	parses("gat 10\r\n");
	assert_int_equal(req.nkeys, 0);
	expect_error("gat x a\r\n", "CLIENT_ERROR invalid exptime argument", 0);
	expect_error("get\r\n", "ERROR", 0);
}

static void other_commands_parse(void **state)
{
	size_t used;
	parses("delete k 0\r\n");
	assert_int_equal(req.cmd, MC_CMD_DELETE);
	expect_error("delete k 1\r\n", "CLIENT_ERROR bad command line format."
	             "  Usage: delete <key> [noreply]", 0);
	parses("incr k 18446744073709551615\r\n");
	assert_int_equal(req.delta, UINT64_MAX);
	expect_error("decr k 18446744073709551616\r\n",
	             "CLIENT_ERROR invalid numeric delta argument", 0);
	expect_error("incr k -1\r\n",
	             "CLIENT_ERROR invalid numeric delta argument", 0);
	parses("touch k 5 noreply\r\n");
	assert_true(req.noreply && req.exptime == 5);
	parses("flush_all 9 noreply\r\n");
	assert_true(req.has_delay && req.delay == 9 && req.noreply);
	expect_error("flush_all x\r\n", "CLIENT_ERROR invalid exptime argument",
	             0);
	parses("verbosity 2\r\n");
	assert_int_equal(req.verbosity, 2);
	parses("stats slabs\r\n");
	assert_true(str_is(req.arg, "slabs"));
	expect_error("stats nosuch\r\n", "ERROR", 0);
	expect_error("shutdown\r\n", "ERROR: shutdown not enabled", 0);
	lim.shutdown_enabled = true;
	assert_int_equal(mc_parse("shutdown graceful\r\n", 19, &lim, &req,
	                          &used), MC_OK);
	assert_true(str_is(req.arg, "graceful"));
	assert_int_equal(mc_parse("shutdown x\r\n", 12, &lim, &req, &used),
	                 MC_ERROR);
	assert_string_equal(req.error, "CLIENT_ERROR invalid shutdown mode");
	parses("quit\r\n");
	parses("version\r\n");
	expect_error("bogus\r\n", "ERROR", 0);
	expect_error("\r\n", "ERROR", 0);
}

/* stats, lru_crawler and slabs pass their tokens on to their executors
 * (memcached checks them there, with errors of their own); only slabs
 * automove reads a noreply. */
static void admin_commands_pass_their_arguments(void **state)
{
	parses("stats detail on extra more\r\n");
	assert_int_equal(req.cmd, MC_CMD_STATS);
	assert_int_equal(req.nargs, 4);
	assert_true(str_is(req.args[0], "detail") && str_is(req.args[1], "on"));
	assert_true(str_is(req.args[2], "extra"));
	parses("lru_crawler metadump 1,2\r\n");
	assert_int_equal(req.cmd, MC_CMD_LRU_CRAWLER);
	assert_int_equal(req.nargs, 2);
	assert_true(str_is(req.args[1], "1,2"));
	parses("lru_crawler enable noreply\r\n");
	assert_true(!req.noreply && req.nargs == 2);
	parses("slabs automove 1 noreply\r\n");
	assert_true(req.cmd == MC_CMD_SLABS && req.noreply && req.nargs == 3);
	parses("slabs reassign 1 noreply\r\n");
	assert_false(req.noreply);
	parses("lru_crawler\r\n");
	assert_int_equal(req.nargs, 0);
}

static void meta_commands_parse_flags(void **state)
{
	parses("mg a k v Oxyz q T30\r\n");
	assert_int_equal(req.cmd, MC_CMD_MG);
	assert_int_equal(req.nmflags, 5);
	assert_true(req.quiet);
	assert_true(str_is(req.opaque, "Oxyz"));
	assert_true(str_is(mc_meta_find(&req, 'T')->tok, "30"));
	parses("ms YWJj 2 b MA F5\r\nab\r\n");
	assert_int_equal(req.mode, 'A');
	assert_int_equal(req.flags, 5);
	assert_int_equal(req.bkey_len, 3);
	assert_memory_equal(req.bkey, "abc", 3);
	assert_true(str_is(req.data, "ab"));
	/* memcached's decoder skips bytes outside the alphabet. */
	parses("mg Y.W.J.j b\r\n");
	assert_int_equal(req.bkey_len, 3);
	parses("mn\r\n");
	assert_int_equal(req.cmd, MC_CMD_MN);
	parses("ma k MD D5 J1 N0\r\n");
	assert_int_equal(req.mode, 'D');
}

static void meta_errors_are_memcacheds(void **state)
{
	expect_error("mg a zz\r\n", "CLIENT_ERROR invalid flag", 0);
	expect_error("mg a v v\r\n", "CLIENT_ERROR duplicate flag", 0);
	expect_error("mg a Nx\r\n",
	             "CLIENT_ERROR bad token in command line format", 0);
	expect_error("mg a= b\r\n", "CLIENT_ERROR error decoding key", 0);
	expect_error("mg Y=== b\r\n", "CLIENT_ERROR error decoding key", 0);
	char key[300];
	snprintf(key, sizeof(key), "mg %0252d b\r\n", 0);
	expect_error(key, "CLIENT_ERROR bad command line format", 0);
	expect_error("md a zz\r\n", "CLIENT_ERROR invalid or duplicate flag", 0);
	expect_error("ma a MZ\r\n", "CLIENT_ERROR invalid mode for ma M token",
	             0);
	expect_error("ms a 2 MZ\r\nab\r\n",
	             "CLIENT_ERROR invalid mode for ms M token", 4);
	expect_error("ms a 2 Mset\r\nab\r\n",
	             "CLIENT_ERROR incorrect length for M token", 4);
	expect_error("ms a x\r\n", "CLIENT_ERROR bad command line format", 0);
	expect_error("ms a 2\r\nabc\r\n", "CLIENT_ERROR bad data chunk", 0);
	expect_error("mg a O0 O1 O2 O3 O4 O5 O6 O7 O8 O9 Oa Ob Oc Od Oe Of Og "
	             "Oh\r\n", "CLIENT_ERROR options flags are too long", 0);
	expect_error("me\r\n", "CLIENT_ERROR bad command line format", 0);
	expect_error("mz a\r\n", "ERROR", 0);
	expect_error("mg\r\n", "ERROR", 0);
}

static void long_lines_and_http_requests_close(void **state)
{
	size_t used;
	char *buf = malloc(3000);
	memset(buf, 'x', 3000);
	assert_int_equal(mc_parse(buf, 2048, &lim, &req, &used), MC_NEED_MORE);
	assert_int_equal(mc_parse(buf, 3000, &lim, &req, &used), MC_CLOSE);
	assert_int_equal(parse("GET / HTTP/1.1\r\n", &used), MC_CLOSE);
	assert_int_equal(parse("gett HTTP/1.1\r\n", &used), MC_ERROR);
	memcpy(buf, "get ", 4);
	assert_int_equal(mc_parse(buf, 3000, &lim, &req, &used), MC_NEED_MORE);
	assert_int_equal(used, 0);
	free(buf);
}

/* Results of feeding in[] in pieces of step bytes, as a server would. */
static size_t feed(const char *in, size_t len, size_t step, char *out,
                   size_t cap)
{
	size_t off = 0, avail = step < len ? step : len, n = 0;
	for (int guard = 0; guard < 10000; guard++) {
		size_t used;
		int rc = mc_parse(in + off, avail - off, &lim, &req, &used);
		assert_true(used <= avail - off);
		if (rc == MC_NEED_MORE) {
			assert_int_equal(used, 0);
			if (avail == len)
				break;
			avail = avail + step < len ? avail + step : len;
			continue;
		}
		n += (size_t)snprintf(out + n, cap - n, "%d %s %zu %s|", rc,
		                      mc_cmd_name(req.cmd), used,
		                      req.error ? req.error : "");
		off += used + (rc == MC_ERROR ? req.swallow : 0);
		if (rc == MC_CLOSE || off >= len)
			break;
		if (avail < off)
			avail = off;
	}
	return n;
}

static void every_split_gives_the_same_requests(void **state)
{
	static const char in[] =
		"set a 0 0 3\r\nabc\r\nget a b c\nmg a v k Ox\r\n"
		"ms b 2 T1 T1\r\nxy\r\nincr a x\r\ndelete a 0\r\n"
		"set c 0 0 1\r\nxyz\r\nms c 1\r\nz\r\nmn\r\nversion\r\n";
	char whole[2048], part[2048];
	mc_limits_default(&lim);
	size_t n = feed(in, sizeof(in) - 1, sizeof(in), whole, sizeof(whole));
	assert_true(n > 0);
	for (size_t step = 1; step < sizeof(in); step++) {
		size_t m = feed(in, sizeof(in) - 1, step, part, sizeof(part));
		assert_int_equal(m, n);
		assert_memory_equal(part, whole, n);
	}
}

static void pipelined_requests_are_parsed_in_order(void **state)
{
	static const char in[] = "get a\r\nset b 0 0 1\r\nx\r\nmn\r\nbogus\r\n";
	const enum mc_cmd want[] = {MC_CMD_GET, MC_CMD_SET, MC_CMD_MN};
	size_t off = 0, used;
	mc_limits_default(&lim);
	for (size_t i = 0; i < 3; i++) {
		int rc = mc_parse(in + off, sizeof(in) - 1 - off, &lim, &req, &used);
		assert_int_equal(rc, MC_OK);
		assert_int_equal(req.cmd, want[i]);
		off += used;
	}
	assert_int_equal(mc_parse(in + off, sizeof(in) - 1 - off, &lim, &req,
	                          &used), MC_ERROR);
	assert_int_equal(off + used, sizeof(in) - 1);
}

static void replies_are_formatted_like_memcached(void **state)
{
	char out[128];
	struct mc_str key = {"k", 1}, data = {"abc", 3};
	size_t n = mc_reply_value(out, sizeof(out), key, 5, data, true, 9);
	assert_int_equal(n, strlen("VALUE k 5 3 9\r\nabc\r\n"));
	assert_memory_equal(out, "VALUE k 5 3 9\r\nabc\r\n", n);
	assert_int_equal(mc_reply_value(out, 10, key, 5, data, false, 0), 0);
	n = mc_reply_number(out, sizeof(out), UINT64_MAX);
	assert_memory_equal(out, "18446744073709551615\r\n", n);
	n = mc_reply_line(out, sizeof(out), "STORED");
	assert_memory_equal(out, "STORED\r\n", n);
	parses("mg k s v t f c k Ox\r\n");
	struct mc_meta_values v = {.cas = 7, .flags = 3, .ttl = -1,
	                           .data = data};
	n = mc_reply_meta(out, sizeof(out), &req, "VA", &v);
	const char *want = "VA 3 s3 t-1 f3 c7 kk Ox\r\nabc\r\n";
	assert_int_equal(n, strlen(want));
	assert_memory_equal(out, want, n);
	n = mc_reply_meta(out, sizeof(out), &req, "EN", NULL);
	assert_memory_equal(out, "EN kk Ox\r\n", n);
	parses("md Y.W.J.jZA== b k\r\n");
	n = mc_reply_meta(out, sizeof(out), &req, "NF", NULL);
	assert_memory_equal(out, "NF kYWJjZA== b\r\n", n);
	parses("ms k 1 q\r\nx\r\n");
	assert_int_equal(mc_reply_meta(out, sizeof(out), &req, "HD", NULL), 0);
	assert_int_equal(mc_reply_meta(out, sizeof(out), &req, "NS", NULL), 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(storage_commands_parse_every_field),
		cmocka_unit_test(storage_errors_are_memcacheds),
		cmocka_unit_test(item_size_limit_matches_memcacheds_header),
		cmocka_unit_test(get_lists_every_key),
		cmocka_unit_test(other_commands_parse),
		cmocka_unit_test(admin_commands_pass_their_arguments),
		cmocka_unit_test(meta_commands_parse_flags),
		cmocka_unit_test(meta_errors_are_memcacheds),
		cmocka_unit_test(long_lines_and_http_requests_close),
		cmocka_unit_test(every_split_gives_the_same_requests),
		cmocka_unit_test(pipelined_requests_are_parsed_in_order),
		cmocka_unit_test(replies_are_formatted_like_memcached),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
