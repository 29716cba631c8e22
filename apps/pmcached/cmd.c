/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd.c - memcached's text commands, executed against the store.
 *
 * Invariants:
 *  1. A reply is queued only after the store call returned: for a storage
 *     command, after its transaction committed (conn.c C3).
 *  2. noreply suppresses every reply of the command, errors included, as
 *     in memcached 1.6.18.
 *  3. Expiry times reach the store as absolute seconds (cmd_abs_exptime),
 *     so they mean the same after a restart.
 *  4. A store status that is not a result (an I/O error of the file
 *     backend, a region that cannot grow) becomes a SERVER_ERROR line and
 *     changes nothing: the store's transaction was rolled back.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server.h"

#define REALTIME_MAXDELTA (60 * 60 * 24 * 30) /* memcached: 30 days */

int64_t cmd_abs_exptime(int64_t exptime, int64_t now)
{
	if (exptime == 0)
		return 0;
	if (exptime < 0)
		return -1;
	if (exptime > REALTIME_MAXDELTA)
		return exptime <= server.started ? -1 : exptime;
	return now + exptime;
}

static void reply(struct conn *c, const struct mc_request *req,
                  const char *line)
{
	if (!req->noreply)
		conn_reply(c, line);
}

void cmd_store_error(struct conn *c, int rc)
{
	STAT_INC(c, store_errors);
	if (VERBOSE(1))
		fprintf(stderr, "pmcached: store: %s (%s)\n", pmtx_strerror(rc),
		        pmtx_errmsg());
}

void cmd_store_failure(struct conn *c, int rc, bool quiet)
{
	cmd_store_error(c, rc);
	if (quiet)
		return;
	if (rc == PMTX_E_NOMEM || rc == ENOMEM)
		conn_reply(c, "SERVER_ERROR out of memory storing object");
	else {
		char line[200];
		snprintf(line, sizeof(line), "SERVER_ERROR %s",
		         pmtx_strerror(rc));
		conn_reply(c, line);
	}
}

void cmd_drop_stale(struct conn *c, struct mc_str key)
{
	enum mc_result res;
	if (key.len && key.len <= MC_KEY_MAX)
		mc_store_delete(server.store, slot_of(c), key.p, key.len, &res);
}

/* As memcached: a SET that fails leaves no stale value behind. */
static void drop_stale(struct conn *c, const struct mc_request *req)
{
	if (req->cmd == MC_CMD_SET)
		cmd_drop_stale(c, req->key);
}

void cmd_error(struct conn *c, const struct mc_request *req)
{
	if (strstr(req->error, "too large")) {
		STAT_INC(c, store_too_large);
		drop_stale(c, req);
	}
	if (!req->error_quiet)
		conn_reply(c, req->error);
}

/* ---- storage ---- */

static enum mc_put_mode put_mode(enum mc_cmd cmd)
{
	switch (cmd) {
	case MC_CMD_ADD: return MC_ADD;
	case MC_CMD_REPLACE: return MC_REPLACE;
	case MC_CMD_APPEND: return MC_APPEND;
	case MC_CMD_PREPEND: return MC_PREPEND;
	case MC_CMD_CAS: return MC_CAS;
	default: return MC_SET;
	}
}

/* With -C no item has a unique to compare, and memcached answers a cas
 * of an existing item with EXISTS whatever the client sends: no unique
 * the store issues is UINT64_MAX. */
uint64_t cas_operand(uint64_t cas)
{
	return settings.use_cas ? cas : UINT64_MAX;
}

void cmd_count_store(struct conn *c, bool cas, enum mc_result res)
{
	switch (res) {
	case MC_STORED:
		STAT_INC(c, total_items);
		if (cas)
			STAT_INC(c, cas_hits);
		break;
	case MC_EXISTS: STAT_INC(c, cas_badval); break;
	case MC_NOT_FOUND:
		if (cas)
			STAT_INC(c, cas_misses);
		break;
	case MC_TOO_LARGE: STAT_INC(c, store_too_large); break;
	case MC_NO_MEMORY: STAT_INC(c, store_no_memory); break;
	default: break;
	}
}

static const char *storage_line(struct conn *c, const struct mc_request *req,
                                enum mc_result res)
{
	bool cas = req->cmd == MC_CMD_CAS;
	cmd_count_store(c, cas, res);
	switch (res) {
	case MC_STORED: return "STORED";
	case MC_EXISTS: return "EXISTS";
	case MC_NOT_FOUND: return cas ? "NOT_FOUND" : "NOT_STORED";
	case MC_TOO_LARGE: return "SERVER_ERROR object too large for cache";
	case MC_NO_MEMORY:
		drop_stale(c, req);
		return "SERVER_ERROR out of memory storing object";
	default: return "NOT_STORED";
	}
}

static void cmd_store(struct conn *c, const struct mc_request *req)
{
	STAT_INC(c, cmd_set);
	stats_prefix_set(req->key.p, req->key.len);
	struct mc_put p = {
		.mode = put_mode(req->cmd), .key = req->key.p,
		.nkey = req->key.len, .flags = req->flags,
		.exptime = cmd_abs_exptime(req->exptime, time(NULL)),
		.value = req->data.p, .nbytes = req->data.len,
		.cas = cas_operand(req->cas)};
	enum mc_result res;
	int rc = mc_store_put(server.store, slot_of(c), &p, &res, NULL);
	if (rc)
		return cmd_store_failure(c, rc, req->noreply);
	reply(c, req, storage_line(c, req, res));
}

/* ---- retrieval ---- */

static void value_header(struct conn *c, struct mc_str key,
                         const struct mc_ref *ref, bool with_cas)
{
	char *room = conn_room(c, key.len + 64);
	if (!room)
		return;
	int n = snprintf(room, 64, "VALUE ");
	memcpy(room + n, key.p, key.len);
	n += (int)key.len;
	n += snprintf(room + n, 64, " %" PRIu32 " %zu", ref->flags,
	              ref->nbytes);
	if (with_cas)
		n += snprintf(room + n, 32, " %" PRIu64,
		              settings.use_cas ? ref->cas : 0);
	memcpy(room + n, "\r\n", 2);
	conn_commit_room(c, (size_t)n + 2);
}

static void count_lookup(struct conn *c, bool touch, bool hit)
{
	STAT_INC(c, cmd_get);
	if (touch) {
		STAT_INC(c, cmd_touch);
		STAT_HIT(c, hit, touch);
	} else {
		STAT_HIT(c, hit, get);
	}
}

static void cmd_get(struct conn *c, const struct mc_request *req)
{
	bool touch = req->cmd == MC_CMD_GAT || req->cmd == MC_CMD_GATS;
	bool cas = req->cmd == MC_CMD_GETS || req->cmd == MC_CMD_GATS;
	int64_t exp = touch ? cmd_abs_exptime(req->exptime, time(NULL)) : 0;
	size_t pos = 0;
	struct mc_str key;
	while (mc_key_next(req, &pos, &key)) {
		struct mc_ref ref;
		int rc = mc_store_get(server.store, slot_of(c), key.p, key.len,
		                      touch, exp, &ref);
		if (rc) {
			cmd_store_failure(c, rc, false);
			return; /* memcached stops the reply at an error */
		}
		count_lookup(c, touch, ref.off != 0);
		stats_prefix_get(key.p, key.len, ref.off != 0);
		if (!ref.off)
			continue;
		value_header(c, key, &ref, cas);
		conn_add_ref(c, &ref);
		conn_add(c, "\r\n", 2);
	}
	conn_reply(c, "END");
}

/* ---- delete, incr/decr, touch ---- */

static void cmd_delete(struct conn *c, const struct mc_request *req)
{
	enum mc_result res;
	stats_prefix_delete(req->key.p, req->key.len);
	int rc = mc_store_delete(server.store, slot_of(c), req->key.p,
	                         req->key.len, &res);
	if (rc)
		return cmd_store_failure(c, rc, req->noreply);
	STAT_HIT(c, res == MC_DELETED, delete);
	reply(c, req, res == MC_DELETED ? "DELETED" : "NOT_FOUND");
}

void cmd_count_arith(struct conn *c, bool incr, bool hit)
{
	if (incr)
		STAT_HIT(c, hit, incr);
	else
		STAT_HIT(c, hit, decr);
}

static void cmd_arith(struct conn *c, const struct mc_request *req)
{
	bool incr = req->cmd == MC_CMD_INCR;
	enum mc_result res;
	uint64_t v;
	int rc = mc_store_arith(server.store, slot_of(c), req->key.p,
	                        req->key.len, incr, req->delta, &v, &res);
	if (rc)
		return cmd_store_failure(c, rc, req->noreply);
	cmd_count_arith(c, incr, res != MC_NOT_FOUND);
	if (res == MC_NOT_FOUND)
		return reply(c, req, "NOT_FOUND");
	if (res == MC_NON_NUMERIC)
		return reply(c, req, "CLIENT_ERROR cannot increment or "
		             "decrement non-numeric value");
	if (res == MC_NO_MEMORY)
		return reply(c, req, "SERVER_ERROR out of memory");
	char num[24];
	snprintf(num, sizeof(num), "%" PRIu64, v);
	reply(c, req, num);
}

static void cmd_touch(struct conn *c, const struct mc_request *req)
{
	enum mc_result res;
	STAT_INC(c, cmd_touch);
	int rc = mc_store_touch(server.store, slot_of(c), req->key.p,
	                        req->key.len,
	                        cmd_abs_exptime(req->exptime, time(NULL)),
	                        &res);
	if (rc)
		return cmd_store_failure(c, rc, req->noreply);
	STAT_HIT(c, res == MC_TOUCHED, touch);
	reply(c, req, res == MC_TOUCHED ? "TOUCHED" : "NOT_FOUND");
}

/* memcached's flush_all cut-off (proto_text.c): at the delay, or now if
 * there is none (or it is not positive); with CAS one second before it,
 * and if that is not in the future every item stored so far goes by its
 * unique, so that a store in the same second after the flush stays.
 * Without CAS (-C) the cut-off itself, so that a store in that second
 * goes too. An absolute time already past is memcached's relative time
 * 1, before every item: nothing is flushed, and a pending cut-off is
 * dropped. */
int cmd_flush(int64_t delay)
{
	int64_t now = time(NULL);
	int64_t at = delay > 0 ? cmd_abs_exptime(delay, now) : now;
	if (at < 0)
		return mc_store_flush_all(server.store, 0, false);
	if (!settings.use_cas)
		return mc_store_flush_all(server.store, at, false);
	return mc_store_flush_all(server.store, at - 1, at - 1 <= now);
}

static void cmd_flush_all(struct conn *c, const struct mc_request *req)
{
	if (!settings.flush_enabled) {
		/* memcached: not suppressed by noreply */
		conn_reply(c, "CLIENT_ERROR flush_all not allowed");
		return;
	}
	STAT_INC(c, cmd_flush);
	int rc = cmd_flush(req->has_delay ? req->delay : 0);
	if (rc)
		return cmd_store_failure(c, rc, req->noreply);
	reply(c, req, "OK");
}

static void cmd_verbosity(struct conn *c, const struct mc_request *req)
{
	atomic_store(&settings.verbose, req->verbosity > 2 ? 2
	                                : (int)req->verbosity);
	reply(c, req, "OK");
}

enum cmd_outcome cmd_execute(struct conn *c, struct mc_request *req)
{
	switch (req->cmd) {
	case MC_CMD_SET: case MC_CMD_ADD: case MC_CMD_REPLACE:
	case MC_CMD_APPEND: case MC_CMD_PREPEND: case MC_CMD_CAS:
		cmd_store(c, req); break;
	case MC_CMD_GET: case MC_CMD_GETS: case MC_CMD_GAT: case MC_CMD_GATS:
		cmd_get(c, req); break;
	case MC_CMD_DELETE: cmd_delete(c, req); break;
	case MC_CMD_INCR: case MC_CMD_DECR: cmd_arith(c, req); break;
	case MC_CMD_TOUCH: cmd_touch(c, req); break;
	case MC_CMD_FLUSH_ALL: cmd_flush_all(c, req); break;
	case MC_CMD_VERSION: conn_reply(c, "VERSION " PMCACHED_VERSION); break;
	case MC_CMD_VERBOSITY: cmd_verbosity(c, req); break;
	case MC_CMD_QUIT: return CMD_CLOSE;
	case MC_CMD_SHUTDOWN: return CMD_SHUTDOWN;
	case MC_CMD_STATS: stats_reply(c, req); break;
	case MC_CMD_LRU_CRAWLER: crawler_command(c, req); break;
	case MC_CMD_SLABS: stats_slabs_command(c, req); break;
	case MC_CMD_MG: case MC_CMD_MS: case MC_CMD_MD: case MC_CMD_MA:
	case MC_CMD_MN: case MC_CMD_ME:
		/* cmd_meta counts in cmd_meta, as memcached, only me's */
		return cmd_meta(c, req);
	default: conn_reply(c, "ERROR"); break;
	}
	return CMD_CONTINUE;
}
