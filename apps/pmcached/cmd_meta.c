/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_meta.c - memcached's meta commands (mg ms md ma mn me), executed
 * against the store.
 *
 * Invariants:
 *  1. The parser (proto_meta.c) has validated every flag and token; here
 *     a flag is only looked up and its token converted.
 *  2. Every flag of memcached 1.6.18 is served as it serves it, with the
 *     item state the store keeps for it (items.c I8): mg h l (the state
 *     before this read), u, N (a miss vivified and won: W), R (a token
 *     won once), a stale item's X and its first reader's W, Z for the
 *     later ones; ms I (a CAS of an older unique stores a stale item); md
 *     I with T (invalidate: the item stays, stale); ma C; k in the form
 *     the item was stored with (b) on a mg hit.
 *  3. Flags memcached reads in request order are read so here: a mg's t
 *     shows the expiry before a later T or N, and an item vivified with
 *     both keeps the later one's.
 *  4. A storage reply (ms, md, ma) and a reply announcing a won token (W)
 *     are queued after the store's transaction committed, as for the
 *     text commands.
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

/* A time flag's token as an absolute expiry (0: none). */
static int64_t token_exptime(const struct mc_request *req, char f,
                             int64_t now)
{
	return cmd_abs_exptime(token_i64(req, f, 0), now);
}

/* t: -1 for no expiry, else what memcached prints, the expiry less now
 * as an unsigned 32-bit number. An expiry already past (only within the
 * request whose T or N set it: the item is dead after) wraps around; one
 * before the start (cmd_abs_exptime's -1) is memcached's relative time 1,
 * a second after the start it counts from, 62 seconds before it began
 * (process_started, ITEM_UPDATE_INTERVAL + 2 back). */
static int64_t ttl_left(int64_t exptime, int64_t now)
{
	if (exptime == 0)
		return -1;
	if (exptime < 0)
		exptime = server.started - 61;
	return (int64_t)(uint32_t)(exptime - now);
}

/* The expiry as memcached's flag loop sees it when it reaches flag
 * `upto` (0: after the last flag): exp at first, then each T sets its
 * own, and N its own on an item this request created (3). */
static int64_t exptime_at(const struct mc_request *req, char upto,
                          int64_t exp, bool created, int64_t now)
{
	for (size_t i = 0; i < req->nmflags; i++) {
		char f = req->mflags[i].flag;
		if (f == upto)
			break;
		if (f == 'T' || (f == 'N' && created))
			exp = token_exptime(req, f, now);
	}
	return exp;
}

/* Whether flag a comes before flag b in the request. */
static bool before(const struct mc_request *req, char a, char b)
{
	const struct mc_meta_flag *fa = mc_meta_find(req, a);
	const struct mc_meta_flag *fb = mc_meta_find(req, b);
	return fa && fb && fa < fb;
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

/* The store's request for mg's flags. */
static struct mc_mget mg_request(const struct mc_request *req, int64_t now)
{
	struct mc_str key = meta_key(req);
	return (struct mc_mget){
		.key = key.p, .nkey = key.len, .tokens = 1,
		.touch = has(req, 'T'), .exptime = token_exptime(req, 'T', now),
		.no_update = has(req, 'u'), .vivify = has(req, 'N'),
		.viv_exptime = exptime_at(req, 0, 0, true, now),
		.recache = has(req, 'R'),
		.recache_time = token_exptime(req, 'R', now),
		.recache_after_touch = before(req, 'T', 'R')};
}

/* memcached's flags after the others: Z (a token went out before), X
 * (stale), W (this client won the token). */
static const char *mg_tail(const struct mc_ref *ref)
{
	static const char *const tails[] = {"", " W", " X", " X W", " Z",
	                                    " Z W", " Z X", " Z X W"};
	bool z = ref->iflags & MC_IF_TOKEN_SENT;
	bool x = ref->iflags & MC_IF_STALE;
	return tails[z << 2 | x << 1 | (ref->won != 0)];
}

static void mg_hit(struct conn *c, const struct mc_request *req,
                   const struct mc_ref *ref, int64_t now)
{
	bool value = has(req, 'v');
	int64_t exp = exptime_at(req, 't', ref->exptime, ref->created, now);
	struct mc_meta_values v = {
		.cas = settings.use_cas ? ref->cas : 0, .flags = ref->flags,
		.ttl = ttl_left(exp, now), .data = {NULL, ref->nbytes},
		.la = (uint64_t)(now > ref->atime ? now - ref->atime : 0),
		.fetched = ref->fetched,
		.key_binary = ref->iflags & MC_IF_KEY_BINARY,
		.tail = mg_tail(ref)};
	meta_line(c, req, value ? "VA" : "HD", &v);
	if (!value)
		return;
	conn_add_ref(c, ref);
	conn_add(c, "\r\n", 2);
}

/* An O token too long: a miss is counted, a hit not (memcached). */
static void mg_opaque_too_long(struct conn *c, struct mc_ref *ref)
{
	if (!ref->off) {
		STAT_INC(c, cmd_get);
		STAT_INC(c, get_misses);
	}
	mc_store_release(server.store, slot_of(c), ref);
	conn_reply(c, "CLIENT_ERROR opaque token too long");
}

static void mg(struct conn *c, const struct mc_request *req)
{
	int64_t now = time(NULL);
	struct mc_mget g = mg_request(req, now);
	struct mc_ref ref;
	int rc = mc_store_mget(server.store, slot_of(c), &g, &ref);
	if (rc)
		return cmd_store_failure(c, rc, false);
	if (ref.created) /* memcached counts every item linked */
		STAT_INC(c, total_items);
	if (mc_meta_opaque_too_long(req)) /* memcached: found replying */
		return mg_opaque_too_long(c, &ref);
	if (ref.off && g.touch) { /* memcached: a hit with T is a touch */
		STAT_INC(c, cmd_touch);
		STAT_INC(c, touch_hits);
	} else {
		STAT_INC(c, cmd_get);
		STAT_HIT(c, ref.off, get);
	}
	if (!ref.off)
		return meta_line(c, req, "EN", NULL);
	mg_hit(c, req, &ref, now);
	if (!has(req, 'v')) /* else the connection releases it once sent */
		mc_store_release(server.store, slot_of(c), &ref);
}

/* ---- ms ---- */

/* memcached: C turns a set or replace into a CAS, append and prepend
 * compare it, add ignores it. */
static void ms_mode(const struct mc_request *req, struct mc_put *p)
{
	bool cas = has(req, 'C');
	uint64_t unique = cas_operand(token_u64(req, 'C', 0));
	switch (req->mode) {
	case 'E': p->mode = MC_ADD; return;
	case 'A': p->mode = MC_APPEND; break;
	case 'P': p->mode = MC_PREPEND; break;
	case 'R': p->mode = cas ? MC_CAS : MC_REPLACE; break;
	default: p->mode = cas ? MC_CAS : MC_SET; break;
	}
	if (p->mode == MC_CAS)
		p->cas = unique;
	else if (cas)
		p->if_cas = unique;
	p->stale_ok = p->mode == MC_CAS && has(req, 'I');
}

static const char *ms_code(enum mc_result res)
{
	switch (res) {
	case MC_STORED: return "HD";
	case MC_EXISTS: return "EX";
	case MC_NOT_FOUND: return "NF";
	default: return "NS";
	}
}

static void ms(struct conn *c, const struct mc_request *req)
{
	STAT_INC(c, cmd_set);
	struct mc_str key = meta_key(req);
	int64_t now = time(NULL);
	struct mc_put p = {
		.key = key.p, .nkey = key.len,
		.flags = (uint32_t)token_u64(req, 'F', 0),
		.exptime = token_exptime(req, 'T', now),
		.value = req->data.p, .nbytes = req->data.len,
		.iflags = req->base64 ? MC_IF_KEY_BINARY : 0};
	ms_mode(req, &p);
	enum mc_result res;
	uint64_t cas = 0;
	int rc = mc_store_put(server.store, slot_of(c), &p, &res, &cas);
	if (rc)
		return cmd_store_failure(c, rc, false);
	if (res != MC_EXISTS || p.mode == MC_CAS) /* memcached: CAS's stats */
		cmd_count_store(c, p.mode == MC_CAS, res);
	if (res == MC_TOO_LARGE || res == MC_NO_MEMORY) {
		return conn_reply(c, res == MC_TOO_LARGE
		                  ? "SERVER_ERROR object too large for cache"
		                  : "SERVER_ERROR out of memory storing object");
	}
	struct mc_meta_values v = {
		.cas = settings.use_cas && res == MC_STORED ? cas : 0};
	meta_line(c, req, ms_code(res), &v);
}

/* ---- md ---- */

static void md(struct conn *c, const struct mc_request *req)
{
	struct mc_str key = meta_key(req);
	struct mc_mdel d = {
		.key = key.p, .nkey = key.len, .stale = has(req, 'I'),
		.cas = has(req, 'C') ? cas_operand(token_u64(req, 'C', 0)) : 0,
		.touch = has(req, 'T'),
		.exptime = token_exptime(req, 'T', time(NULL))};
	enum mc_result res;
	int rc = mc_store_mdelete(server.store, slot_of(c), &d, &res);
	if (rc)
		return cmd_store_failure(c, rc, false);
	if (!d.stale || res != MC_DELETED) /* memcached: a mark is neither */
		STAT_HIT(c, res == MC_DELETED, delete);
	meta_line(c, req, res == MC_DELETED ? "HD" : res == MC_EXISTS ? "EX"
	                                                               : "NF",
	          NULL);
}

/* ---- ma ---- */

static void ma_reply(struct conn *c, const struct mc_request *req,
                     const struct mc_marith_out *o)
{
	char num[24];
	int64_t now = time(NULL);
	int n = snprintf(num, sizeof(num), "%" PRIu64, o->value);
	int64_t exp = exptime_at(req, 't', o->exptime, o->created, now);
	struct mc_meta_values v = {
		.cas = settings.use_cas ? o->cas : 0,
		.ttl = ttl_left(exp, now), .data = {num, (size_t)n}};
	meta_line(c, req, has(req, 'v') ? "VA" : "HD", &v);
}

/* memcached's incr/decr hits and misses (a vivified item is neither, but
 * an item more). */
static void ma_count(struct conn *c, bool incr, enum mc_result res,
                     int created)
{
	if (created) /* memcached counts every item linked */
		STAT_INC(c, total_items);
	if (res != MC_NOT_FOUND && (res != MC_STORED || created))
		return;
	if (incr)
		STAT_HIT(c, res == MC_STORED, incr);
	else
		STAT_HIT(c, res == MC_STORED, decr);
}

/* One transaction (the store's mc_store_marith): the arithmetic, or on a
 * miss with N the item created with J and the expiry of the last of N
 * and T (3); T's expiry on a hit. */
static void ma(struct conn *c, const struct mc_request *req)
{
	struct mc_str key = meta_key(req);
	int64_t now = time(NULL);
	struct mc_arith a = {
		.key = key.p, .nkey = key.len, .delta = token_u64(req, 'D', 1),
		.incr = !req->mode || strchr("I+", req->mode),
		.cas = has(req, 'C') ? cas_operand(token_u64(req, 'C', 0)) : 0,
		.touch = has(req, 'T'), .exptime = token_exptime(req, 'T', now),
		.vivify = has(req, 'N'), .initial = token_u64(req, 'J', 0),
		.viv_exptime = exptime_at(req, 0, 0, true, now)};
	struct mc_marith_out o;
	enum mc_result res;
	int rc = mc_store_marith(server.store, slot_of(c), &a, &o, &res);
	if (rc)
		return cmd_store_failure(c, rc, false);
	if (res == MC_NON_NUMERIC)
		return conn_reply(c, "CLIENT_ERROR cannot increment or "
		                  "decrement non-numeric value");
	if (res == MC_NO_MEMORY || res == MC_TOO_LARGE)
		return conn_reply(c, "SERVER_ERROR out of memory");
	ma_count(c, a.incr, res, o.created);
	if (mc_meta_opaque_too_long(req)) /* memcached: found once done */
		return conn_reply(c, "CLIENT_ERROR opaque token too long");
	if (res == MC_NOT_FOUND || res == MC_EXISTS)
		return meta_line(c, req, res == MC_EXISTS ? "EX" : "NF", NULL);
	if (!o.created && req->quiet)
		return; /* memcached: q hides a done ma whatever it shows */
	if (!o.created)
		return ma_reply(c, req, &o);
	struct mc_request shown = *req; /* ... but never a created one */
	shown.quiet = false;
	ma_reply(c, &shown, &o);
}

/* ---- me ---- */

/* memcached's debug line: exp is now minus the expiry (negative while
 * it lies ahead), la the seconds since the last access, a binary key in
 * base64, cls and size the class and size memcached would give the item
 * (sizeclass.c). */
static void me(struct conn *c, const struct mc_request *req)
{
	struct mc_str key = meta_key(req);
	struct mc_mget g = {.key = key.p, .nkey = key.len, .no_update = 1};
	struct mc_ref ref;
	int rc = mc_store_mget(server.store, slot_of(c), &g, &ref);
	if (rc)
		return cmd_store_failure(c, rc, false);
	STAT_INC(c, cmd_meta); /* memcached counts me only */
	if (!ref.off)
		return conn_reply(c, "EN");
	char line[700], b64[400];
	int64_t now = time(NULL);
	size_t size = mc_classes_ntotal(&server.classes, key.len, ref.flags,
	                                ref.nbytes);
	struct mc_str shown = key;
	if (ref.iflags & MC_IF_KEY_BINARY)
		shown = (struct mc_str){b64, mc_base64_encode(key, b64,
		                                              sizeof(b64))};
	snprintf(line, sizeof(line),
	         "ME %.*s exp=%" PRId64 " la=%" PRId64 " cas=%" PRIu64
	         " fetch=%s cls=%u size=%zu", (int)shown.len, shown.p,
	         ref.exptime ? now - ref.exptime : -1,
	         now > ref.atime ? now - ref.atime : 0,
	         settings.use_cas ? ref.cas : 0, ref.fetched ? "yes" : "no",
	         mc_classes_id(&server.classes, size), size);
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
