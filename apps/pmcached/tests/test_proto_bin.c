/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_proto_bin.c - unit tests of the binary protocol parser and its
 * response headers: every opcode's fields and shape, the errors and what
 * they swallow or close, quiet opcodes, every split of the input, and
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
static struct mc_bin_request req;

struct pkt {
	unsigned char b[8192];
	size_t n;
};

static void put_be(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
}

/* A request with the given parts; bodylen is the true one if ~0. */
static void build(struct pkt *k, uint8_t op, const void *ext, uint8_t el,
                  const char *key, const void *val, size_t vl,
                  uint32_t bodylen)
{
	size_t kl = key ? strlen(key) : 0;
	memset(k->b, 0, MC_BIN_HEADER);
	k->b[0] = MC_BIN_REQ;
	k->b[1] = op;
	put_be(k->b + 2, kl, 2);
	k->b[4] = el;
	put_be(k->b + 8, bodylen != ~0u ? bodylen : el + kl + vl, 4);
	memcpy(k->b + 12, "\x01\x02\x03\x04", 4);
	put_be(k->b + 16, 0x1122334455667788ull, 8);
	k->n = MC_BIN_HEADER;
	if (el) /* memcpy's arguments may not be NULL, even for 0 bytes */
		memcpy(k->b + k->n, ext, el);
	k->n += el;
	if (kl)
		memcpy(k->b + k->n, key, kl);
	k->n += kl;
	if (vl)
		memcpy(k->b + k->n, val, vl);
	k->n += vl;
}

static int parse(const struct pkt *k, size_t *used)
{
	mc_limits_default(&lim);
	return mc_bin_parse((const char *)k->b, k->n, &lim, &req, used);
}

static bool str_is(struct mc_str s, const void *want, size_t n)
{
	return s.len == n && memcmp(s.p, want, n) == 0;
}

/* k must be one whole request, parsed into req. */
static void parses(const struct pkt *k)
{
	size_t used;
	assert_int_equal(parse(k, &used), MC_OK);
	assert_int_equal(used, k->n);
}

/* k must fail with status; close or swallow as given. */
static void fails(const struct pkt *k, uint16_t status, bool close,
                  size_t swallow)
{
	size_t used;
	assert_int_equal(parse(k, &used), MC_ERROR);
	assert_int_equal(req.status, status);
	assert_int_equal(req.close, close);
	assert_int_equal(req.swallow, swallow);
	assert_true(used <= k->n);
}

static void storage_opcodes_read_every_field(void **state)
{
	struct pkt k;
	unsigned char ext[8];
	put_be(ext, 0xdeadbeef, 4);
	put_be(ext + 4, 3600, 4);
	build(&k, MC_BIN_SETQ, ext, 8, "key", "value", 5, ~0u);
	parses(&k);
	assert_int_equal(req.opcode, MC_BIN_SETQ);
	assert_int_equal(req.cmd, MC_BIN_SET);
	assert_true(req.quiet);
	assert_int_equal(req.flags, 0xdeadbeef);
	assert_int_equal(req.exptime, 3600);
	assert_int_equal(req.cas, 0x1122334455667788ull);
	assert_memory_equal(&req.opaque, "\x01\x02\x03\x04", 4);
	assert_true(str_is(req.key, "key", 3));
	assert_true(str_is(req.value, "value", 5));
	build(&k, MC_BIN_APPEND, NULL, 0, "key", "tail", 4, ~0u);
	parses(&k);
	assert_false(req.quiet);
	assert_true(str_is(req.value, "tail", 4));
	assert_int_equal(req.flags, 0);
	(void)state;
}

static void arith_touch_and_flush_read_their_extras(void **state)
{
	struct pkt k;
	unsigned char ext[20];
	put_be(ext, 7, 8);
	put_be(ext + 8, 1000, 8);
	put_be(ext + 16, 0xffffffff, 4);
	build(&k, MC_BIN_DECREMENTQ, ext, 20, "n", NULL, 0, ~0u);
	parses(&k);
	assert_int_equal(req.cmd, MC_BIN_DECREMENT);
	assert_int_equal(req.delta, 7);
	assert_int_equal(req.initial, 1000);
	assert_int_equal(req.exptime, 0xffffffff);
	build(&k, MC_BIN_GATKQ, ext + 16, 4, "t", NULL, 0, ~0u);
	parses(&k);
	assert_int_equal(req.cmd, MC_BIN_GATK);
	assert_int_equal(req.exptime, 0xffffffff);
	build(&k, MC_BIN_FLUSH, ext + 16, 4, NULL, NULL, 0, ~0u);
	parses(&k);
	assert_true(req.has_exptime);
	build(&k, MC_BIN_FLUSHQ, NULL, 0, NULL, NULL, 0, ~0u);
	parses(&k);
	assert_false(req.has_exptime);
	(void)state;
}

static void quiet_opcodes_hide_what_memcached_hides(void **state)
{
	struct pkt k;
	build(&k, MC_BIN_GETKQ, NULL, 0, "k", NULL, 0, ~0u);
	parses(&k);
	assert_true(mc_bin_replies(&req, MC_BIN_SUCCESS));
	assert_false(mc_bin_replies(&req, MC_BIN_KEY_ENOENT));
	build(&k, MC_BIN_DELETEQ, NULL, 0, "k", NULL, 0, ~0u);
	parses(&k);
	assert_false(mc_bin_replies(&req, MC_BIN_SUCCESS));
	assert_true(mc_bin_replies(&req, MC_BIN_KEY_ENOENT));
	build(&k, MC_BIN_GET, NULL, 0, "k", NULL, 0, ~0u);
	parses(&k);
	assert_true(mc_bin_replies(&req, MC_BIN_KEY_ENOENT));
	(void)state;
}

static void shapes_memcached_refuses_close(void **state)
{
	struct pkt k;
	unsigned char ext[20] = {0};
	build(&k, MC_BIN_GET, ext, 4, "k", NULL, 0, ~0u);
	fails(&k, MC_BIN_EINVAL, true, 0);
	build(&k, MC_BIN_SET, ext, 4, "k", "v", 1, ~0u);
	fails(&k, MC_BIN_EINVAL, true, 0);
	build(&k, MC_BIN_SET, ext, 8, NULL, "v", 1, ~0u);
	fails(&k, MC_BIN_EINVAL, true, 0);
	build(&k, MC_BIN_INCREMENT, ext, 8, "k", NULL, 0, ~0u);
	fails(&k, MC_BIN_EINVAL, true, 0);
	build(&k, MC_BIN_VERSION, NULL, 0, NULL, "x", 1, ~0u);
	fails(&k, MC_BIN_EINVAL, true, 0);
	build(&k, MC_BIN_FLUSH, ext, 8, NULL, NULL, 0, ~0u);
	fails(&k, MC_BIN_EINVAL, true, 0);
	/* lengths that do not add up, a key over 250 */
	build(&k, MC_BIN_GET, NULL, 0, "ab", NULL, 0, 1);
	fails(&k, MC_BIN_UNKNOWN_COMMAND, true, 0);
	char key[252];
	memset(key, 'k', 251);
	key[251] = 0;
	build(&k, MC_BIN_GET, NULL, 0, key, NULL, 0, ~0u);
	fails(&k, MC_BIN_EINVAL, true, 0);
	key[250] = 0;
	build(&k, MC_BIN_GET, NULL, 0, key, NULL, 0, ~0u);
	parses(&k);
	(void)state;
}

static void unknown_and_sasl_swallow_as_memcached(void **state)
{
	struct pkt k;
	build(&k, 0x30, "12", 2, "abc", "xyz", 3, ~0u);
	fails(&k, MC_BIN_UNKNOWN_COMMAND, false, 8); /* the whole body */
	assert_int_equal(req.opcode, 0x30);
	build(&k, 0x30, NULL, 0, NULL, NULL, 0, 0x80000000u);
	fails(&k, MC_BIN_UNKNOWN_COMMAND, false, 0); /* negative as an int */
	build(&k, MC_BIN_SASL_AUTH, NULL, 0, "PLAIN", "secret", 6, ~0u);
	fails(&k, MC_BIN_UNKNOWN_COMMAND, false, 6); /* the value */
	build(&k, MC_BIN_SASL_LIST_MECHS, NULL, 0, NULL, NULL, 0, ~0u);
	fails(&k, MC_BIN_UNKNOWN_COMMAND, false, 0);
	build(&k, MC_BIN_SASL_LIST_MECHS, NULL, 0, "k", NULL, 0, ~0u);
	fails(&k, MC_BIN_EINVAL, true, 0);
	(void)state;
}

static void values_too_large_are_swallowed_or_closed(void **state)
{
	struct pkt k;
	unsigned char ext[8] = {0};
	size_t used;
	/* -I 1m: 56 + key + 1 + value + 2 must fit (no flags) */
	build(&k, MC_BIN_SET, ext, 8, "k", NULL, 0,
	      8 + 1 + (1u << 20) - 60);
	assert_int_equal(parse(&k, &used), MC_NEED_MORE);
	build(&k, MC_BIN_SET, ext, 8, "k", NULL, 0,
	      8 + 1 + (1u << 20) - 59);
	fails(&k, MC_BIN_E2BIG, false, (1u << 20) - 59);
	assert_true(str_is(req.key, "k", 1)); /* for SET's stale value */
	build(&k, MC_BIN_APPEND, NULL, 0, "k", NULL, 0, 0xfffffffeu);
	fails(&k, MC_BIN_E2BIG, true, 0);
	(void)state;
}

static void bad_magic_and_huge_headers_close_unanswered(void **state)
{
	struct pkt k;
	size_t used;
	build(&k, MC_BIN_NOOP, NULL, 0, NULL, NULL, 0, ~0u);
	k.b[0] = MC_BIN_RES;
	assert_int_equal(parse(&k, &used), MC_CLOSE);
	assert_int_equal(used, 0);
	build(&k, MC_BIN_GET, NULL, 0, NULL, NULL, 0, 20000);
	put_be(k.b + 2, MC_BIN_READ_BUFFER - MC_BIN_HEADER + 1, 2);
	assert_int_equal(parse(&k, &used), MC_CLOSE);
	put_be(k.b + 2, MC_BIN_READ_BUFFER - MC_BIN_HEADER, 2);
	assert_int_equal(parse(&k, &used), MC_NEED_MORE);
	(void)state;
}

/* Every opcode: a parse of a prefix is NEED_MORE, or the same result as
 * the whole input (an error or a close may come before the end). */
static void every_split_gives_the_same_request(void **state)
{
	struct pkt k;
	unsigned char ext[8] = {0, 0, 0, 1, 0, 0, 0, 2};
	build(&k, MC_BIN_SET, ext, 8, "split", "some value", 10, ~0u);
	size_t used;
	for (size_t n = 0; n < k.n; n++) {
		struct pkt cut = k;
		cut.n = n;
		assert_int_equal(parse(&cut, &used), MC_NEED_MORE);
		assert_int_equal(used, 0);
	}
	parses(&k);
	assert_true(str_is(req.value, "some value", 10));
	(void)state;
}

static void pipelined_requests_parse_in_order(void **state)
{
	struct pkt a, b, all;
	build(&a, MC_BIN_GETQ, NULL, 0, "one", NULL, 0, ~0u);
	build(&b, MC_BIN_NOOP, NULL, 0, NULL, NULL, 0, ~0u);
	memcpy(all.b, a.b, a.n);
	memcpy(all.b + a.n, b.b, b.n);
	all.n = a.n + b.n;
	size_t used;
	assert_int_equal(parse(&all, &used), MC_OK);
	assert_int_equal(used, a.n);
	assert_int_equal(req.cmd, MC_BIN_GET);
	mc_limits_default(&lim);
	assert_int_equal(mc_bin_parse((const char *)all.b + used,
	                              all.n - used, &lim, &req, &used),
	                 MC_OK);
	assert_int_equal(req.cmd, MC_BIN_NOOP);
	(void)state;
}

static void response_headers_echo_opcode_and_opaque(void **state)
{
	struct pkt k;
	unsigned char h[MC_BIN_HEADER];
	build(&k, MC_BIN_GETK, NULL, 0, "k", NULL, 0, ~0u);
	parses(&k);
	mc_bin_header(h, &req, MC_BIN_KEY_ENOENT, 4, 1, 300, 0x0102030405ull);
	static const unsigned char want[MC_BIN_HEADER] = {
		0x81, 0x0c, 0, 1, 4, 0, 0, 1, 0, 0, 1, 0x2c,
		1, 2, 3, 4, 0, 0, 0, 1, 2, 3, 4, 5};
	assert_memory_equal(h, want, sizeof(want));
	assert_string_equal(mc_bin_status_text(MC_BIN_KEY_EEXISTS),
	                    "Data exists for key.");
	assert_string_equal(mc_bin_status_text(MC_BIN_NOT_STORED),
	                    "Not stored.");
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(storage_opcodes_read_every_field),
		cmocka_unit_test(arith_touch_and_flush_read_their_extras),
		cmocka_unit_test(quiet_opcodes_hide_what_memcached_hides),
		cmocka_unit_test(shapes_memcached_refuses_close),
		cmocka_unit_test(unknown_and_sasl_swallow_as_memcached),
		cmocka_unit_test(values_too_large_are_swallowed_or_closed),
		cmocka_unit_test(bad_magic_and_huge_headers_close_unanswered),
		cmocka_unit_test(every_split_gives_the_same_request),
		cmocka_unit_test(pipelined_requests_parse_in_order),
		cmocka_unit_test(response_headers_echo_opcode_and_opaque),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
