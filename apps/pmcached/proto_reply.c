/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto_reply.c - the replies of memcached 1.6.18, formatted.
 *
 * Invariants:
 *  1. A helper writes out[0..cap) only; it returns the length written, or
 *     0 when the reply does not fit (or q hides it), and then the bytes
 *     written are not part of any reply.
 *  2. Helpers are pure: the output is a function of the arguments.
 *  3. Meta return flags come in the order the request gave them, as
 *     memcached echoes them; a binary key's " b" right after it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "proto.h"

struct out {
	char *p;
	size_t cap, n;
	bool full;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->full || o->cap - o->n < n) {
		o->full = true;
		return;
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void putu(struct out *o, uint64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRIu64, v);
	put(o, num, (size_t)n);
}

static void puti(struct out *o, int64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRId64, v);
	put(o, num, (size_t)n);
}

/* A binary (base64) key is returned encoded again from its decoded bytes,
 * as memcached does, not as the client sent it. */
static void put_b64(struct out *o, const char *in, size_t n)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                          "abcdefghijklmnopqrstuvwxyz0123456789+/";
	for (size_t i = 0; i < n; i += 3) {
		const unsigned char *p = (const unsigned char *)in + i;
		uint32_t v = (uint32_t)p[0] << 16 |
		             (i + 1 < n ? (uint32_t)p[1] << 8 : 0) |
		             (i + 2 < n ? p[2] : 0);
		char q[4] = {abc[v >> 18], abc[v >> 12 & 63],
		             i + 1 < n ? abc[v >> 6 & 63] : '=',
		             i + 2 < n ? abc[v & 63] : '='};
		put(o, q, 4);
	}
}

static size_t done(const struct out *o)
{
	return o->full ? 0 : o->n;
}

size_t mc_base64_encode(struct mc_str in, char *out, size_t cap)
{
	struct out o = {out, cap, 0, false};
	put_b64(&o, in.p, in.len);
	return done(&o);
}

size_t mc_reply_line(char *out, size_t cap, const char *text)
{
	struct out o = {out, cap, 0, false};
	puts_(&o, text);
	put(&o, "\r\n", 2);
	return done(&o);
}

size_t mc_reply_value(char *out, size_t cap, struct mc_str key,
                      uint32_t flags, struct mc_str data, bool with_cas,
                      uint64_t cas)
{
	struct out o = {out, cap, 0, false};
	puts_(&o, "VALUE ");
	put(&o, key.p, key.len);
	put(&o, " ", 1);
	putu(&o, flags);
	put(&o, " ", 1);
	putu(&o, data.len);
	if (with_cas) {
		put(&o, " ", 1);
		putu(&o, cas);
	}
	put(&o, "\r\n", 2);
	put(&o, data.p, data.len);
	put(&o, "\r\n", 2);
	return done(&o);
}

size_t mc_reply_number(char *out, size_t cap, uint64_t value)
{
	struct out o = {out, cap, 0, false};
	putu(&o, value);
	put(&o, "\r\n", 2);
	return done(&o);
}

size_t mc_reply_version(char *out, size_t cap, const char *version)
{
	struct out o = {out, cap, 0, false};
	puts_(&o, "VERSION ");
	puts_(&o, version);
	put(&o, "\r\n", 2);
	return done(&o);
}

/* memcached's quiet mode hides the reply that means "as expected": EN for
 * mg, HD for ms, md and ma. */
bool mc_meta_quiet_hides(const struct mc_request *req, const char *code)
{
	if (!req->quiet)
		return false;
	if (req->cmd == MC_CMD_MG)
		return strcmp(code, "EN") == 0;
	return strcmp(code, "HD") == 0;
}

/* Which return flags a reply echoes besides O and k (memcached 1.6.18):
 * a mg hit its c f h l s t, ms its c (0 unless stored), a ma hit its c
 * and t; misses and md none. */
static const char *echoed(const struct mc_request *req, bool hit)
{
	switch (req->cmd) {
	case MC_CMD_MG: return hit ? "cfhlst" : "";
	case MC_CMD_MS: return "c";
	case MC_CMD_MA: return hit ? "ct" : "";
	default: return "";
	}
}

/* k: the key, in base64 and followed by " b" when binary (the item's
 * form on a mg hit, the request's otherwise), as memcached's META_KEY. */
static void meta_key(struct out *o, const struct mc_request *req,
                     bool hit, const struct mc_meta_values *v)
{
	bool bin = hit && v && req->cmd == MC_CMD_MG ? v->key_binary
	                                             : req->base64;
	const char *k = req->base64 ? req->bkey : req->key.p;
	size_t n = req->base64 ? req->bkey_len : req->key.len;
	put(o, " k", 2);
	if (!bin)
		return put(o, k, n);
	put_b64(o, k, n);
	put(o, " b", 2);
}

static void meta_flag(struct out *o, const struct mc_request *req,
                      const struct mc_meta_flag *f, bool hit,
                      const struct mc_meta_values *v)
{
	char c = f->flag;
	if (c == 'k')
		return meta_key(o, req, hit, v);
	if (c == 'O') {
		put(o, " O", 2);
		return put(o, f->tok.p, f->tok.len);
	}
	if (!strchr(echoed(req, hit), c) || c == '\0')
		return;
	put(o, " ", 1);
	put(o, &c, 1);
	if (c == 'c')
		putu(o, v ? v->cas : 0);
	else if (c == 'f')
		putu(o, v ? v->flags : 0);
	else if (c == 's')
		putu(o, v ? v->data.len : 0);
	else if (c == 't')
		puti(o, v ? v->ttl : -1);
	else if (c == 'l')
		putu(o, v ? v->la : 0);
	else if (c == 'h')
		put(o, v && v->fetched ? "1" : "0", 1);
}

size_t mc_reply_meta(char *out, size_t cap, const struct mc_request *req,
                     const char *code, const struct mc_meta_values *v)
{
	struct out o = {out, cap, 0, false};
	bool va = strcmp(code, "VA") == 0;
	bool hit = va || strcmp(code, "HD") == 0;
	if (mc_meta_quiet_hides(req, code))
		return 0;
	puts_(&o, code);
	if (va) {
		put(&o, " ", 1);
		putu(&o, v ? v->data.len : 0);
	}
	for (size_t i = 0; i < req->nmflags; i++)
		meta_flag(&o, req, &req->mflags[i], hit, v);
	if (hit && v && v->tail)
		puts_(&o, v->tail);
	put(&o, "\r\n", 2);
	if (va && v && v->data.p) { /* NULL: the caller sends the data */
		put(&o, v->data.p, v->data.len);
		put(&o, "\r\n", 2);
	}
	return done(&o);
}
