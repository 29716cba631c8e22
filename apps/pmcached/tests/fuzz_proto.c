/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_proto.c - libFuzzer harness of the memcached protocol parser.
 *
 * For each input it checks: no crash or sanitizer report; *consumed never
 * exceeds the bytes given; every pointer of a request lies inside them;
 * and feeding the input one byte at a time (each time from an exactly
 * sized copy, so that a read past the end is caught) gives the same
 * results as feeding it at once. Build and run: see ../README.md.
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
	enum mc_cmd cmd;
	size_t used, swallow, key_off, key_len, nkeys;
	const char *error;
};

static void check_str(struct mc_str s, const char *buf, size_t len)
{
	if (s.p && (s.p < buf || s.len > len || s.p - buf > (ptrdiff_t)(len - s.len)))
		abort();
}

static void check_req(const struct mc_request *r, const char *buf,
                      size_t len, size_t used)
{
	if (used > len)
		abort();
	check_str(r->key, buf, len);
	check_str(r->keys, buf, len);
	check_str(r->data, buf, len);
	check_str(r->arg, buf, len);
	check_str(r->opaque, buf, len);
	for (size_t i = 0; i < r->nmflags; i++)
		check_str(r->mflags[i].tok, buf, len);
	if (r->bkey_len > MC_KEY_MAX)
		abort();
}

static int parse_one(const char *buf, size_t len, void *out, size_t *used,
                     size_t *swallow, bool *stop)
{
	static struct mc_request req;
	struct mc_limits lim;
	mc_limits_default(&lim);
	lim.item_size_max = 4096;
	int rc = mc_parse(buf, len, &lim, &req, used);
	check_req(&req, buf, len, *used);
	*(struct result *)out = (struct result){rc, req.cmd, *used,
		req.swallow, req.key.p ? (size_t)(req.key.p - buf) : 0,
		req.key.len, req.nkeys, req.error};
	*swallow = req.swallow;
	*stop = rc == MC_CLOSE || (rc == MC_ERROR && *used == 0);
	return rc;
}

static bool same(const void *va, const void *vb)
{
	const struct result *a = va, *b = vb;
	return a->rc == b->rc && a->cmd == b->cmd && a->used == b->used &&
	       a->swallow == b->swallow && a->key_off == b->key_off &&
	       a->key_len == b->key_len && a->nkeys == b->nkeys &&
	       a->error == b->error;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct result whole[MAX_RESULTS], bytes[MAX_RESULTS];
	fuzz_check_split(data, size, parse_one, whole, bytes, sizeof(*whole),
	                 MAX_RESULTS, same);
	return 0;
}
