/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_resp.c - libFuzzer harness of pmkv's RESP2 parser.
 *
 * The input is a connection's byte stream, parsed as a pipeline (small
 * limits, so that the fuzzer reaches them). For every result it checks,
 * and abort()s on a violation:
 *  F1. *used is in (0, n] on RESP_OK and 0 otherwise; *err is set exactly
 *      on RESP_EPROTO, and is one of the parser's texts.
 *  F2. argc <= max_args, argl[i] <= max_bulk, argv[i][argl[i]] == 0.
 *  F3. The request re-encoded as RESP (with the reply builders) parses
 *      back to the same arguments, taking exactly the encoded bytes.
 *  F4. Split independence: every prefix of the input shorter than the
 *      point of decision is RESP_MORE, and every longer one gives the same
 *      result (used, arguments, error text). Each prefix is parsed from an
 *      exactly sized copy, so that a read past the end is caught.
 *  F5. The error reply made of an error text is one line: '-', no CR or
 *      LF, "\r\n".
 *  F6. resp_arg_ll takes an argument exactly when it is the canonical
 *      "%lld" of a long long (strtoll's reading, printed back), and then
 *      gives that value; resp_arg_is finds an argument (without a NUL)
 *      equal to itself upper-cased, but not with a non-letter's 0x20 bit
 *      flipped, and not past argc.
 *  F7. resp_peek_args (an exactly sized copy) agrees with resp_parse: it
 *      finds a request exactly when the parse gives a multibulk one, with
 *      its argument count, the same *used, and the same bytes for each of
 *      the first k (k = 1, 2) arguments.
 * Build and run: tests/fuzz_resp.sh.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

static const struct resp_limits lim = {512, 32, 128};

/* Parses an exactly sized copy of in[0..n). */
static int parse_copy(const char *in, size_t n, struct resp_req *q,
                      size_t *used, const char **err)
{
	char *copy = malloc(n ? n : 1);
	int rc;
	if (!copy)
		abort();
	memcpy(copy, in, n);
	rc = resp_parse(copy, n, &lim, q, used, err);
	free(copy);
	return rc;
}

static void check_err_text(const char *err)
{
	if (strcmp(err, "out of memory") != 0 &&
	    strncmp(err, "Protocol error: ", 16) != 0)
		abort();
}

/* F1, F2 */
static void check_result(int rc, size_t n, const struct resp_req *q,
                         size_t used, const char *err)
{
	if (rc == RESP_OK) {
		if (used == 0 || used > n || err || q->argc > lim.max_args)
			abort();
		for (size_t i = 0; i < q->argc; i++)
			if (q->argl[i] > lim.max_bulk ||
			    q->argv[i][q->argl[i]] != '\0')
				abort();
		return;
	}
	if (used != 0 || q->argc != 0)
		abort();
	if (rc == RESP_MORE && err)
		abort();
	if (rc == RESP_EPROTO)
		check_err_text(err);
	if (rc != RESP_MORE && rc != RESP_EPROTO)
		abort();
}

static int same_args(const struct resp_req *a, const struct resp_req *b)
{
	if (a->argc != b->argc)
		return 0;
	for (size_t i = 0; i < a->argc; i++)
		if (a->argl[i] != b->argl[i] ||
		    memcmp(a->argv[i], b->argv[i], a->argl[i] + 1) != 0)
			return 0;
	return 1;
}

/* F3 */
static void check_reencoded(const struct resp_req *q, struct resp_req *r)
{
	struct resp_out o;
	size_t used;
	const char *err;
	resp_out_init(&o);
	resp_add_array(&o, (long long)q->argc);
	for (size_t i = 0; i < q->argc; i++)
		resp_add_bulk(&o, q->argv[i], q->argl[i]);
	if (o.oom)
		abort();
	if (parse_copy(o.p, o.n, r, &used, &err) != RESP_OK ||
	    used != o.n || r->is_inline || !same_args(q, r))
		abort();
	resp_out_free(&o);
}

/* F5 */
static void check_error_reply(const char *err)
{
	struct resp_out o;
	resp_out_init(&o);
	resp_add_error(&o, "ERR %s", err);
	if (o.oom || o.n < 3 || o.p[0] != '-' ||
	    memcmp(o.p + o.n - 2, "\r\n", 2) != 0)
		abort();
	for (size_t i = 0; i < o.n - 2; i++)
		if (o.p[i] == '\r' || o.p[i] == '\n')
			abort();
	resp_out_free(&o);
}

/* F6, for argument i (the reference is strtoll, printed back) */
static void check_arg_helpers(const struct resp_req *q, size_t i)
{
	const char *a = q->argv[i];
	size_t len = q->argl[i];
	char back[32], up[128];
	long long v = 0, want;
	int canon = 0;
	if (len > 0 && len < 32 && strlen(a) == len) {
		char *end;
		errno = 0;
		want = strtoll(a, &end, 10);
		snprintf(back, sizeof(back), "%lld", want);
		canon = errno == 0 && *end == '\0' && strcmp(back, a) == 0;
	}
	if ((resp_arg_ll(q, i, &v) == 0) != canon || (canon && v != want))
		abort();
	if (len < sizeof(up) && strlen(a) == len) {
		for (size_t j = 0; j <= len; j++)
			up[j] = (char)toupper((unsigned char)a[j]);
		if (!resp_arg_is(q, i, up) || resp_arg_is(q, q->argc, up))
			abort();
		for (size_t j = 0; j < len; j++) {
			if (isalpha((unsigned char)a[j]))
				continue;
			up[j] ^= 0x20; /* '[' and '{' are not one letter */
			if (resp_arg_is(q, i, up))
				abort();
			break;
		}
	}
}

/* F4: in[0..n) gave rc (with q, used, err); its prefixes must agree. */
static void check_prefixes(const char *in, size_t n, int rc,
                           const struct resp_req *q, size_t used,
                           const char *err, struct resp_req *p)
{
	size_t k = 0, pused;
	const char *perr;
	int prc = RESP_MORE;
	for (; k <= n; k++) {
		prc = parse_copy(in, k, p, &pused, &perr);
		check_result(prc, k, p, pused, perr);
		if (prc != RESP_MORE)
			break;
	}
	if (rc == RESP_MORE) {
		if (k <= n)
			abort();
		return;
	}
	if (k > n || prc != rc || pused != used ||
	    (rc == RESP_OK && (k != used || !same_args(q, p) ||
	                       p->is_inline != q->is_inline)) ||
	    (rc == RESP_EPROTO && strcmp(perr, err) != 0))
		abort();
}

/* F7, for k = 1 and 2, against the parse of the same bytes (rc, q, used). */
static void check_peek(const char *in, size_t n, int rc,
                       const struct resp_req *q, size_t used)
{
	char *copy = malloc(n ? n : 1);
	if (!copy)
		abort();
	memcpy(copy, in, n);
	for (size_t k = 1; k <= 2; k++) {
		const char *argv[2];
		size_t argl[2], pused = 0;
		long got = resp_peek_args(copy, n, &lim, k, argv, argl, &pused);
		long want = rc == RESP_OK && !q->is_inline ? (long)q->argc : -1;
		if (got != want || (got >= 0 && pused != used))
			abort();
		for (size_t i = 0; i < k && (long)i < got; i++)
			if (argl[i] != q->argl[i] ||
			    memcmp(argv[i], q->argv[i], argl[i]) != 0)
				abort();
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct resp_req q, r, p; /* zeroed: as resp_req_init leaves */
	const char *in = (const char *)data;
	size_t off = 0;
	for (;;) {
		size_t used, n = size - off;
		const char *err;
		int rc = parse_copy(in + off, n, &q, &used, &err);
		check_result(rc, n, &q, used, err);
		check_prefixes(in + off, n, rc, &q, used, err, &p);
		check_peek(in + off, n, rc, &q, used);
		if (rc == RESP_EPROTO)
			check_error_reply(err);
		if (rc != RESP_OK)
			break;
		check_reencoded(&q, &r);
		for (size_t i = 0; i < q.argc; i++)
			check_arg_helpers(&q, i);
		off += used;
	}
	return 0;
}
