/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_keys.c - the commands over a key's whole value, as Redis 7.0 has
 * them: COPY, DUMP, RESTORE, OBJECT and LCS. Each is an image of the
 * value (store_copy.h) read or built in one store operation, and Redis's
 * serialization and encodings (rdb.h) over it. cmd.c's C1-C4 hold.
 *
 * Invariants
 *  K1. Errors come in Redis 7.0's order. RESTORE: its options, then
 *      BUSYKEY, then the TTL, then the payload's checksum and format; a
 *      TTL or payload refused is answered BUSYKEY instead when the key
 *      exists and REPLACE was not given (looked up only then, so that a
 *      good RESTORE is one store operation). COPY: its options (DB's
 *      range at once), then the same key, then the keys. LCS: the keys'
 *      types, then its options.
 *  K2. RESTORE decodes the payload before the store runs: a payload
 *      refused writes nothing, and the store sees an image whose members
 *      are distinct and whose elements it checks against its limits
 *      (store_copy.c Y2).
 *  K3. OBJECT reads without moving the key's access clock (store_copy.c
 *      Y6), and answers ENCODING by what Redis would hold the value as,
 *      computed from the value (rdb.c R1): a value Redis would hold in a
 *      larger encoding because of its history (a hash that once had long
 *      values, a string APPEND made) is answered by its value alone.
 *      IDLETIME and FREQ read the eviction clocks (store.c S16), kept
 *      only under a maxmemory-policy that needs them: 0 otherwise.
 */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "rdb.h"
#include "store_copy.h"

#define LCS_MEMORY_MAX (512ull << 20) /* Redis's proto-max-bulk-len */

/* ---- COPY ---- */

static void cmd_copy(struct cmd_ctx *c)
{
	unsigned db = pmkv_cur_db();
	int replace = 0, done = 0;
	for (size_t j = 3; j < c->q->argc; j++) {
		long long v;
		if (resp_arg_is(c->q, j, "replace")) {
			replace = 1;
		} else if (resp_arg_is(c->q, j, "db") && j + 1 < c->q->argc) {
			if (resp_arg_ll(c->q, ++j, &v))
				return not_integer(c);
			if (v < INT_MIN || v > INT_MAX)
				return resp_add_error(c->out, "ERR value is out of "
				                      "range, value must between "
				                      "-2147483648 and 2147483647");
			if (v < 0 || v >= PMKV_DBS)
				return reply_status(c, PMKV_E_DBINDEX);
			db = (unsigned)v;
		} else {
			return syntax_error(c);
		}
	}
	int rc = pmkv_copy(c->srv->store, arg(c, 1), len(c, 1), arg(c, 2),
	                   len(c, 2), db, replace, &done);
	reply_int(c, rc, done);
}

/* ---- DUMP, RESTORE ---- */

static void cmd_dump(struct cmd_ctx *c)
{
	struct pmkv_key k = {arg(c, 1), len(c, 1)};
	struct pmkv_image im = {0};
	struct rdb_buf b = {0};
	int rc = pmkv_image_read(c->srv->store, &k, 1, UINT64_MAX, 1, &im);
	if (!rc && im.type >= 0)
		rc = rdb_dump(&im, &b);
	if (rc)
		reply_status(c, rc);
	else if (im.type < 0)
		resp_add_null(c->out);
	else
		resp_add_bulk(c->out, b.p, b.n);
	rdb_buf_free(&b);
	pmkv_image_free(&im);
}

struct restore_opts {
	int replace, absttl;
	long long idle, freq; /* -1: not given */
};

/* RESTORE's options, as Redis 7.0 reads them: 0, or -1 after the
 * error. */
static int restore_options(struct cmd_ctx *c, struct restore_opts *o)
{
	*o = (struct restore_opts){0, 0, -1, -1};
	for (size_t j = 4; j < c->q->argc; j++) {
		int more = j + 1 < c->q->argc;
		if (resp_arg_is(c->q, j, "replace")) {
			o->replace = 1;
		} else if (resp_arg_is(c->q, j, "absttl")) {
			o->absttl = 1;
		} else if (resp_arg_is(c->q, j, "idletime") && more &&
		           o->freq == -1) {
			if (resp_arg_ll(c->q, ++j, &o->idle))
				return not_integer(c), -1;
			if (o->idle < 0)
				return resp_add_error(c->out, "ERR Invalid IDLETIME "
				                      "value, must be >= 0"), -1;
		} else if (resp_arg_is(c->q, j, "freq") && more &&
		           o->idle == -1) {
			if (resp_arg_ll(c->q, ++j, &o->freq))
				return not_integer(c), -1;
			if (o->freq < 0 || o->freq > 255)
				return resp_add_error(c->out, "ERR Invalid FREQ value, "
				                      "must be >= 0 and <= 255"), -1;
		} else {
			return syntax_error(c), -1;
		}
	}
	return 0;
}

static void busykey(struct cmd_ctx *c)
{
	resp_add_error(c->out, "BUSYKEY Target key name already exists.");
}

/* What refused RESTORE's TTL (bad 1: not an integer, 2: negative) or its
 * payload (rdb, an RDB_E_*), unless the key's existence comes first
 * (K1). */
static void restore_refused(struct cmd_ctx *c, int replace, int bad, int rdb)
{
	struct pmkv_key k = {arg(c, 1), len(c, 1)};
	uint64_t n = 0;
	int rc = replace ? 0 : pmkv_exists(c->srv->store, &k, 1, &n);
	if (rc)
		reply_status(c, rc);
	else if (n)
		busykey(c);
	else if (bad == 1)
		not_integer(c);
	else if (bad == 2)
		resp_add_error(c->out, "ERR Invalid TTL value, must be >= 0");
	else if (rdb == RDB_E_CHECKSUM)
		resp_add_error(c->out, "ERR DUMP payload version or checksum "
		               "are wrong");
	else if (rdb == RDB_E_FORMAT)
		resp_add_error(c->out, "ERR Bad data format");
	else
		reply_status(c, rdb == RDB_E_TOOBIG ? PMKV_E_TOOBIG : ENOMEM);
}

static void cmd_restore(struct cmd_ctx *c)
{
	struct restore_opts o;
	struct pmkv_image im = {0};
	long long ttl = 0;
	int busy = 0;
	if (restore_options(c, &o))
		return;
	int bad = resp_arg_ll(c->q, 2, &ttl) ? 1 : ttl < 0 ? 2 : 0;
	int rdb = bad ? 0 : rdb_restore(arg(c, 3), len(c, 3),
	                                c->srv->cfg.lim.max_bulk, &im);
	if (bad || rdb)
		return restore_refused(c, o.replace, bad, rdb);
	long long now = pmkv_now_ms();
	im.expire_ms = !ttl || o.absttl ? ttl
	               : ttl > LLONG_MAX - now ? LLONG_MAX : ttl + now;
	int rc = pmkv_restore(c->srv->store, arg(c, 1), len(c, 1), &im,
	                      o.replace, o.idle, (int)o.freq, &busy);
	pmkv_image_free(&im);
	if (!rc && busy)
		busykey(c);
	else
		reply_ok(c, rc);
}

/* ---- OBJECT ---- */

static int policy_lfu(struct cmd_ctx *c)
{
	int p = atomic_load(&c->srv->cfg.maxmemory_policy);
	return p == PMKV_ALLKEYS_LFU || p == PMKV_VOLATILE_LFU;
}

/* The image of OBJECT's key (K3): 0, or -1 after the reply (nil for an
 * absent key). */
static int object_key(struct cmd_ctx *c, struct pmkv_image *im)
{
	struct pmkv_key k = {arg(c, 2), len(c, 2)};
	int rc = pmkv_image_read(c->srv->store, &k, 1, RDB_ENCODING_SEEN, 0,
	                         im);
	if (rc)
		reply_status(c, rc);
	else if (im->type < 0)
		resp_add_null(c->out);
	if (rc || im->type < 0)
		pmkv_image_free(im);
	return rc || im->type < 0 ? -1 : 0;
}

static void object_encoding(struct cmd_ctx *c)
{
	struct pmkv_image im = {0};
	if (object_key(c, &im))
		return;
	const char *e = rdb_encoding(&im);
	resp_add_bulk(c->out, e, strlen(e));
	pmkv_image_free(&im);
}

/* Redis shares small integers unless an LRU or LFU policy needs each
 * key's own clock (pmkv always has a memory limit: its region's). */
static void object_refcount(struct cmd_ctx *c)
{
	struct pmkv_image im = {0};
	if (object_key(c, &im))
		return;
	int p = atomic_load(&c->srv->cfg.maxmemory_policy);
	int clocks = p == PMKV_ALLKEYS_LRU || p == PMKV_VOLATILE_LRU ||
	             policy_lfu(c);
	resp_add_int(c->out, rdb_shared_integer(&im) && !clocks ? INT_MAX : 1);
	pmkv_image_free(&im);
}

static void object_idletime(struct cmd_ctx *c)
{
	struct pmkv_image im = {0};
	if (object_key(c, &im))
		return;
	long long now = pmkv_now_ms() / 1000;
	if (policy_lfu(c))
		resp_add_error(c->out, "ERR An LFU maxmemory policy is selected, "
		               "idle time not tracked. Please note that when "
		               "switching between policies at runtime LRU and LFU "
		               "data will take some time to adjust.");
	else
		resp_add_int(c->out, im.clocked && !im.lfu && im.clock &&
		             im.clock <= now ? now - im.clock : 0);
	pmkv_image_free(&im);
}

static void object_freq(struct cmd_ctx *c)
{
	struct pmkv_image im = {0};
	if (object_key(c, &im))
		return;
	if (!policy_lfu(c))
		resp_add_error(c->out, "ERR An LFU maxmemory policy is not "
		               "selected, access frequency not tracked. Please "
		               "note that when switching between policies at "
		               "runtime LRU and LFU data will take some time to "
		               "adjust.");
	else
		resp_add_int(c->out, im.clocked && im.lfu
		             ? (im.clock < 255 ? im.clock : 255) : 0);
	pmkv_image_free(&im);
}

static void object_help(struct cmd_ctx *c)
{
	static const char *const lines[] = {
		"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to "
		"store the value",
		"    associated with a <key>.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned "
		"integer is",
		"    proportional to the logarithm of the recent access frequency "
		"of the key.",
		"IDLETIME <key>",
		"    Return the idle time of the <key>, that is the approximated "
		"number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with "
		"the specified",
		"    <key>.",
		"HELP",
		"    Prints this help.",
		NULL};
	reply_help(c, lines);
}

static const struct subcommand object_subs[] = {
	{"encoding", 3, object_encoding}, {"freq", 3, object_freq},
	{"idletime", 3, object_idletime}, {"refcount", 3, object_refcount},
	{"help", 2, object_help},         {NULL, 0, NULL},
};

static void cmd_object(struct cmd_ctx *c)
{
	run_sub(c, object_subs);
}

/* ---- LCS ---- */

struct lcs_opts {
	int len, idx, withlen;
	long long minlen;
};

/* LCS's options (Redis 7.0's lcsCommand): 0, or -1 after the error. */
static int lcs_options(struct cmd_ctx *c, struct lcs_opts *o)
{
	*o = (struct lcs_opts){0, 0, 0, 0};
	for (size_t j = 3; j < c->q->argc; j++) {
		if (resp_arg_is(c->q, j, "idx")) {
			o->idx = 1;
		} else if (resp_arg_is(c->q, j, "len")) {
			o->len = 1;
		} else if (resp_arg_is(c->q, j, "withmatchlen")) {
			o->withlen = 1;
		} else if (resp_arg_is(c->q, j, "minmatchlen") &&
		           j + 1 < c->q->argc) {
			if (resp_arg_ll(c->q, ++j, &o->minlen))
				return not_integer(c), -1;
			o->minlen = o->minlen < 0 ? 0 : o->minlen;
		} else {
			return syntax_error(c), -1;
		}
	}
	if (o->idx && o->len)
		return resp_add_error(c->out, "ERR If you want both the length "
		                      "and indexes, please just use IDX."), -1;
	return 0;
}

/* The table: L(i, j), the LCS's length of a[0..i) and b[0..j). */
#define L(i, j) t[(size_t)(i) * (bn + 1) + (j)]

static void lcs_fill(uint32_t *t, const char *a, uint32_t an, const char *b,
                     uint32_t bn)
{
	for (uint32_t i = 0; i <= an; i++)
		for (uint32_t j = 0; j <= bn; j++)
			L(i, j) = !i || !j ? 0
			          : a[i - 1] == b[j - 1] ? L(i - 1, j - 1) + 1
			          : L(i - 1, j) > L(i, j - 1) ? L(i - 1, j)
			                                      : L(i, j - 1);
}

/* IDX's matches: each range in a and in b, with its length. */
struct lcs_match {
	uint32_t a0, a1, b0, b1;
};

/* Walk the table back from the end, as Redis does: the LCS's bytes into
 * out (its length long), and the ranges of contiguous matches at least
 * minlen long into m (*nm of them; m may be NULL). */
static void lcs_walk(const uint32_t *t, const char *a, uint32_t an,
                     const char *b, uint32_t bn, char *out,
                     long long minlen, struct lcs_match *m, size_t *nm)
{
	uint32_t i = an, j = bn, k = L(an, bn);
	uint32_t as = an, ae = 0, bs = 0, be = 0; /* as == an: no range */
	while (i > 0 && j > 0) {
		int emit = 0;
		if (a[i - 1] == b[j - 1]) {
			out[k - 1] = a[i - 1];
			if (as == an) {
				as = ae = i - 1;
				bs = be = j - 1;
			} else if (as == i && bs == j) {
				as--, bs--;
			} else {
				emit = 1;
			}
			emit |= as == 0 || bs == 0;
			k--, i--, j--;
		} else {
			if (L(i - 1, j) > L(i, j - 1))
				i--;
			else
				j--;
			emit = as != an;
		}
		if (emit) {
			uint32_t mlen = ae - as + 1;
			if (m && (minlen == 0 || mlen >= minlen))
				m[(*nm)++] = (struct lcs_match){as, ae, bs, be};
			as = an;
		}
	}
}

static void lcs_reply(struct cmd_ctx *c, const struct lcs_opts *o,
                      const uint32_t *t, const char *a, uint32_t an,
                      const char *b, uint32_t bn)
{
	uint32_t total = L(an, bn);
	char *out = malloc(total + 1u);
	struct lcs_match *m = o->idx ? malloc((total + 1u) * sizeof(*m)) : NULL;
	size_t nm = 0;
	if (!out || (o->idx && !m)) {
		free(out);
		return resp_add_error(c->out, "ERR Insufficient memory, failed "
		                      "allocating transient memory for LCS");
	}
	if (!o->len)
		lcs_walk(t, a, an, b, bn, out, o->minlen, m, &nm);
	if (o->idx) {
		resp_add_array(c->out, 4);
		resp_add_bulk(c->out, "matches", 7);
		resp_add_array(c->out, (long long)nm);
		for (size_t i = 0; i < nm; i++) {
			resp_add_array(c->out, 2 + o->withlen);
			resp_add_array(c->out, 2);
			resp_add_int(c->out, m[i].a0);
			resp_add_int(c->out, m[i].a1);
			resp_add_array(c->out, 2);
			resp_add_int(c->out, m[i].b0);
			resp_add_int(c->out, m[i].b1);
			if (o->withlen)
				resp_add_int(c->out, m[i].a1 - m[i].a0 + 1);
		}
		resp_add_bulk(c->out, "len", 3);
		resp_add_int(c->out, total);
	} else if (o->len) {
		resp_add_int(c->out, total);
	} else {
		resp_add_bulk(c->out, out, total);
	}
	free(out);
	free(m);
}
#undef L

static void lcs_run(struct cmd_ctx *c, const struct lcs_opts *o,
                    const char *a, size_t an, const char *b, size_t bn)
{
	if (an >= UINT32_MAX - 1 || bn >= UINT32_MAX - 1)
		return resp_add_error(c->out, "ERR String too long for LCS");
	unsigned long long cells = (unsigned long long)(an + 1) * (bn + 1);
	if (cells * sizeof(uint32_t) > LCS_MEMORY_MAX)
		return resp_add_error(c->out, "ERR Insufficient memory, transient "
		                      "memory for LCS exceeds "
		                      "proto-max-bulk-len");
	uint32_t *t = malloc(cells * sizeof(uint32_t));
	if (!t)
		return resp_add_error(c->out, "ERR Insufficient memory, failed "
		                      "allocating transient memory for LCS");
	lcs_fill(t, a, (uint32_t)an, b, (uint32_t)bn);
	lcs_reply(c, o, t, a, (uint32_t)an, b, (uint32_t)bn);
	free(t);
}

static void cmd_lcs(struct cmd_ctx *c)
{
	struct pmkv_key k[2] = {{arg(c, 1), len(c, 1)}, {arg(c, 2), len(c, 2)}};
	struct pmkv_image im[2] = {{0}, {0}};
	struct lcs_opts o;
	size_t an = 0, bn = 0;
	int rc = pmkv_image_read(c->srv->store, k, 2, 0, 1, im);
	if (rc)
		reply_status(c, rc);
	else if (im[0].type > PMKV_T_STRING || im[1].type > PMKV_T_STRING)
		resp_add_error(c->out, "ERR The specified keys must contain "
		               "string values");
	else if (!lcs_options(c, &o)) {
		const char *a = im[0].n ? pmkv_image_at(&im[0], 0, &an) : "";
		const char *b = im[1].n ? pmkv_image_at(&im[1], 0, &bn) : "";
		lcs_run(c, &o, a, an, b, bn);
	}
	pmkv_image_free(&im[0]);
	pmkv_image_free(&im[1]);
}

/* Redis 7.0's arity, flags and key positions (COMMAND). */
const struct command pmkv_cmds_keys[] = {
	{"copy", -3, cmd_copy, "write denyoom", 1, 2, 1, 1},
	{"dump", 2, cmd_dump, "readonly", 1, 1, 1, 1},
	{"restore", -4, cmd_restore, "write denyoom", 1, 1, 1, 1},
	{"object", -2, cmd_object, "", 0, 0, 0, 1},
	{"lcs", -3, cmd_lcs, "readonly", 1, 2, 1, 1},
	{NULL, 0, NULL, NULL, 0, 0, 0, 0},
};
