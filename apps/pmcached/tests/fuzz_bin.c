/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_bin.c - libFuzzer harness of the binary protocol parser
 * (proto_bin.c).
 *
 * For each input it checks: no crash or sanitizer report; *consumed never
 * exceeds the bytes given and is 0 for NEED_MORE and CLOSE; the key and
 * value lie inside the bytes, the key within MC_KEY_MAX, a swallow only
 * on an error; a response header built for the request is well formed;
 * and feeding the input one byte at a time (each time from an exactly
 * sized copy, so that a read past the end is caught) gives the same
 * results as feeding it at once. Build and run: fuzz_bin.sh.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_feed.h"
#include "proto.h"

#define MAX_RESULTS 512

struct result {
	int rc;
	uint8_t opcode, cmd;
	bool quiet, close;
	uint16_t status;
	size_t used, swallow, key_off, key_len, value_off, value_len;
	uint64_t cas, delta, initial;
	uint32_t flags, exptime;
};

static size_t off_in(struct mc_str s, const char *buf, size_t len)
{
	if (!s.p)
		return 0;
	if (s.p < buf || s.len > len || s.p - buf > (ptrdiff_t)(len - s.len))
		abort();
	return (size_t)(s.p - buf);
}

static void check_header(const struct mc_bin_request *r)
{
	unsigned char h[MC_BIN_HEADER];
	mc_bin_header(h, r, r->status, 4, 3, 7, r->cas);
	if (h[0] != MC_BIN_RES || h[1] != r->opcode || h[3] != 3 ||
	    h[4] != 4 || memcmp(h + 12, &r->opaque, 4) != 0)
		abort();
	if (r->status && !mc_bin_status_text(r->status)[0])
		abort();
}

static struct result capture(int rc, const struct mc_bin_request *r,
                             const char *buf, size_t len, size_t used)
{
	if (used > len || ((rc == MC_NEED_MORE || rc == MC_CLOSE) && used))
		abort();
	if (r->key.len > MC_KEY_MAX || (rc != MC_ERROR && r->swallow))
		abort();
	if (rc == MC_OK && used < MC_BIN_HEADER)
		abort();
	check_header(r);
	return (struct result){rc, r->opcode, r->cmd, r->quiet, r->close,
		r->status, used, r->swallow, off_in(r->key, buf, len),
		r->key.len, off_in(r->value, buf, len), r->value.len, r->cas,
		r->delta, r->initial, r->flags, r->exptime};
}

static int parse_one(const char *buf, size_t len, void *out, size_t *used,
                     size_t *swallow, bool *stop)
{
	static struct mc_bin_request req;
	struct mc_limits lim;
	mc_limits_default(&lim);
	lim.item_size_max = 4096;
	int rc = mc_bin_parse(buf, len, &lim, &req, used);
	struct result r = capture(rc, &req, buf, len, *used);
	*(struct result *)out = r;
	*swallow = r.swallow;
	*stop = rc == MC_CLOSE || r.close;
	return rc;
}

static bool same(const void *va, const void *vb)
{
	const struct result *a = va, *b = vb;
	return a->rc == b->rc && a->opcode == b->opcode && a->cmd == b->cmd &&
	       a->quiet == b->quiet && a->close == b->close &&
	       a->status == b->status && a->used == b->used &&
	       a->swallow == b->swallow && a->key_off == b->key_off &&
	       a->key_len == b->key_len && a->value_off == b->value_off &&
	       a->value_len == b->value_len && a->cas == b->cas &&
	       a->delta == b->delta && a->initial == b->initial &&
	       a->flags == b->flags && a->exptime == b->exptime;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct result whole[MAX_RESULTS], bytes[MAX_RESULTS];
	fuzz_check_split(data, size, parse_one, whole, bytes, sizeof(*whole),
	                 MAX_RESULTS, same);
	return 0;
}
