/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_meta.c - memcached's meta commands (mg ms md ma mn me), executed
 * against the store.
 *
 * Invariants:
 *  1. The parser (proto_meta.c) has validated every flag and token; here
 *     a flag is only looked up and its token converted.
 *  2. Flags that need item state pmcached does not keep (mg h, l, N, R,
 *     E; ms E, and I with C; md I, x, E; ma C, E) are refused with
 *     "CLIENT_ERROR unsupported flag" rather than ignored, and nothing is
 *     changed.
 *  3. A storage reply (ms, md, ma) is queued after the store's
 *     transaction committed, as for the text commands.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server.h"

/* The key the store sees: decoded when the request gave it in base64. */
static struct mc_str meta_key(const struct mc_request *req)
{
	if (req->base64)
		return (struct mc_str){req->bkey, req->bkey_len};
	return req->key;
}

static bool has(const struct mc_request *req, char f)
{
	return mc_meta_find(req, f) != NULL;
}

static int64_t token_i64(const struct mc_request *req, char f, int64_t dflt)
{
	const struct mc_meta_flag *m = mc_meta_find(req, f);
	return m ? strtoll(m->tok.p, NULL, 10) : dflt;
}

static uint64_t token_u64(const struct mc_request *req, char f,
                          uint64_t dflt)
{
	const struct mc_meta_flag *m = mc_meta_find(req, f);
	return m ? strtoull(m->tok.p, NULL, 10) : dflt;
}

static bool unsupported(struct conn *c, const struct mc_request *req,
                        const char *flags)
{
	for (const char *f = flags; *f; f++) {
		if (has(req, *f)) {
			conn_reply(c, "CLIENT_ERROR unsupported flag");
			return true;
		}
	}
	return false;
}

static int64_t ttl_left(int64_t exptime, int64_t now)
{
	return exptime == 0 ? -1 : exptime > now ? exptime - now : -1;
}

static void meta_line(struct conn *c, const struct mc_request *req,
                      const char *code, const struct mc_meta_values *v)
{
	size_t cap = 512 + 2 * MC_KEY_MAX + req->opaque.len;
	char *room = conn_room(c, cap);
	if (room)
		conn_commit_room(c, mc_reply_meta(room, cap, req, code, v));
}

/* ---- mg ---- */

static void mg_hit(struct conn *c, const struct mc_request *req,
                   const struct mc_ref *ref)
{
	bool value = has(req, 'v');
	struct mc_meta_values v = {
		.cas = settings.use_cas ? ref->cas : 0, .flags = ref->flags,
		.ttl = ttl_left(ref->exptime, time(NULL)),
		.data = {NULL, ref->nbytes}};
	meta_line(c, req, value ? "VA" : "HD", &v);
	if (!value)
		return;
	conn_add_ref(c, ref);
	conn_add(c, "\r\n", 2);
}

static void mg(struct conn *c, const struct mc_request *req)
{
	if (unsupported(c, req, "hlNRE"))
		return;
	struct mc_str key = meta_key(req);
	bool touch = has(req, 'T');
	int64_t now = time(NULL);
	int64_t exp = cmd_abs_exptime(token_i64(req, 'T', 0), now);
	struct mc_ref ref;
	int rc = mc_store_get(server.store, slot_of(c), key.p, key.len, touch,
	                      exp, &ref);
	if (rc)
		return cmd_store_failure(c, rc, false);
	STAT_INC(c, cmd_get);
	if (!ref.off) {
		STAT_INC(c, get_misses);
		return meta_line(c, req, "EN", NULL);
	}
	STAT_INC(c, get_hits);
	mg_hit(c, req, &ref);
	if (!has(req, 'v')) /* else the connection releases it once sent */
		mc_store_release(server.store, slot_of(c), &ref);
}

/* ---- ms ---- */

static enum mc_put_mode ms_mode(const struct mc_request *req)
{
	if (has(req, 'C'))
		return MC_CAS;
	switch (req->mode) {
	case 'E': return MC_ADD;
	case 'A': return MC_APPEND;
	case 'P': return MC_PREPEND;
	case 'R': return MC_REPLACE;
	default: return MC_SET;
	}
}

static const char *ms_code(struct conn *c, enum mc_result res)
{
	switch (res) {
	case MC_STORED: return "HD";
	case MC_EXISTS: STAT_INC(c, cas_badval); return "EX";
	case MC_NOT_FOUND: return "NF";
	default: return "NS";
	}
}

static void ms(struct conn *c, const struct mc_request *req)
{
	if (unsupported(c, req, "E") ||
	    (has(req, 'C') && unsupported(c, req, "I")))
		return;
	STAT_INC(c, cmd_set);
	struct mc_str key = meta_key(req);
	int64_t now = time(NULL);
	struct mc_put p = {
		.mode = ms_mode(req), .key = key.p, .nkey = key.len,
		.flags = (uint32_t)token_u64(req, 'F', 0),
		.exptime = cmd_abs_exptime(token_i64(req, 'T', 0), now),
		.value = req->data.p, .nbytes = req->data.len,
		.cas = cas_operand(token_u64(req, 'C', 0))};
	enum mc_result res;
	uint64_t cas = 0;
	int rc = mc_store_put(server.store, slot_of(c), &p, &res, &cas);
	if (rc)
		return cmd_store_failure(c, rc, false);
	if (res == MC_TOO_LARGE || res == MC_NO_MEMORY) {
		STAT_INC(c, store_no_memory);
		return conn_reply(c, res == MC_TOO_LARGE
		                  ? "SERVER_ERROR object too large for cache"
		                  : "SERVER_ERROR out of memory storing object");
	}
	struct mc_meta_values v = {.cas = settings.use_cas ? cas : 0,
	                           .flags = p.flags,
	                           .ttl = ttl_left(p.exptime, now),
	                           .data = {NULL, req->data.len}};
	meta_line(c, req, ms_code(c, res), &v);
}

/* ---- md ---- */

static void md(struct conn *c, const struct mc_request *req)
{
	if (unsupported(c, req, "IxE"))
		return;
	struct mc_str key = meta_key(req);
	enum mc_result res;
	int rc;
	if (has(req, 'C')) {
		/* compare first: a delete only if the unique matches */
		struct mc_ref ref;
		rc = mc_store_get(server.store, slot_of(c), key.p, key.len, 0,
		                  0, &ref);
		if (rc)
			return cmd_store_failure(c, rc, false);
		bool match = ref.off &&
		             ref.cas == cas_operand(token_u64(req, 'C', 0));
		bool found = ref.off != 0;
		mc_store_release(server.store, slot_of(c), &ref);
		if (!match)
			return meta_line(c, req, found ? "EX" : "NF", NULL);
	}
	rc = mc_store_delete(server.store, slot_of(c), key.p, key.len, &res);
	if (rc)
		return cmd_store_failure(c, rc, false);
	STAT_HIT(c, res == MC_DELETED, delete);
	struct mc_meta_values v = {0};
	meta_line(c, req, res == MC_DELETED ? "HD" : "NF", &v);
}

/* ---- ma ---- */

/* Miss with N: create the item with J (initial value) and TTL N. */
static int ma_vivify(struct conn *c, const struct mc_request *req,
                     struct mc_str key, uint64_t *value, enum mc_result *res)
{
	char num[24];
	*value = token_u64(req, 'J', 0);
	int n = snprintf(num, sizeof(num), "%" PRIu64, *value);
	struct mc_put p = {
		.mode = MC_ADD, .key = key.p, .nkey = key.len, .value = num,
		.nbytes = (size_t)n,
		.exptime = cmd_abs_exptime(token_i64(req, 'N', 0), time(NULL))};
	return mc_store_put(server.store, slot_of(c), &p, res, NULL);
}

static void ma_reply(struct conn *c, const struct mc_request *req,
                     struct mc_str key, uint64_t value)
{
	struct mc_ref ref = {0};
	if (has(req, 'c') || has(req, 't'))
		mc_store_get(server.store, slot_of(c), key.p, key.len, 0, 0,
		             &ref);
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRIu64, value);
	struct mc_meta_values v = {
		.cas = settings.use_cas ? ref.cas : 0, .flags = ref.flags,
		.ttl = ttl_left(ref.exptime, time(NULL)),
		.data = {num, (size_t)n}};
	mc_store_release(server.store, slot_of(c), &ref);
	meta_line(c, req, has(req, 'v') ? "VA" : "HD", &v);
}

static void ma(struct conn *c, const struct mc_request *req)
{
	if (unsupported(c, req, "CE"))
		return;
	struct mc_str key = meta_key(req);
	bool incr = !req->mode || strchr("I+", req->mode);
	uint64_t v = 0;
	enum mc_result res;
	int rc = mc_store_arith(server.store, slot_of(c), key.p, key.len, incr,
	                        token_u64(req, 'D', 1), &v, &res);
	if (!rc && res == MC_NOT_FOUND && has(req, 'N')) {
		rc = ma_vivify(c, req, key, &v, &res);
		res = !rc && res == MC_STORED ? MC_STORED : MC_NOT_FOUND;
	}
	if (!rc && res == MC_STORED && has(req, 'T'))
		rc = mc_store_touch(server.store, slot_of(c), key.p, key.len,
		                    cmd_abs_exptime(token_i64(req, 'T', 0),
		                                    time(NULL)), &res);
	if (rc)
		return cmd_store_failure(c, rc, false);
	if (res == MC_NON_NUMERIC)
		return conn_reply(c, "CLIENT_ERROR cannot increment or "
		                  "decrement non-numeric value");
	if (res == MC_NO_MEMORY)
		return conn_reply(c, "SERVER_ERROR out of memory");
	if (res == MC_NOT_FOUND)
		return meta_line(c, req, "NF", NULL);
	ma_reply(c, req, key, v);
}

/* ---- me ---- */

static void me(struct conn *c, const struct mc_request *req)
{
	struct mc_str key = meta_key(req);
	struct mc_ref ref;
	int rc = mc_store_get(server.store, slot_of(c), key.p, key.len, 0, 0,
	                      &ref);
	if (rc)
		return cmd_store_failure(c, rc, false);
	if (!ref.off)
		return conn_reply(c, "EN");
	char line[600];
	int64_t now = time(NULL);
	snprintf(line, sizeof(line),
	         "ME %.*s exp=%" PRId64 " la=0 cas=%" PRIu64
	         " fetch=no cls=1 size=%zu", (int)key.len, key.p,
	         ttl_left(ref.exptime, now), ref.cas, ref.nbytes + key.len);
	mc_store_release(server.store, slot_of(c), &ref);
	conn_reply(c, line);
}

enum cmd_outcome cmd_meta(struct conn *c, struct mc_request *req)
{
	switch (req->cmd) {
	case MC_CMD_MG: mg(c, req); break;
	case MC_CMD_MS: ms(c, req); break;
	case MC_CMD_MD: md(c, req); break;
	case MC_CMD_MA: ma(c, req); break;
	case MC_CMD_MN: conn_reply(c, "MN"); break;
	case MC_CMD_ME: me(c, req); break;
	default: conn_reply(c, "ERROR"); break;
	}
	return CMD_CONTINUE;
}
