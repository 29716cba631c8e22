/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_bin.c - memcached's binary protocol commands (proto_bin.c parses
 * them), executed against the store.
 *
 * Invariants:
 *  1. A reply is queued only after the store call returned: a storage
 *     reply describes a committed transaction (conn.c C3), the same
 *     commit path as the text commands'.
 *  2. Every reply echoes the request's opcode and opaque. Its cas is the
 *     item's unique (0 with -C) after a hit or a store, 0 otherwise.
 *  3. A quiet opcode hides what memcached hides (mc_bin_replies): its
 *     success, or a quiet get's miss. Errors are always sent.
 *  4. A request's cas of 0 means any item. Otherwise SET, ADD and
 *     REPLACE are a compare-and-swap, and APPEND, PREPEND, DELETE,
 *     INCREMENT and DECREMENT leave an item of another unique as it is
 *     (KEY_EEXISTS). With -C memcached's items have unique 0: the stores
 *     ignore the cas, and DELETE, INCREMENT and DECREMENT with one match
 *     no item (cas_operand).
 *  5. Statistics count as memcached counts binary commands: TOUCH and
 *     the GATs are touches, not gets; a counter created by INCREMENT is
 *     no miss.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server.h"

#define NO_CREATE 0xffffffffu /* INCREMENT's expiration: miss, not create */

/* What follows a response header; a value of NULL with vlen > 0 is sent
 * by the caller (from the region). */
struct body {
	const void *ext;
	uint8_t extlen;
	const char *key;
	uint16_t keylen;
	const char *value;
	size_t vlen;
};

static uint64_t item_cas(uint64_t cas)
{
	return settings.use_cas ? cas : 0;
}

/* The unique a request's cas must match (4): 0 for any. */
static uint64_t match_cas(const struct mc_bin_request *req)
{
	return req->cas ? cas_operand(req->cas) : 0;
}

static bool reply(struct conn *c, const struct mc_bin_request *req,
                  uint16_t status, uint64_t cas, const struct body *b)
{
	if (!mc_bin_replies(req, status))
		return false;
	unsigned char h[MC_BIN_HEADER];
	size_t total = (size_t)b->extlen + b->keylen + b->vlen;
	mc_bin_header(h, req, status, b->extlen, b->keylen, (uint32_t)total,
	              cas);
	conn_add(c, (const char *)h, sizeof(h));
	conn_add(c, b->ext, b->extlen);
	conn_add(c, b->key, b->keylen);
	if (b->value)
		conn_add(c, b->value, b->vlen);
	return true;
}

static void reply_ok(struct conn *c, const struct mc_bin_request *req,
                     uint64_t cas)
{
	struct body b = {0};
	reply(c, req, MC_BIN_SUCCESS, cas, &b);
}

/* An error; text NULL: memcached's for the status. */
static void reply_error(struct conn *c, const struct mc_bin_request *req,
                        uint16_t status, const char *text)
{
	if (!text)
		text = mc_bin_status_text(status);
	struct body b = {.value = text, .vlen = strlen(text)};
	reply(c, req, status, 0, &b);
}

static void reply_status(struct conn *c, const struct mc_bin_request *req,
                         uint16_t status, uint64_t cas)
{
	if (status == MC_BIN_SUCCESS)
		reply_ok(c, req, cas);
	else
		reply_error(c, req, status, NULL);
}

static void store_failure(struct conn *c, const struct mc_bin_request *req,
                          int rc)
{
	cmd_store_error(c, rc);
	if (rc == PMTX_E_NOMEM || rc == ENOMEM)
		reply_error(c, req, MC_BIN_ENOMEM, NULL);
	else
		reply_error(c, req, MC_BIN_EINTERNAL, pmtx_strerror(rc));
}

/* ---- GET GETK TOUCH GAT GATK and their quiet forms ---- */

static void count_get(struct conn *c, bool touch, bool hit)
{
	if (touch) {
		STAT_INC(c, cmd_touch);
		STAT_HIT(c, hit, touch);
	} else {
		STAT_INC(c, cmd_get);
		STAT_HIT(c, hit, get);
	}
}

static void get_hit(struct conn *c, const struct mc_bin_request *req,
                    struct mc_ref *ref)
{
	bool with_key = req->cmd == MC_BIN_GETK || req->cmd == MC_BIN_GATK;
	bool value = req->cmd != MC_BIN_TOUCH;
	uint32_t flags = htonl(ref->flags);
	struct body b = {&flags, 4, req->key.p, with_key ? req->key.len : 0,
	                 NULL, value ? ref->nbytes : 0};
	if (reply(c, req, MC_BIN_SUCCESS, item_cas(ref->cas), &b) && value)
		conn_add_ref(c, ref); /* released once sent */
	else
		mc_store_release(server.store, slot_of(c), ref);
}

static void bin_get(struct conn *c, const struct mc_bin_request *req)
{
	bool touch = req->cmd != MC_BIN_GET && req->cmd != MC_BIN_GETK;
	int64_t exp = touch ? cmd_abs_exptime(req->exptime, time(NULL)) : 0;
	struct mc_ref ref;
	int rc = mc_store_get(server.store, slot_of(c), req->key.p,
	                      req->key.len, touch, exp, &ref);
	if (rc)
		return store_failure(c, req, rc);
	count_get(c, touch, ref.off != 0);
	stats_prefix_get(req->key.p, req->key.len, ref.off != 0);
	if (ref.off)
		return get_hit(c, req, &ref);
	if (req->cmd != MC_BIN_GETK && req->cmd != MC_BIN_GATK)
		return reply_error(c, req, MC_BIN_KEY_ENOENT, NULL);
	struct body b = {.key = req->key.p, .keylen = req->key.len};
	reply(c, req, MC_BIN_KEY_ENOENT, 0, &b); /* the key, no text */
}

/* ---- SET ADD REPLACE APPEND PREPEND ---- */

static enum mc_put_mode put_mode(const struct mc_bin_request *req)
{
	bool cas = req->cas && settings.use_cas;
	switch (req->cmd) {
	case MC_BIN_APPEND: return MC_APPEND;
	case MC_BIN_PREPEND: return MC_PREPEND;
	case MC_BIN_ADD: return cas ? MC_CAS : MC_ADD;
	case MC_BIN_REPLACE: return cas ? MC_CAS : MC_REPLACE;
	default: return cas ? MC_CAS : MC_SET;
	}
}

static uint16_t store_status(enum mc_put_mode mode, enum mc_result res)
{
	switch (res) {
	case MC_STORED: return MC_BIN_SUCCESS;
	case MC_EXISTS: return MC_BIN_KEY_EEXISTS;
	case MC_NOT_FOUND: return MC_BIN_KEY_ENOENT;
	case MC_TOO_LARGE: return MC_BIN_E2BIG;
	case MC_NO_MEMORY: return MC_BIN_ENOMEM;
	default:
		return mode == MC_ADD ? MC_BIN_KEY_EEXISTS
		       : mode == MC_REPLACE ? MC_BIN_KEY_ENOENT
		       : MC_BIN_NOT_STORED;
	}
}

static void bin_store(struct conn *c, const struct mc_bin_request *req)
{
	STAT_INC(c, cmd_set);
	enum mc_put_mode mode = put_mode(req);
	bool join = mode == MC_APPEND || mode == MC_PREPEND;
	stats_prefix_set(req->key.p, req->key.len);
	uint64_t cas = item_cas(req->cas);
	struct mc_put p = {
		.mode = mode, .key = req->key.p, .nkey = req->key.len,
		.flags = req->flags,
		.exptime = cmd_abs_exptime(req->exptime, time(NULL)),
		.value = req->value.p, .nbytes = req->value.len,
		.cas = join ? 0 : cas, .if_cas = join ? cas : 0};
	enum mc_result res;
	uint64_t new_cas = 0;
	int rc = mc_store_put(server.store, slot_of(c), &p, &res, &new_cas);
	if (rc)
		return store_failure(c, req, rc);
	cmd_count_store(c, mode == MC_CAS, res);
	if (res == MC_NO_MEMORY && req->cmd == MC_BIN_SET)
		cmd_drop_stale(c, req->key);
	uint16_t status = store_status(mode, res);
	if (status == MC_BIN_ENOMEM)
		return reply_error(c, req, status,
		                   "Out of memory allocating item");
	reply_status(c, req, status, item_cas(new_cas));
}

/* ---- DELETE INCREMENT DECREMENT ---- */

static void bin_delete(struct conn *c, const struct mc_bin_request *req)
{
	enum mc_result res;
	stats_prefix_delete(req->key.p, req->key.len);
	int rc = mc_store_delete_cas(server.store, slot_of(c), req->key.p,
	                             req->key.len, match_cas(req), &res);
	if (rc)
		return store_failure(c, req, rc);
	if (res != MC_EXISTS)
		STAT_HIT(c, res == MC_DELETED, delete);
	reply_status(c, req, res == MC_DELETED ? MC_BIN_SUCCESS
	                     : res == MC_EXISTS ? MC_BIN_KEY_EEXISTS
	                     : MC_BIN_KEY_ENOENT, 0);
}

static void reply_number(struct conn *c, const struct mc_bin_request *req,
                         uint64_t v, uint64_t cas)
{
	unsigned char be[8];
	for (int i = 0; i < 8; i++)
		be[i] = (unsigned char)(v >> (56 - 8 * i));
	struct body b = {.value = (const char *)be, .vlen = sizeof(be)};
	reply(c, req, MC_BIN_SUCCESS, item_cas(cas), &b);
}

/* A miss that creates the counter: the initial value, flags 0, as
 * memcached's ADD of it (a racing store makes it NOT_STORED). */
static void arith_create(struct conn *c, const struct mc_bin_request *req)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRIu64, req->initial);
	struct mc_put p = {
		.mode = MC_ADD, .key = req->key.p, .nkey = req->key.len,
		.exptime = cmd_abs_exptime(req->exptime, time(NULL)),
		.value = num, .nbytes = (size_t)n};
	enum mc_result res;
	uint64_t cas = 0;
	int rc = mc_store_put(server.store, slot_of(c), &p, &res, &cas);
	if (rc)
		return store_failure(c, req, rc);
	cmd_count_store(c, false, res);
	if (res == MC_STORED)
		return reply_number(c, req, req->initial, cas);
	if (res == MC_NOT_STORED)
		return reply_error(c, req, MC_BIN_NOT_STORED, NULL);
	reply_error(c, req, MC_BIN_ENOMEM, "Out of memory allocating new item");
}

static void bin_arith(struct conn *c, const struct mc_bin_request *req)
{
	bool incr = req->cmd == MC_BIN_INCREMENT;
	struct mc_arith a = {.key = req->key.p, .nkey = req->key.len,
	                     .incr = incr, .delta = req->delta,
	                     .cas = match_cas(req)};
	uint64_t v = 0, cas = 0;
	enum mc_result res;
	int rc = mc_store_arith_cas(server.store, slot_of(c), &a, &v, &cas,
	                            &res);
	if (rc)
		return store_failure(c, req, rc);
	if (res == MC_NOT_FOUND && req->exptime != NO_CREATE)
		return arith_create(c, req);
	if (res == MC_STORED || res == MC_NOT_FOUND)
		cmd_count_arith(c, incr, res == MC_STORED);
	switch (res) {
	case MC_STORED: return reply_number(c, req, v, cas);
	case MC_NOT_FOUND: return reply_error(c, req, MC_BIN_KEY_ENOENT, NULL);
	case MC_EXISTS: return reply_error(c, req, MC_BIN_KEY_EEXISTS, NULL);
	case MC_NON_NUMERIC:
		return reply_error(c, req, MC_BIN_DELTA_BADVAL, NULL);
	default:
		return reply_error(c, req, MC_BIN_ENOMEM,
		                   "Out of memory incrementing value");
	}
}

/* ---- FLUSH STAT ---- */

static void bin_flush(struct conn *c, const struct mc_bin_request *req)
{
	if (!settings.flush_enabled)
		return reply_error(c, req, MC_BIN_AUTH_ERROR, NULL);
	STAT_INC(c, cmd_flush);
	int rc = cmd_flush(req->has_exptime ? req->exptime : 0);
	if (rc)
		return store_failure(c, req, rc);
	reply_ok(c, req, 0);
}

/* One statistic as a STAT response: its name the key, its value the
 * value. */
static void stat_packet(struct conn *c, const void *arg, const char *name,
                        const char *value)
{
	const struct mc_bin_request *req = arg;
	size_t klen = strlen(name);
	struct body b = {.key = name, .keylen = (uint16_t)klen,
	                 .value = value, .vlen = strlen(value)};
	reply(c, req, MC_BIN_SUCCESS, 0, &b);
}

static bool key_starts(struct mc_str key, const char *word)
{
	size_t n = strlen(word);
	return key.len >= n && memcmp(key.p, word, n) == 0;
}

static bool key_is(struct mc_str key, const char *word)
{
	return key.len == strlen(word) && key_starts(key, word);
}

/* memcached's binary "detail on|off|dump": a key starting with "detail"
 * and then one of those after a space (dump: one statistic, "detailed",
 * the text dump); KEY_ENOENT for any other. False if not "detail". */
static bool bin_detail(struct conn *c, const struct mc_bin_request *req)
{
	struct mc_str k = req->key, sub = {k.p + 6, k.len - 6};
	if (!key_starts(k, "detail") || k.len == 6 || k.p[6] != ' ')
		return false;
	size_t len;
	char *dump = NULL;
	if (key_starts(sub, " on") || key_starts(sub, " off"))
		atomic_store(&settings.detail_enabled, sub.p[2] == 'n');
	else if (!key_starts(sub, " dump") ||
	         !(dump = stats_prefix_dump(&len))) {
		reply_error(c, req, MC_BIN_KEY_ENOENT, NULL);
		return true;
	}
	if (dump) {
		struct body b = {.key = "detailed", .keylen = 8, .value = dump,
		                 .vlen = len};
		reply(c, req, MC_BIN_SUCCESS, 0, &b);
		free(dump);
	}
	reply_ok(c, req, 0);
	return true;
}

/* memcached's binary STAT: no key for the general statistics, a key
 * starting with "reset" or "settings", or exactly "items", "slabs" or
 * "sizes", or "detail" and its argument (bin_detail); anything else
 * (conns, ...) is KEY_ENOENT. A response with no key ends the list. */
static void bin_stat(struct conn *c, const struct mc_bin_request *req)
{
	enum stats_group g = STATS_GENERAL;
	struct mc_str k = req->key;
	if (bin_detail(c, req))
		return;
	if (key_starts(k, "reset")) {
		stats_reset();
		return reply_ok(c, req, 0);
	}
	if (key_starts(k, "settings"))
		g = STATS_SETTINGS;
	else if (key_is(k, "items"))
		g = STATS_ITEMS;
	else if (key_is(k, "slabs"))
		g = STATS_SLABS;
	else if (key_is(k, "sizes"))
		g = STATS_SIZES;
	else if (k.len)
		return reply_error(c, req, MC_BIN_KEY_ENOENT, NULL);
	stats_emit(c, g, stat_packet, req);
	reply_ok(c, req, 0);
}

enum cmd_outcome cmd_bin_execute(struct conn *c,
                                 const struct mc_bin_request *req)
{
	struct body version = {.value = PMCACHED_VERSION,
	                       .vlen = strlen(PMCACHED_VERSION)};
	switch (req->cmd) {
	case MC_BIN_GET: case MC_BIN_GETK: case MC_BIN_TOUCH:
	case MC_BIN_GAT: case MC_BIN_GATK:
		bin_get(c, req); break;
	case MC_BIN_SET: case MC_BIN_ADD: case MC_BIN_REPLACE:
	case MC_BIN_APPEND: case MC_BIN_PREPEND:
		bin_store(c, req); break;
	case MC_BIN_DELETE: bin_delete(c, req); break;
	case MC_BIN_INCREMENT: case MC_BIN_DECREMENT: bin_arith(c, req); break;
	case MC_BIN_FLUSH: bin_flush(c, req); break;
	case MC_BIN_STAT: bin_stat(c, req); break;
	case MC_BIN_VERSION: reply(c, req, MC_BIN_SUCCESS, 0, &version); break;
	case MC_BIN_NOOP: reply_ok(c, req, 0); break;
	case MC_BIN_QUIT:
		reply_ok(c, req, 0);
		return CMD_CLOSE;
	default: /* the parser returns no other opcode */
		reply_error(c, req, MC_BIN_UNKNOWN_COMMAND, NULL);
		break;
	}
	return CMD_CONTINUE;
}

enum cmd_outcome cmd_bin_error(struct conn *c,
                               const struct mc_bin_request *req)
{
	if (req->status == MC_BIN_E2BIG) {
		STAT_INC(c, store_too_large);
		if (req->cmd == MC_BIN_SET) /* no stale value left behind */
			cmd_drop_stale(c, req->key);
	}
	reply_error(c, req, req->status, NULL);
	return req->close ? CMD_CLOSE : CMD_CONTINUE;
}
