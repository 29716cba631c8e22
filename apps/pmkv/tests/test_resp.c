/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_resp.c - unit tests of pmkv's RESP2 parser and reply builders:
 * multibulk and inline requests, sdssplitargs quoting, binary values,
 * Redis's error texts, every split of the input, pipelines, the limits,
 * string2ll's edges and the exact bytes of every reply.
 *
 * Each parse reads from an exactly sized heap copy of its input, so that
 * a read past the end shows under the sanitizers.
 */
#include <setjmp.h> /* cmocka needs it; the project code never uses it */
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "resp.h"

#define LEN(lit) (sizeof(lit) - 1) /* a literal's bytes, NULs included */

static struct resp_limits lim = RESP_LIMITS_DEFAULT;
static struct resp_req q;

static int setup(void **state)
{
	struct resp_limits def = RESP_LIMITS_DEFAULT;
	lim = def;
	resp_req_init(&q);
	return 0;
}

static int teardown(void **state)
{
	resp_req_free(&q);
	return 0;
}

/* resp_parse of in[0..n) from an exact copy, with resp.h's invariant 2
 * checked on the way. */
static int parse_into(struct resp_req *r, const char *in, size_t n,
                      size_t *used, const char **err)
{
	char *copy = malloc(n ? n : 1);
	assert_non_null(copy);
	memcpy(copy, in, n);
	*used = 12345;
	*err = "unset";
	int rc = resp_parse(copy, n, &lim, r, used, err);
	free(copy);
	if (rc == RESP_OK) {
		assert_true(*used > 0 && *used <= n);
		assert_null(*err);
		for (size_t i = 0; i < r->argc; i++)
			assert_int_equal(r->argv[i][r->argl[i]], '\0');
	} else {
		assert_int_equal(*used, 0);
		assert_int_equal(r->argc, 0);
		if (rc == RESP_MORE)
			assert_null(*err);
		else
			assert_non_null(*err);
	}
	return rc;
}

static int parse(const char *in, size_t n, size_t *used, const char **err)
{
	return parse_into(&q, in, n, used, err);
}

/* q's arguments are exactly want[0..argc), given as NUL-terminated
 * strings. */
static void expect_args(size_t argc, const char *const *want)
{
	assert_int_equal(q.argc, argc);
	for (size_t i = 0; i < argc; i++) {
		assert_int_equal(q.argl[i], strlen(want[i]));
		assert_memory_equal(q.argv[i], want[i], q.argl[i]);
	}
}

#define EXPECT_ARGS(...)                                               \
	do {                                                           \
		const char *const want_[] = {__VA_ARGS__};             \
		expect_args(sizeof(want_) / sizeof(want_[0]), want_);  \
	} while (0)

/* The first want bytes of in[0..n) are one request, inline or not. */
static void expect_parsed(const char *in, size_t n, size_t want, int inl)
{
	size_t used;
	const char *err;
	assert_int_equal(parse(in, n, &used, &err), RESP_OK);
	assert_int_equal(used, want);
	assert_int_equal(q.is_inline, inl);
}

/* The whole of a literal is one request with these arguments. */
#define EXPECT_REQUEST(lit, inl, ...)                                  \
	do {                                                           \
		expect_parsed(lit, LEN(lit), LEN(lit), inl);           \
		EXPECT_ARGS(__VA_ARGS__);                              \
	} while (0)

/* The literal begins with an empty request (no arguments) of want
 * bytes. */
#define EXPECT_EMPTY(lit, want, inl)                                   \
	do {                                                           \
		expect_parsed(lit, LEN(lit), want, inl);               \
		assert_int_equal(q.argc, 0);                           \
	} while (0)

static void expect_error(const char *in, size_t n, const char *text)
{
	size_t used;
	const char *err;
	assert_int_equal(parse(in, n, &used, &err), RESP_EPROTO);
	assert_string_equal(err, text);
}

#define EXPECT_ERROR(lit, text) expect_error(lit, LEN(lit), text)

static void expect_more(const char *in, size_t n)
{
	size_t used;
	const char *err;
	assert_int_equal(parse(in, n, &used, &err), RESP_MORE);
}

#define EXPECT_MORE(lit) expect_more(lit, LEN(lit))

/* ------------------------------------------------------------------ */

static void multibulk_request_gives_its_arguments(void **state)
{
	EXPECT_REQUEST("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", 0,
	               "SET", "key", "value");
	EXPECT_REQUEST("*1\r\n$0\r\n\r\n", 0, "");
	EXPECT_REQUEST("*2\r\n$4\r\nECHO\r\n$10\r\n0123456789\r\n", 0,
	               "ECHO", "0123456789");
}

static void empty_multibulk_is_an_empty_request(void **state)
{
	EXPECT_EMPTY("*0\r\n", 4, 0);
	EXPECT_EMPTY("*-1\r\nPING", 5, 0);
	EXPECT_EMPTY("*-10\r\n", 6, 0);
}

static void inline_request_splits_on_blanks(void **state)
{
	EXPECT_REQUEST("PING\n", 1, "PING");
	EXPECT_REQUEST("SET  key\tvalue  \r\n", 1, "SET", "key", "value");
	/* \v and \f are skipped between tokens, but kept inside one, as
	 * sdssplitargs does; a CR inside the line separates. */
	EXPECT_REQUEST("\v\fa\vb c\rd\n", 1, "a\vb", "c", "d");
	/* a CR is dropped only right before the LF */
	EXPECT_REQUEST("a\r\r\n", 1, "a");
	EXPECT_EMPTY("\r\nPING\r\n", 2, 1);
	EXPECT_EMPTY(" \t \n", 4, 1);
	EXPECT_EMPTY("\n", 1, 1);
}

static void inline_quotes_and_escapes_are_sdssplitargs(void **state)
{
	EXPECT_REQUEST("set \"a b\" 'c d'\n", 1, "set", "a b", "c d");
	EXPECT_REQUEST("\"\\n\\r\\t\\b\\a\\\\\\\"\\x41\\x4a\\x4F\\q\\'\"\n", 1,
	               "\n\r\t\b\a\\\"AJOq'");
	/* \x needs two hex digits, else it is just 'x' */
	EXPECT_REQUEST("\"\\xzz\\x4\"\n", 1, "xzzx4");
	/* single quotes only know \' */
	EXPECT_REQUEST("'it\\'s' '\\n\\x41\"'\n", 1, "it's", "\\n\\x41\"");
	EXPECT_REQUEST("\"\" '' x\n", 1, "", "", "x");
	/* a quote may open inside a token; a closing one ends the token */
	EXPECT_REQUEST("ab\"c d\" e'f'\n", 1, "abc d", "ef");
	/* a quote closed before a \v or \f is closed before a blank */
	EXPECT_REQUEST("\"a\"\vb\n", 1, "a", "b");
	/* outside quotes, a backslash is a byte like any other */
	EXPECT_REQUEST("a\\nb\n", 1, "a\\nb");

	size_t used;
	const char *err;
	const char nul[] = "\"\\x00a\" b\0c\n";
	assert_int_equal(parse(nul, LEN(nul), &used, &err), RESP_OK);
	assert_int_equal(q.argc, 2);
	assert_int_equal(q.argl[0], 2);
	assert_memory_equal(q.argv[0], "\0a", 2);
	assert_int_equal(q.argl[1], 3); /* a NUL is an ordinary byte here */
	assert_memory_equal(q.argv[1], "b\0c", 3);
	const char hi[] = "\"\\xff\\x80\"\n";
	assert_int_equal(parse(hi, LEN(hi), &used, &err), RESP_OK);
	assert_int_equal(q.argl[0], 2);
	assert_memory_equal(q.argv[0], "\xff\x80", 2);
}

static void unbalanced_quotes_are_refused(void **state)
{
	EXPECT_ERROR("set \"abc\n", RESP_E_QUOTES);
	EXPECT_ERROR("set 'abc\r\n", RESP_E_QUOTES);
	EXPECT_ERROR("\"a\"b\n", RESP_E_QUOTES);
	EXPECT_ERROR("'a'b\n", RESP_E_QUOTES);
	EXPECT_ERROR("\"a\"\"\n", RESP_E_QUOTES);
	EXPECT_ERROR("\"abc\\\"\n", RESP_E_QUOTES);  /* the quote is escaped */
	EXPECT_ERROR("\"abc\\\n", RESP_E_QUOTES);    /* a backslash, then end */
	EXPECT_ERROR("'abc\\'\n", RESP_E_QUOTES);
	/* the CR before LF is not part of the line: the quote is closed */
	EXPECT_REQUEST("\"a\"\r\n", 1, "a");
}

static void binary_values_keep_every_byte(void **state)
{
	const char in[] = "*2\r\n$3\r\nSET\r\n$7\r\na\0\r\n\r\nb\r\n";
	size_t used;
	const char *err;
	assert_int_equal(parse(in, LEN(in), &used, &err), RESP_OK);
	assert_int_equal(used, LEN(in));
	assert_int_equal(q.argc, 2);
	assert_int_equal(q.argl[1], 7);
	assert_memory_equal(q.argv[1], "a\0\r\n\r\nb", 8); /* and its NUL */
}

static void errors_are_redis_texts(void **state)
{
	EXPECT_ERROR("*abc\r\n", RESP_E_MBULK);
	EXPECT_ERROR("*\r\n", RESP_E_MBULK);
	EXPECT_ERROR("*01\r\n", RESP_E_MBULK);
	EXPECT_ERROR("*-0\r\n", RESP_E_MBULK);
	EXPECT_ERROR("*+1\r\n", RESP_E_MBULK);
	EXPECT_ERROR("* 1\r\n", RESP_E_MBULK);
	EXPECT_ERROR("*99999999999999999999\r\n", RESP_E_MBULK);
	EXPECT_ERROR("*1048577\r\n", RESP_E_MBULK); /* above max_args */
	/* the line ends at CR */
	EXPECT_ERROR("*3\n$3\r\nSET\r\n", RESP_E_MBULK);
	/* Redis's tests/unit/protocol.tcl */
	EXPECT_ERROR("*20000000\r\n", RESP_E_MBULK);
	EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n",
	             "Protocol error: expected '$', got 'f'");
	EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n", RESP_E_BULK);
	EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n",
	             RESP_E_BULK);
	EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n", RESP_E_BULK);
	EXPECT_ERROR("*1\r\n$\r\n", RESP_E_BULK);
	EXPECT_ERROR("*1\r\n$-0\r\n", RESP_E_BULK);
	EXPECT_ERROR("*1\r\n$67108865\r\n", RESP_E_BULK); /* above max_bulk */
	EXPECT_ERROR("*1\r\n\r\n", "Protocol error: expected '$', got '\r'");
	/* %c of a NUL ends the text, as Redis's sdscatvprintf cuts it */
	EXPECT_ERROR("*1\r\n\0\r\n", "Protocol error: expected '$', got '");
	for (int c = 1; c < 256; c++) { /* ':' for an integer, '*' nested */
		char in[] = "*1\r\n?1\r\nx\r\n", want[64];
		if (c == '$')
			continue;
		in[4] = (char)c;
		snprintf(want, sizeof(want),
		         "Protocol error: expected '$', got '%c'", c);
		expect_error(in, LEN(in), want);
	}
	/* the line's length is checked before its first byte */
	char big[(64 << 10) + 16];
	memset(big, '1', sizeof(big));
	big[0] = '*';
	expect_error(big, sizeof(big), RESP_E_MBULK_BIG);
	memcpy(big, "*1\r\n$", 5);
	expect_error(big, sizeof(big), RESP_E_BULK_BIG);
	big[4] = 'x';
	expect_error(big, sizeof(big), RESP_E_BULK_BIG);
	memset(big, 'a', sizeof(big));
	expect_error(big, sizeof(big), RESP_E_INLINE_BIG);
}

/* Every proper prefix of in[0..n) shorter than the point of decision is
 * RESP_MORE; from there on every prefix gives what the whole gives. */
static void expect_split_independent(const char *in, size_t n)
{
	static struct resp_req whole, part;
	size_t wused, used;
	const char *werr, *err;
	int wrc = parse_into(&whole, in, n, &wused, &werr);
	size_t k = 0;
	while (k <= n && parse_into(&part, in, k, &used, &err) == RESP_MORE)
		k++;
	if (wrc == RESP_MORE) {
		assert_true(k > n);
		return;
	}
	assert_true(k <= n);
	if (wrc == RESP_OK)
		assert_int_equal(k, wused);
	for (; k <= n; k++) {
		assert_int_equal(parse_into(&part, in, k, &used, &err), wrc);
		assert_int_equal(used, wused);
		if (wrc == RESP_EPROTO) {
			assert_string_equal(err, werr);
			continue;
		}
		assert_int_equal(part.argc, whole.argc);
		assert_int_equal(part.is_inline, whole.is_inline);
		for (size_t i = 0; i < whole.argc; i++) {
			assert_int_equal(part.argl[i], whole.argl[i]);
			assert_memory_equal(part.argv[i], whole.argv[i],
			                    whole.argl[i] + 1);
		}
	}
	resp_req_free(&whole);
	resp_req_free(&part);
}

#define EXPECT_SPLIT_INDEPENDENT(lit) expect_split_independent(lit, LEN(lit))

static void byte_at_a_time_gives_the_same_result(void **state)
{
	EXPECT_SPLIT_INDEPENDENT("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nv\0\r\nx\r\n");
	EXPECT_SPLIT_INDEPENDENT("*0\r\n");
	EXPECT_SPLIT_INDEPENDENT("*-1\r\n");
	EXPECT_SPLIT_INDEPENDENT("set \"a\\x41 b\" 'c\\'d'\r\n");
	EXPECT_SPLIT_INDEPENDENT("\r\n");
	EXPECT_SPLIT_INDEPENDENT("*2\r\n$3\r\nGET\r\n$3\r\nk"); /* MORE */
	EXPECT_SPLIT_INDEPENDENT("*x\r\n");
	EXPECT_SPLIT_INDEPENDENT("*1\r\n$1\r\nab\r\n"); /* bytes skipped */
	EXPECT_SPLIT_INDEPENDENT("*2\r\n$3\r\nGET\r\nfoo\r\n");
	EXPECT_SPLIT_INDEPENDENT("*1\r\n$-3\r\n");
	EXPECT_SPLIT_INDEPENDENT("\"unbalanced\n");
	lim.max_inline = 16;
	EXPECT_SPLIT_INDEPENDENT("0123456789abcdefgh\n");
	EXPECT_SPLIT_INDEPENDENT("*0123456789abcdefgh\r\n");
	EXPECT_SPLIT_INDEPENDENT("*1\r\n$0123456789abcdefgh\r\n");
}

static void pipelined_requests_are_parsed_in_order(void **state)
{
	const char in[] = "*1\r\n$4\r\nPING\r\nPING\r\n\r\n"
	                  "*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n*-1\r\n"
	                  "GET 'a b'\n*2\r\n$3\r\nGET\r\n$3\r\nab";
	const size_t sizes[] = {14, 6, 2, 22, 5, 10};
	const size_t args[] = {1, 1, 0, 2, 0, 2};
	size_t off = 0, used;
	const char *err;
	for (size_t i = 0; i < 6; i++) {
		assert_int_equal(parse(in + off, LEN(in) - off, &used, &err),
		                 RESP_OK);
		assert_int_equal(used, sizes[i]);
		assert_int_equal(q.argc, args[i]);
		off += used;
	}
	assert_true(resp_arg_is(&q, 1, "a b"));
	assert_int_equal(parse(in + off, LEN(in) - off, &used, &err),
	                 RESP_MORE);
	assert_int_equal(LEN(in) - off, 19);
}

/* The look-ahead of the server's hints finds what the parse finds, in the
 * input itself, and nothing where the parse finds no whole multibulk
 * request. */
static void peek_finds_the_arguments_the_parse_finds(void **state)
{
	const char in[] = "*3\r\n$3\r\nSET\r\n$2\r\nk\0\r\n$1\r\nv\r\n"
	                  "*1\r\n$4\r\nPING\r\n"
	                  "SET a b\r\n"
	                  "*2\r\n$3\r\nGET\r\n$1\r\nk\r";
	const char *argv[2];
	size_t argl[2], used = 0, pused = 0;
	const char *err;
	(void)state;
	assert_int_equal(resp_peek_args(in, LEN(in), &lim, 2, argv, argl,
	                                &pused), 3);
	assert_int_equal(parse(in, LEN(in), &used, &err), RESP_OK);
	assert_int_equal(pused, used);
	assert_ptr_equal(argv[0], in + 8);
	assert_int_equal(argl[0], 3);
	assert_int_equal(argl[1], 2);
	assert_memory_equal(argv[1], "k\0", 2);
	size_t off = used;
	/* PING has one argument, found for k = 2 too, argv[1] left alone */
	argv[1] = NULL;
	assert_int_equal(resp_peek_args(in + off, LEN(in) - off, &lim, 2, argv,
	                                argl, &pused), 1);
	assert_ptr_equal(argv[0], in + off + 8);
	assert_int_equal(argl[0], 4);
	assert_null(argv[1]);
	assert_int_equal(pused, 14);
	off += pused;
	/* an inline request is for the parse to read */
	assert_int_equal(resp_peek_args(in + off, LEN(in) - off, &lim, 1, argv,
	                                argl, &pused), -1);
	assert_int_equal(parse(in + off, LEN(in) - off, &used, &err), RESP_OK);
	off += used;
	/* a request not yet whole */
	assert_int_equal(resp_peek_args(in + off, LEN(in) - off, &lim, 1, argv,
	                                argl, &pused), -1);
	assert_int_equal(parse(in + off, LEN(in) - off, &used, &err),
	                 RESP_MORE);
	/* a malformed one, and an empty one (no arguments, a whole request) */
	assert_int_equal(resp_peek_args("*2\r\n:3\r\n", 8, &lim, 1, argv,
	                                argl, &pused), -1);
	assert_int_equal(resp_peek_args("*0\r\n", 4, &lim, 2, argv, argl,
	                                &pused), 0);
	assert_int_equal(pused, 4);
}

static void limits_bound_bulks_arguments_and_lines(void **state)
{
	lim.max_bulk = 4;
	EXPECT_REQUEST("*1\r\n$4\r\nabcd\r\n", 0, "abcd");
	EXPECT_ERROR("*1\r\n$5\r\n", RESP_E_BULK);
	lim.max_args = 2;
	EXPECT_REQUEST("*2\r\n$1\r\na\r\n$0\r\n\r\n", 0, "a", "");
	EXPECT_ERROR("*3\r\n", RESP_E_MBULK);
	/* inline requests respect both too (a pmkv addition) */
	EXPECT_REQUEST("a bcd\n", 1, "a", "bcd");
	EXPECT_ERROR("a b c\n", RESP_E_INLINE_BIG);
	EXPECT_ERROR("abcde\n", RESP_E_INLINE_BIG);
	lim.max_args = 100;
	lim.max_bulk = 100;

	lim.max_inline = 8;
	EXPECT_REQUEST("1234567\r\n", 1, "1234567"); /* LF at offset 8 */
	EXPECT_MORE("12345678");
	EXPECT_ERROR("123456789", RESP_E_INLINE_BIG);
	/* refused even when the end has arrived, as a byte-at-a-time
	 * reader would have refused it */
	EXPECT_ERROR("12345678\r\n", RESP_E_INLINE_BIG);
}

static void header_lines_are_bounded_by_max_inline(void **state)
{
	lim.max_inline = 8;
	/* CR at 8: read, > max_args */
	EXPECT_ERROR("*1234567\r\n", RESP_E_MBULK);
	EXPECT_ERROR("*12345678\r\n", RESP_E_MBULK_BIG);
	EXPECT_MORE("*1234567");
	EXPECT_ERROR("*12345678", RESP_E_MBULK_BIG);
	lim.max_bulk = 10000000;
	EXPECT_MORE("*1\r\n$1000000\r\n");
	EXPECT_ERROR("*1\r\n$10000000\r\n", RESP_E_BULK_BIG);
	EXPECT_ERROR("*1\r\n$10000000", RESP_E_BULK_BIG);
	EXPECT_MORE("*1\r\n$1000000");
}

/* The byte after a header's CR and the two after a bulk's data are
 * skipped unread, as Redis skips them. */
static void unchecked_line_end_bytes_are_skipped_like_redis(void **state)
{
	EXPECT_REQUEST("*1\rX$3\rYfooZW", 0, "foo");
	size_t used;
	const char *err;
	assert_int_equal(parse("*1\r\n$3\r\nfooXYPING\n", 18, &used, &err),
	                 RESP_OK);
	assert_int_equal(used, 13);
	EXPECT_MORE("*1\r");
	EXPECT_MORE("*1\r\n$3\r\nfoo\r");
}

static void incomplete_requests_need_more(void **state)
{
	EXPECT_MORE("");
	EXPECT_MORE("*");
	EXPECT_MORE("*2\r\n");
	EXPECT_MORE("*2\r\n$3\r\nGET\r\n");
	EXPECT_MORE("*2\r\n$3\r\nGET\r\n$3");
	EXPECT_MORE("*2\r\n$3\r\nGET\r\n$3\r\nke");
	EXPECT_MORE("*1\r\nGET"); /* not yet a line: no error yet */
	EXPECT_MORE("GET key");
	EXPECT_MORE("\"unbalanced");
	/* a 60 MiB bulk announced: no allocation, no scan, just MORE */
	EXPECT_MORE("*1\r\n$62914560\r\nabc");
}

static void storage_of_a_huge_request_is_given_back(void **state)
{
	size_t n = (1u << 20) + 32, used;
	const char *err;
	char *in = malloc(n);
	assert_non_null(in);
	int h = snprintf(in, n, "*1\r\n$%zu\r\n", (size_t)(1u << 20));
	memset(in + h, 'v', 1u << 20);
	memcpy(in + h + (1u << 20), "\r\n", 2);
	assert_int_equal(parse(in, (size_t)h + (1u << 20) + 2, &used, &err),
	                 RESP_OK);
	assert_true(q.store_cap >= (1u << 20) + 1);
	free(in);
	EXPECT_REQUEST("*1\r\n$3\r\nGET\r\n", 0, "GET");
	assert_int_equal(q.store_cap, 64u << 10);
}

/* Arguments for the helpers, parsed from one multibulk request. */
static void parse_args(const char *const *args, const size_t *lens,
                       size_t argc)
{
	struct resp_out o;
	size_t used;
	const char *err;
	resp_out_init(&o);
	resp_add_array(&o, (long long)argc);
	for (size_t i = 0; i < argc; i++)
		resp_add_bulk(&o, args[i], lens ? lens[i] : strlen(args[i]));
	assert_false(o.oom);
	assert_int_equal(parse(o.p, o.n, &used, &err), RESP_OK);
	assert_int_equal(used, o.n);
	assert_int_equal(q.argc, argc);
	resp_out_free(&o);
}

static void arg_ll_is_string2ll(void **state)
{
	static const char *const good[] = {
		"0", "1", "-1", "9223372036854775807",
		"-9223372036854775808", "1234567890"};
	static const long long want[] = {
		0, 1, -1, LLONG_MAX, LLONG_MIN, 1234567890};
	static const char *const bad[] = {
		"", "-", "-0", "01", "00", "+1", " 1", "1 ", "1a", "0x10",
		"9223372036854775808", "-9223372036854775809",
		"18446744073709551616", "99999999999999999999999", "--1",
		"1.0"};
	long long v;
	parse_args(good, NULL, 6);
	for (size_t i = 0; i < 6; i++) {
		v = 42;
		assert_int_equal(resp_arg_ll(&q, i, &v), 0);
		assert_true(v == want[i]);
	}
	assert_int_equal(resp_arg_ll(&q, 6, &v), -1);
	parse_args(bad, NULL, 16);
	for (size_t i = 0; i < 16; i++)
		assert_int_equal(resp_arg_ll(&q, i, &v), -1);
	const char *const nul[] = {"1\0", "\0"};
	const size_t nul_len[] = {2, 1};
	parse_args(nul, nul_len, 2);
	assert_int_equal(resp_arg_ll(&q, 0, &v), -1);
	assert_int_equal(resp_arg_ll(&q, 1, &v), -1);
}

static void arg_is_compares_ascii_letters_without_case(void **state)
{
	const char *const args[] = {"SeT", "sets", "se", "set\0", "[", "\xc9"};
	const size_t lens[] = {3, 4, 2, 4, 1, 1};
	parse_args(args, lens, 6);
	assert_true(resp_arg_is(&q, 0, "set"));
	assert_true(resp_arg_is(&q, 0, "SET"));
	assert_false(resp_arg_is(&q, 1, "set"));
	assert_false(resp_arg_is(&q, 2, "set"));
	assert_false(resp_arg_is(&q, 3, "set")); /* binary: length counts */
	assert_false(resp_arg_is(&q, 4, "{"));   /* not letters */
	assert_false(resp_arg_is(&q, 5, "\xe9")); /* ASCII only */
	assert_false(resp_arg_is(&q, 6, "set"));  /* past argc */
}

#define EXPECT_OUT(o, lit)                                             \
	do {                                                           \
		assert_false((o)->oom);                                \
		assert_int_equal((o)->n, LEN(lit));                    \
		assert_memory_equal((o)->p, lit, LEN(lit));            \
		resp_out_reset(o);                                     \
	} while (0)

static void replies_are_exact_bytes(void **state)
{
	struct resp_out o;
	resp_out_init(&o);
	resp_add_simple(&o, "OK");
	EXPECT_OUT(&o, "+OK\r\n");
	resp_add_int(&o, 0);
	resp_add_int(&o, -1);
	resp_add_int(&o, LLONG_MIN);
	resp_add_int(&o, LLONG_MAX);
	EXPECT_OUT(&o, ":0\r\n:-1\r\n:-9223372036854775808\r\n"
	               ":9223372036854775807\r\n");
	resp_add_bulk(&o, "a\0\r\nb", 5);
	resp_add_bulk(&o, NULL, 0);
	resp_add_null(&o);
	EXPECT_OUT(&o, "$5\r\na\0\r\nb\r\n$0\r\n\r\n$-1\r\n");
	resp_add_array(&o, 2);
	resp_add_array(&o, 0);
	resp_add_array(&o, -1);
	EXPECT_OUT(&o, "*2\r\n*0\r\n*-1\r\n");
	resp_add_error(&o, "ERR unknown command '%s', with args beginning "
	               "with: %s", "FOO", "'a' ");
	EXPECT_OUT(&o, "-ERR unknown command 'FOO', with args beginning "
	               "with: 'a' \r\n");
	resp_add_error(&o, "WRONGTYPE %d", 7);
	EXPECT_OUT(&o, "-WRONGTYPE 7\r\n");

	size_t cap = o.cap;
	char big[100000];
	memset(big, 'z', sizeof(big));
	resp_add_bulk(&o, big, sizeof(big));
	assert_int_equal(o.n, sizeof(big) + 11);
	assert_memory_equal(o.p, "$100000\r\nzz", 11);
	assert_memory_equal(o.p + o.n - 3, "z\r\n", 3);
	assert_true(o.cap > cap);
	cap = o.cap;
	resp_out_reset(&o);
	assert_int_equal(o.n, 0);
	assert_int_equal(o.cap, cap);
	resp_out_free(&o);
	assert_null(o.p);
}

static void error_text_is_sanitised_like_redis(void **state)
{
	struct resp_out o;
	resp_out_init(&o);
	resp_add_error(&o, "ERR %s", "bad\r\nthing\nhere");
	EXPECT_OUT(&o, "-ERR bad  thing here\r\n");
	/* CR/LF at either end are trimmed (Redis's sdstrim) */
	resp_add_error(&o, "%s", "\r\nERR x\r\n\n");
	EXPECT_OUT(&o, "-ERR x\r\n");
	resp_add_error(&o, "%s", "\r\n");
	EXPECT_OUT(&o, "-\r\n");
	/* the parser's texts, as the server sends them */
	size_t used;
	const char *err;
	assert_int_equal(parse("*1\r\n\r\n", 6, &used, &err), RESP_EPROTO);
	resp_add_error(&o, "ERR %s", err);
	EXPECT_OUT(&o, "-ERR Protocol error: expected '$', got ' '\r\n");
	resp_add_simple(&o, "a\r\nb");
	EXPECT_OUT(&o, "+a  b\r\n");
	resp_out_free(&o);
}

static void out_of_memory_stops_the_builders(void **state)
{
	struct resp_out o;
	resp_out_init(&o);
	resp_add_simple(&o, "OK");
	/* a reply too big for any buffer: refused whole, no byte read */
	resp_add_bulk(&o, "x", SIZE_MAX / 2);
	assert_true(o.oom);
	assert_int_equal(o.n, 5);
	resp_add_simple(&o, "PONG");
	resp_add_int(&o, 1);
	resp_add_error(&o, "ERR x");
	assert_int_equal(o.n, 5);
	resp_out_reset(&o);
	assert_false(o.oom);
	resp_add_int(&o, 1);
	EXPECT_OUT(&o, ":1\r\n");
	resp_out_free(&o);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(multibulk_request_gives_its_arguments),
		T(empty_multibulk_is_an_empty_request),
		T(inline_request_splits_on_blanks),
		T(inline_quotes_and_escapes_are_sdssplitargs),
		T(unbalanced_quotes_are_refused),
		T(binary_values_keep_every_byte),
		T(errors_are_redis_texts),
		T(byte_at_a_time_gives_the_same_result),
		T(pipelined_requests_are_parsed_in_order),
		T(peek_finds_the_arguments_the_parse_finds),
		T(limits_bound_bulks_arguments_and_lines),
		T(header_lines_are_bounded_by_max_inline),
		T(unchecked_line_end_bytes_are_skipped_like_redis),
		T(incomplete_requests_need_more),
		T(storage_of_a_huge_request_is_given_back),
		T(arg_ll_is_string2ll),
		T(arg_is_compares_ascii_letters_without_case),
		T(replies_are_exact_bytes),
		T(error_text_is_sanitised_like_redis),
		T(out_of_memory_stops_the_builders),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
