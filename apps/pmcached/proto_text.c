/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto_text.c - memcached's classic text protocol, parsed.
 *
 * Grammar (a line ends with "\n", an optional "\r" before it is dropped;
 * tokens are separated by spaces only; the line stops at a NUL byte):
 *   set|add|replace|append|prepend <key> <flags> <exptime> <bytes> [noreply]
 *   cas <key> <flags> <exptime> <bytes> <cas unique> [noreply]
 *     followed by a data block of <bytes> bytes and "\r\n"
 *   get|gets <key>+            gat|gats <exptime> <key>+
 *   delete <key> [0] [noreply] incr|decr <key> <delta> [noreply]
 *   touch <key> <exptime> [noreply]
 *   flush_all [delay] [noreply]   version   quit   verbosity <n> [noreply]
 *   shutdown [graceful]   stats [<argument> ...]
 *   lru_crawler <argument> ...   slabs <argument> ...
 *   mg|ms|md|ma|mn|me ...      (proto_meta.c)
 *
 * Invariants:
 *  1. Nothing past buf[len] is read; nothing is allocated.
 *  2. A line is looked at only once it is complete, and a storage command
 *     only once its data block is complete, so results do not depend on
 *     how the input was split (NEED_MORE consumes nothing).
 *  3. Errors are checked in memcached 1.6.18's order, so that the first
 *     error memcached would report is the one returned.
 *  4. Only a value memcached refuses as too large is swallowed (after the
 *     line); other errors on a storage line consume just the line, and the
 *     data that follows is then parsed as commands, as memcached does.
 *  5. MC_CLOSE consumes nothing: the connection ends there.
 */
#include <string.h>

#include "proto_int.h"

static const char *const cmd_names[MC_CMD_COUNT] = {
	"none", "set", "add", "replace", "append", "prepend", "cas",
	"get", "gets", "gat", "gats", "delete", "incr", "decr", "touch",
	"flush_all", "version", "verbosity", "quit", "shutdown", "stats",
	"mg", "ms", "md", "ma", "mn", "me", "lru_crawler", "slabs"};

static const char E_FORMAT[] = "CLIENT_ERROR bad command line format";

const char *mc_cmd_name(enum mc_cmd cmd)
{
	return (unsigned)cmd < MC_CMD_COUNT ? cmd_names[cmd] : "?";
}

void mc_limits_default(struct mc_limits *lim)
{
	lim->item_size_max = 1024 * 1024;
	lim->item_header = 48 + 8;
	lim->get_line_max = 1024 * 1024;
	lim->shutdown_enabled = false;
}

int mc_fail(struct mc_request *req, const char *text, size_t swallow,
            size_t at, size_t *consumed)
{
	req->error = text;
	req->error_quiet = req->noreply;
	req->swallow = swallow;
	*consumed = at;
	return MC_ERROR;
}

bool mc_one_key(const struct mc_tokens *t, struct mc_request *req)
{
	req->key = t->tok[1];
	req->nkeys = 1;
	return req->key.len <= MC_KEY_MAX;
}

/* memcached's item_size_ok: header, key + NUL, flags if nonzero, data +
 * "\r\n" must fit in the largest slab class. */
bool mc_too_large(const struct mc_limits *lim, size_t nkey, uint32_t flags,
                  int32_t vlen)
{
	size_t total = lim->item_header + nkey + 1 + (flags ? 4 : 0) +
	               (size_t)vlen + 2;
	return total > lim->item_size_max;
}

/* memcached's set_noreply_maybe: the last token is exactly "noreply". */
static bool noreply_maybe(const struct mc_tokens *t)
{
	return t->n > 0 && mc_tok_is(t->tok[t->n - 1], "noreply");
}

/* A command line of lo to hi tokens, the last of which may be "noreply"
 * (sets req->noreply); false, noreply left alone, if it has fewer or
 * more. */
static bool tokens_between(const struct mc_tokens *t, size_t lo, size_t hi,
                           struct mc_request *req)
{
	if (t->n < lo || t->n > hi)
		return false;
	req->noreply = noreply_maybe(t);
	return true;
}

static enum mc_cmd storage_cmd(struct mc_str w)
{
	static const enum mc_cmd cmds[] = {MC_CMD_SET, MC_CMD_ADD,
		MC_CMD_REPLACE, MC_CMD_APPEND, MC_CMD_PREPEND, MC_CMD_CAS};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (mc_tok_is(w, cmd_names[cmds[i]]))
			return cmds[i];
	return MC_CMD_NONE;
}

int mc_data_block(const char *buf, size_t len, size_t next,
                  struct mc_request *req, size_t *consumed)
{
	size_t need = (size_t)req->bytes + 2;
	if (len - next < need)
		return MC_NEED_MORE;
	req->data.p = buf + next;
	req->data.len = (size_t)req->bytes;
	if (memcmp(buf + next + req->bytes, "\r\n", 2) != 0)
		return mc_fail(req, "CLIENT_ERROR bad data chunk", 0,
		               next + need, consumed);
	*consumed = next + need;
	return MC_OK;
}

static int parse_storage(const char *buf, size_t len, size_t next,
                         const struct mc_tokens *t,
                         const struct mc_limits *lim, struct mc_request *req,
                         size_t *consumed)
{
	bool cas = req->cmd == MC_CMD_CAS;
	size_t want = cas ? 6 : 5;
	if (!tokens_between(t, want, want + 1, req))
		return mc_fail(req, "ERROR", 0, next, consumed);
	req->key = t->tok[1];
	if (req->key.len > MC_KEY_MAX ||
	    !mc_strtoul(t->tok[2], &req->flags) ||
	    !mc_strtol(t->tok[3], &req->exptime) ||
	    !mc_strtol(t->tok[4], &req->bytes) ||
	    (cas && !mc_strtoull(t->tok[5], &req->cas)) ||
	    req->bytes < 0 || req->bytes > INT32_MAX - 2)
		return mc_fail(req, E_FORMAT, 0, next, consumed);
	req->nkeys = 1;
	if (mc_too_large(lim, req->key.len, req->flags, req->bytes))
		return mc_fail(req, "SERVER_ERROR object too large for cache",
		               (size_t)req->bytes + 2, next, consumed);
	return mc_data_block(buf, len, next, req, consumed);
}

static int parse_get(const struct mc_tokens *t, const char *line,
                     size_t line_len, size_t next, struct mc_request *req,
                     size_t *consumed)
{
	size_t first = 1;
	if (t->n < 2)
		return mc_fail(req, "ERROR", 0, next, consumed);
	if (req->cmd == MC_CMD_GAT || req->cmd == MC_CMD_GATS) {
		if (!mc_strtol(t->tok[1], &req->exptime))
			return mc_fail(req, "CLIENT_ERROR invalid exptime argument",
			               0, next, consumed);
		first = 2;
	}
	/* "gat 10" has no key: memcached answers END. */
	req->keys.p = first < t->n ? t->tok[first].p : line + line_len;
	req->keys.len = (size_t)(line + line_len - req->keys.p);
	size_t pos = 0;
	struct mc_str k;
	while (mc_key_next(req, &pos, &k)) {
		if (k.len > MC_KEY_MAX)
			return mc_fail(req, E_FORMAT, 0, next, consumed);
		if (req->nkeys++ == 0)
			req->key = k;
	}
	*consumed = next;
	return MC_OK;
}

bool mc_key_next(const struct mc_request *req, size_t *pos,
                 struct mc_str *key)
{
	size_t i = *pos, n = req->keys.len;
	const char *p = req->keys.p;
	while (i < n && p[i] == ' ')
		i++;
	if (i >= n)
		return false;
	size_t start = i;
	while (i < n && p[i] != ' ')
		i++;
	key->p = p + start;
	key->len = i - start;
	*pos = i;
	return true;
}

static int parse_delete(const struct mc_tokens *t, size_t next,
                        struct mc_request *req, size_t *consumed)
{
	if (t->n < 2 || t->n > 4)
		return mc_fail(req, "ERROR", 0, next, consumed);
	if (t->n > 2) {
		bool zero = mc_tok_is(t->tok[2], "0");
		req->noreply = noreply_maybe(t);
		bool ok = (t->n == 3 && (zero || req->noreply)) ||
		          (t->n == 4 && zero && req->noreply);
		if (!ok)
			return mc_fail(req, "CLIENT_ERROR bad command line format."
			               "  Usage: delete <key> [noreply]",
			               0, next, consumed);
	}
	if (!mc_one_key(t, req))
		return mc_fail(req, E_FORMAT, 0, next, consumed);
	*consumed = next;
	return MC_OK;
}

/* incr, decr, touch: <key> <number> [noreply] */
static int parse_keynum(const struct mc_tokens *t, size_t next,
                        struct mc_request *req, size_t *consumed)
{
	if (!tokens_between(t, 3, 4, req))
		return mc_fail(req, "ERROR", 0, next, consumed);
	if (!mc_one_key(t, req))
		return mc_fail(req, E_FORMAT, 0, next, consumed);
	if (req->cmd == MC_CMD_TOUCH) {
		if (!mc_strtol(t->tok[2], &req->exptime))
			return mc_fail(req, "CLIENT_ERROR invalid exptime argument",
			               0, next, consumed);
	} else if (!mc_strtoull(t->tok[2], &req->delta)) {
		return mc_fail(req, "CLIENT_ERROR invalid numeric delta argument",
		               0, next, consumed);
	}
	*consumed = next;
	return MC_OK;
}

static int parse_flush(const struct mc_tokens *t, size_t next,
                       struct mc_request *req, size_t *consumed)
{
	if (!tokens_between(t, 1, 3, req))
		return mc_fail(req, "ERROR", 0, next, consumed);
	if (t->n != (req->noreply ? 2u : 1u)) {
		if (!mc_strtol(t->tok[1], &req->delay))
			return mc_fail(req, "CLIENT_ERROR invalid exptime argument",
			               0, next, consumed);
		req->has_delay = true;
	}
	*consumed = next;
	return MC_OK;
}

static int parse_verbosity(const struct mc_tokens *t, size_t next,
                           struct mc_request *req, size_t *consumed)
{
	if (!tokens_between(t, 2, 3, req))
		return mc_fail(req, "ERROR", 0, next, consumed);
	if (!mc_strtoul(t->tok[1], &req->verbosity))
		return mc_fail(req, E_FORMAT, 0, next, consumed);
	*consumed = next;
	return MC_OK;
}

/* The tokens after the command, for its executor (stats, lru_crawler,
 * slabs: memcached reads them in place, with their own errors). */
static void take_args(const struct mc_tokens *t, struct mc_request *req)
{
	req->nargs = t->n - 1;
	for (size_t i = 0; i < req->nargs && i < MC_ARGS_MAX; i++)
		req->args[i] = t->tok[i + 1];
}

static bool stats_arg_known(struct mc_str a)
{
	static const char *const known[] = {"items", "slabs", "sizes",
		"settings", "conns", "reset", "detail", "cachedump", "extstore",
		"sizes_enable", "sizes_disable"};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (mc_tok_is(a, known[i]))
			return true;
	return false;
}

static int parse_stats(const struct mc_tokens *t, size_t next,
                       struct mc_request *req, size_t *consumed)
{
	take_args(t, req);
	if (t->n >= 2) {
		req->arg = t->tok[1];
		if (!stats_arg_known(req->arg))
			return mc_fail(req, "ERROR", 0, next, consumed);
	}
	*consumed = next;
	return MC_OK;
}

/* lru_crawler: memcached reads no noreply; slabs automove does. */
static int parse_admin(const struct mc_tokens *t, size_t next,
                       struct mc_request *req, size_t *consumed)
{
	take_args(t, req);
	if (req->cmd == MC_CMD_SLABS && t->n >= 4 &&
	    mc_tok_is(t->tok[1], "automove"))
		req->noreply = noreply_maybe(t);
	*consumed = next;
	return MC_OK;
}

static int parse_shutdown(const struct mc_tokens *t, size_t next,
                          const struct mc_limits *lim,
                          struct mc_request *req, size_t *consumed)
{
	if (!lim->shutdown_enabled)
		return mc_fail(req, "ERROR: shutdown not enabled", 0, next,
		               consumed);
	if (t->n > 2 || (t->n == 2 && !mc_tok_is(t->tok[1], "graceful")))
		return mc_fail(req, "CLIENT_ERROR invalid shutdown mode", 0, next,
		               consumed);
	if (t->n == 2)
		req->arg = t->tok[1];
	*consumed = next;
	return MC_OK;
}

static enum mc_cmd simple_cmd(struct mc_str w)
{
	static const enum mc_cmd cmds[] = {MC_CMD_GET, MC_CMD_GETS,
		MC_CMD_GAT, MC_CMD_GATS, MC_CMD_DELETE, MC_CMD_INCR,
		MC_CMD_DECR, MC_CMD_TOUCH, MC_CMD_FLUSH_ALL, MC_CMD_VERSION,
		MC_CMD_VERBOSITY, MC_CMD_QUIT, MC_CMD_SHUTDOWN, MC_CMD_STATS,
		MC_CMD_LRU_CRAWLER, MC_CMD_SLABS};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (mc_tok_is(w, cmd_names[cmds[i]]))
			return cmds[i];
	return MC_CMD_NONE;
}

/* memcached closes on an unknown command whose last token starts with
 * "HTTP/" (a web client), except where its first letter already picked a
 * family of commands (those answer ERROR). */
static int unknown(const struct mc_tokens *t, size_t next,
                   struct mc_request *req, size_t *consumed)
{
	struct mc_str last = t->tok[t->n - 1];
	req->cmd = MC_CMD_NONE;
	if (!strchr("gsacidt", t->tok[0].p[0]) && last.len >= 5 &&
	    memcmp(last.p, "HTTP/", 5) == 0)
		return MC_CLOSE;
	return mc_fail(req, "ERROR", 0, next, consumed);
}

static int dispatch(const char *buf, size_t len, size_t line_len,
                    size_t next, const struct mc_tokens *t,
                    const struct mc_limits *lim, struct mc_request *req,
                    size_t *consumed)
{
	if (t->n < 1 || t->tok[0].len < 2)
		return mc_fail(req, "ERROR", 0, next, consumed);
	if (t->tok[0].len == 2 && t->tok[0].p[0] == 'm')
		return mc_parse_meta(buf, len, line_len, next, t, lim, req,
		                     consumed);
	if ((req->cmd = storage_cmd(t->tok[0])) != MC_CMD_NONE)
		return parse_storage(buf, len, next, t, lim, req, consumed);
	req->cmd = simple_cmd(t->tok[0]);
	switch (req->cmd) {
	case MC_CMD_GET: case MC_CMD_GETS: case MC_CMD_GAT: case MC_CMD_GATS:
		return parse_get(t, buf, line_len, next, req, consumed);
	case MC_CMD_DELETE:
		return parse_delete(t, next, req, consumed);
	case MC_CMD_INCR: case MC_CMD_DECR: case MC_CMD_TOUCH:
		return parse_keynum(t, next, req, consumed);
	case MC_CMD_FLUSH_ALL:
		return parse_flush(t, next, req, consumed);
	case MC_CMD_VERBOSITY:
		return parse_verbosity(t, next, req, consumed);
	case MC_CMD_STATS:
		return parse_stats(t, next, req, consumed);
	case MC_CMD_LRU_CRAWLER: case MC_CMD_SLABS:
		return parse_admin(t, next, req, consumed);
	case MC_CMD_SHUTDOWN:
		return parse_shutdown(t, next, lim, req, consumed);
	case MC_CMD_VERSION: case MC_CMD_QUIT:
		*consumed = next;
		return MC_OK;
	default:
		return unknown(t, next, req, consumed);
	}
}

/* No '\n' yet: memcached waits, unless the line is long and not a get
 * (then it closes the connection). */
static int no_line(const char *buf, size_t len, const struct mc_limits *lim)
{
	if (len <= MC_LONG_LINE)
		return MC_NEED_MORE;
	size_t sp = 0;
	while (sp < len && buf[sp] == ' ')
		sp++;
	bool get = (len - sp >= 4 && memcmp(buf + sp, "get ", 4) == 0) ||
	           (len - sp >= 5 && memcmp(buf + sp, "gets ", 5) == 0);
	if (sp > 100 || !get || len > lim->get_line_max)
		return MC_CLOSE;
	return MC_NEED_MORE;
}

int mc_parse(const char *buf, size_t len, const struct mc_limits *lim,
             struct mc_request *req, size_t *consumed)
{
	memset(req, 0, offsetof(struct mc_request, bkey));
	req->bkey_len = 0;
	req->error = NULL;
	req->error_quiet = false;
	req->swallow = 0;
	*consumed = 0;
	const char *nl = memchr(buf, '\n', len);
	if (!nl)
		return no_line(buf, len, lim);
	size_t end = (size_t)(nl - buf), next = end + 1;
	if (end > 1 && buf[end - 1] == '\r')
		end--;
	const char *nul = memchr(buf, '\0', end);
	size_t line_len = nul ? (size_t)(nul - buf) : end;
	struct mc_tokens t;
	mc_tokenize(buf, line_len, &t);
	int rc = dispatch(buf, len, line_len, next, &t, lim, req, consumed);
	if (rc == MC_NEED_MORE)
		*consumed = 0;
	return rc;
}
