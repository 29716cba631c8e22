/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_bbuf.c - the `bbuf` workload: seed 003's bounded buffer of 29 bytes
 * (section 5.2, Figures 6-8), the buffer of examples/bbuf.c.
 *
 * Scenarios (parameter `scenario`, a sweep, default 1,2,3), on a buffer
 * that is empty when each op begins (scenario 1: see "Reset"):
 *   1  29 adds of one byte, one transaction per add        (29 tx per op)
 *   2  29 adds, then 29 gets, one transaction each          (58 tx per op)
 *   3  29 adds in one transaction, then 29 gets in another   (2 tx per op)
 * An op is one run of the scenario. Extra fields: tx_per_op (29, 58 or 2)
 * and tx_per_s (tx_per_op * ops_per_s).
 *
 * Systems, all holding the same struct bbuf (29 slots, in and out counted
 * modulo 58, as examples/bbuf.c, so all 29 slots are used):
 *   pmtx-cltx        the buffer as one cache-line transactional line; a
 *                    single add or get is bbuf_add()/bbuf_get() of
 *                    examples/bbuf.c, and scenario 3's fill (and drain) is
 *                    one cache-line transaction writing the whole buffer.
 *   pmtx-undo, pmtx-redo, pmtx-redo-async
 *                    the buffer in the root, field by field through the
 *                    API: read in/out (pmtx_read, 2 bytes), write the slot
 *                    and the position (pmtx_write, 1 byte each), as the
 *                    seed's PMDK version snapshots each field it sets.
 *   pmtx-cow         the buffer as one copy-on-write object (31 bytes),
 *                    opened for writing once per transaction.
 *   pmtx-twin        the code of the log runtimes, in a twin region
 *                    (PMTX_RT_TWIN, twice the bytes: bench_region): reads
 *                    are plain loads, writes store in place and note their
 *                    lines, and commit flushes the lines written and
 *                    copies them to the back copy: 4 barriers
 *                    per transaction, however many fields it writes.
 *   pmdk             libpmemobj: TX_BEGIN, pmemobj_tx_add_range_direct on
 *                    the slot and on in (or out) before each store: what
 *                    the seed's libpmemobj++ p<> fields do.
 *   plain            the same code on a DRAM buffer, no persistence.
 *
 * Reset. The seed runs scenario 1 on a fresh buffer each time; here one op
 * follows another on the same buffer, so scenario 1 first empties it with
 * a naked one-byte store out := in (no flush, no barrier, inside the
 * timing: about a nanosecond against 29 transactions). The store keeps the
 * buffer consistent whether or not it persists. (pmtx-twin: it reaches the
 * back copy with the next transaction, which copies whole lines; until
 * then a recovery may bring the old `out` back, an equally consistent
 * buffer.) Scenarios 2 and 3 end with an empty buffer and need no reset.
 *
 * Validation (`check`): the committed buffer must be consistent, its
 * positions must be in = adds mod 58 and out = in - 29 (scenario 1) or
 * out = in (2, 3), its 29 slots must hold the last 29 bytes added (a DRAM
 * model computed from the number of adds: byte k is 7k + 1 mod 256), and
 * every get during the run must have returned the byte the model expects.
 * `corrupt` moves `in` out of range with a naked store.
 */
#include <libpmemobj.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define PMTX_BBUF_NO_MAIN
#include "bbuf.c"

#define BB_REGION_SIZE (4u << 20)

enum bb_kind { BB_CLTX, BB_LOG, BB_COW, BB_PMDK, BB_PLAIN };

struct bb_ctx {
	enum bb_kind kind;
	int scenario;
	pmtx_runtime rt;
	pmtx_region *r;
	PMEMobjpool *pop;
	char path[256];
	struct bbuf_line *line; /* pmtx-cltx */
	struct bbuf *b;         /* log runtimes, pmdk, plain */
	pmtx_off w;             /* pmtx-cow: the buffer's wrapper */
	uint64_t adds, gets;    /* bytes added and taken so far */
	uint64_t bad;           /* gets that returned the wrong byte */
};

/* The model: the k-th byte ever added. */
static inline uint8_t bb_val(uint64_t k)
{
	return (uint8_t)(k * 7 + 1);
}

static int bb_tx_per_op(int scenario)
{
	return scenario == 1 ? BBUF_SIZE : scenario == 2 ? 2 * BBUF_SIZE : 2;
}

static int bb_unexpected(const char *what)
{
	fprintf(stderr, "bbuf: buffer unexpectedly %s\n", what);
	return PMTX_E_CORRUPT;
}

/* ---- the buffer on a plain struct (cltx working half, cow, plain) ---- */

static int bb_put(struct bbuf *b, uint8_t v)
{
	if (bbuf_count(b) == BBUF_SIZE)
		return bb_unexpected("full");
	b->buf[b->in % BBUF_SIZE] = v;
	b->in = (uint8_t)((b->in + 1) % BBUF_POS);
	return 0;
}

static int bb_take(struct bbuf *b, uint8_t *v)
{
	if (b->in == b->out)
		return bb_unexpected("empty");
	*v = b->buf[b->out % BBUF_SIZE];
	b->out = (uint8_t)((b->out + 1) % BBUF_POS);
	return 0;
}

/* Compare a byte taken with the model. */
static void bb_got(struct bb_ctx *c, uint8_t v)
{
	c->bad += v != bb_val(c->gets);
	c->gets++;
}

/* nadd adds, then nget gets, on b. */
static int bb_apply(struct bb_ctx *c, struct bbuf *b, int nadd, int nget)
{
	for (int i = 0; i < nadd; i++) {
		int rc = bb_put(b, bb_val(c->adds));
		if (rc)
			return rc;
		c->adds++;
	}
	for (int i = 0; i < nget; i++) {
		uint8_t v;
		int rc = bb_take(b, &v);
		if (rc)
			return rc;
		bb_got(c, v);
	}
	return 0;
}

/* ---- one transaction of nadd adds and nget gets, per system ---- */

static int cltx_tx(struct bb_ctx *c, int nadd, int nget)
{
	uint8_t v;
	int rc;
	if (nadd == 1 && nget == 0) {
		if ((rc = bbuf_add(c->r, c->line, bb_val(c->adds))) == 0)
			c->adds++;
		return rc == EAGAIN ? bb_unexpected("full") : rc;
	}
	if (nadd == 0 && nget == 1) {
		if ((rc = bbuf_get(c->r, c->line, &v)) == 0)
			bb_got(c, v);
		return rc == EAGAIN ? bb_unexpected("empty") : rc;
	}
	struct bbuf *b = bbuf_line_begin(c->line);
	if ((rc = bb_apply(c, b, nadd, nget))) {
		bbuf_line_abort(c->line);
		return rc;
	}
	return bbuf_line_commit(c->r, c->line);
}

/* Field-level add through the transaction API (undo, redo, redo-async). */
static int log_put(struct bb_ctx *c, pmtx_tx *tx, uint8_t v)
{
	uint8_t io[2]; /* in, out */
	int rc = pmtx_read(tx, io, &c->b->in, 2);
	if (rc)
		return rc;
	if ((io[0] + BBUF_POS - io[1]) % BBUF_POS == BBUF_SIZE)
		return bb_unexpected("full");
	uint8_t in = (uint8_t)((io[0] + 1) % BBUF_POS);
	rc = pmtx_write(tx, &c->b->buf[io[0] % BBUF_SIZE], &v, 1);
	return rc ? rc : pmtx_write(tx, &c->b->in, &in, 1);
}

static int log_take(struct bb_ctx *c, pmtx_tx *tx, uint8_t *v)
{
	uint8_t io[2];
	int rc = pmtx_read(tx, io, &c->b->in, 2);
	if (rc)
		return rc;
	if (io[0] == io[1])
		return bb_unexpected("empty");
	uint8_t out = (uint8_t)((io[1] + 1) % BBUF_POS);
	rc = pmtx_read(tx, v, &c->b->buf[io[1] % BBUF_SIZE], 1);
	return rc ? rc : pmtx_write(tx, &c->b->out, &out, 1);
}

static int log_apply(struct bb_ctx *c, pmtx_tx *tx, int nadd, int nget)
{
	int rc = 0;
	for (int i = 0; !rc && i < nadd; i++)
		if ((rc = log_put(c, tx, bb_val(c->adds))) == 0)
			c->adds++;
	for (int i = 0; !rc && i < nget; i++) {
		uint8_t v;
		if ((rc = log_take(c, tx, &v)) == 0)
			bb_got(c, v);
	}
	return rc;
}

static int log_tx(struct bb_ctx *c, int nadd, int nget)
{
	pmtx_tx *tx;
	int rc = pmtx_begin(c->r, c->rt, &tx);
	if (rc)
		return rc;
	return bench_tx_end(tx, log_apply(c, tx, nadd, nget));
}

static int cow_tx(struct bb_ctx *c, int nadd, int nget)
{
	pmtx_tx *tx;
	void *p;
	int rc = pmtx_begin(c->r, PMTX_RT_COW, &tx);
	if (rc)
		return rc;
	rc = pmtx_cow_open(tx, c->w, PMTX_COW_WRITE, NULL, &p);
	if (!rc)
		rc = bb_apply(c, p, nadd, nget);
	return bench_tx_end(tx, rc);
}

/* PMDK: snapshot each field before storing to it. A full or empty buffer
 * aborts the transaction (longjmp to TX_ONABORT). */
static void pmdk_put(struct bbuf *b, uint8_t v)
{
	if (bbuf_count(b) == BBUF_SIZE)
		pmemobj_tx_abort(EAGAIN);
	uint8_t *slot = &b->buf[b->in % BBUF_SIZE];
	pmemobj_tx_add_range_direct(slot, 1);
	*slot = v;
	pmemobj_tx_add_range_direct(&b->in, 1);
	b->in = (uint8_t)((b->in + 1) % BBUF_POS);
}

static uint8_t pmdk_take(struct bbuf *b)
{
	if (b->in == b->out)
		pmemobj_tx_abort(EAGAIN);
	uint8_t v = b->buf[b->out % BBUF_SIZE];
	pmemobj_tx_add_range_direct(&b->out, 1);
	b->out = (uint8_t)((b->out + 1) % BBUF_POS);
	return v;
}

static void pmdk_apply(struct bb_ctx *c, int nadd, int nget)
{
	for (int i = 0; i < nadd; i++)
		pmdk_put(c->b, bb_val(c->adds++));
	for (int i = 0; i < nget; i++)
		bb_got(c, pmdk_take(c->b));
}

struct bb_steps {
	struct bb_ctx *c;
	int nadd, nget;
};

static void pmdk_body(void *arg)
{
	struct bb_steps *b = arg;
	pmdk_apply(b->c, b->nadd, b->nget);
}

static int pmdk_tx(struct bb_ctx *c, int nadd, int nget)
{
	struct bb_steps b = {c, nadd, nget};
	return bench_pmdk_tx(c->pop, pmdk_body, &b)
	               ? bb_unexpected("full or empty (pmdk abort)")
	               : 0;
}

static int bb_tx(struct bb_ctx *c, int nadd, int nget)
{
	switch (c->kind) {
	case BB_CLTX: return cltx_tx(c, nadd, nget);
	case BB_LOG: return log_tx(c, nadd, nget);
	case BB_COW: return cow_tx(c, nadd, nget);
	case BB_PMDK: return pmdk_tx(c, nadd, nget);
	default: return bb_apply(c, c->b, nadd, nget);
	}
}

/* ---- the scenarios ---- */

/* The committed buffer, as stored. */
static struct bbuf *bb_view(struct bb_ctx *c)
{
	if (c->kind == BB_CLTX)
		return (struct bbuf *)bbuf_line_valid(c->line);
	if (c->kind == BB_COW)
		return (struct bbuf *)pmtx_cow_peek(c->r, c->w);
	return c->b;
}

/* Scenario 1's reset: empty the buffer with one naked byte store. */
static void bb_reset(struct bb_ctx *c)
{
	struct bbuf *b = bb_view(c);
	b->out = b->in;
}

static int bb_scenario(struct bb_ctx *c)
{
	int rc = 0;
	switch (c->scenario) {
	case 1:
		bb_reset(c);
		for (int i = 0; !rc && i < BBUF_SIZE; i++)
			rc = bb_tx(c, 1, 0);
		return rc;
	case 2:
		for (int i = 0; !rc && i < BBUF_SIZE; i++)
			rc = bb_tx(c, 1, 0);
		for (int i = 0; !rc && i < BBUF_SIZE; i++)
			rc = bb_tx(c, 0, 1);
		return rc;
	default:
		rc = bb_tx(c, BBUF_SIZE, 0);
		return rc ? rc : bb_tx(c, 0, BBUF_SIZE);
	}
}

static int bb_run(void *vctx, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		int rc = bb_scenario(vctx);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- validation ---- */

static int bb_check_model(const struct bb_ctx *c, const struct bbuf *b)
{
	uint64_t a = c->adds;
	unsigned in = (unsigned)(a % BBUF_POS);
	unsigned out = c->scenario == 1 ? (unsigned)((a - BBUF_SIZE) % BBUF_POS)
	                                : in;
	if (!bbuf_consistent(b) || b->in != in || b->out != out) {
		fprintf(stderr, "bbuf: positions in=%u out=%u, expected %u %u "
		        "after %llu adds\n", b->in, b->out, in, out,
		        (unsigned long long)a);
		return PMTX_E_CORRUPT;
	}
	for (uint64_t k = a - BBUF_SIZE; k < a; k++)
		if (b->buf[k % BBUF_SIZE] != bb_val(k)) {
			unsigned s = (unsigned)(k % BBUF_SIZE);
			fprintf(stderr, "bbuf: slot %u holds %u, expected %u\n",
			        s, b->buf[s], bb_val(k));
			return PMTX_E_CORRUPT;
		}
	return 0;
}

static int bb_check(void *vctx)
{
	struct bb_ctx *c = vctx;
	if (c->bad) {
		fprintf(stderr, "bbuf: %llu gets returned the wrong byte\n",
		        (unsigned long long)c->bad);
		return PMTX_E_CORRUPT;
	}
	uint64_t gets = c->scenario == 1 ? 0 : c->adds;
	if (c->adds < BBUF_SIZE || c->gets != gets) {
		fprintf(stderr, "bbuf: %llu adds and %llu gets\n",
		        (unsigned long long)c->adds,
		        (unsigned long long)c->gets);
		return PMTX_E_CORRUPT;
	}
	return bb_check_model(c, bb_view(c));
}

static void bb_corrupt(void *vctx)
{
	bb_view(vctx)->in = BBUF_POS + 1;
}

/* ---- setup ---- */

static void bb_destroy(void *vctx)
{
	struct bb_ctx *c = vctx;
	bench_close(c->r, c->pop, c->path);
	if (c->kind == BB_PLAIN)
		free(c->b);
	free(c);
}

static struct bb_ctx *bb_ctx_new(enum bb_kind kind, int scenario)
{
	struct bb_ctx *c = calloc(1, sizeof(*c));
	if (c) {
		c->kind = kind;
		c->scenario = scenario;
	}
	return c;
}

static int bb_bind(struct runner *r, struct bb_ctx *c, int rc)
{
	return bench_bind(r, rc, c, bb_run, bb_check, bb_corrupt, bb_destroy);
}

/* pmtx-cow: the root holds the wrapper of the buffer object. */
static int bb_cow_setup(struct bb_ctx *c)
{
	pmtx_off *root = pmtx_root(c->r, NULL);
	pmtx_tx *tx;
	int rc = pmtx_begin(c->r, PMTX_RT_UNDO, &tx);
	if (rc)
		return rc;
	rc = pmtx_cow_new(tx, sizeof(struct bbuf), &c->w);
	if (!rc)
		rc = PMTX_SET(tx, *root, c->w);
	return bench_tx_end(tx, rc);
}

static int bb_pmtx_runner(struct runner *r, const struct bench_opts *o,
                          pmtx_runtime rt, struct bench_cfg cfg, void *arg)
{
	struct bb_ctx *c = bb_ctx_new(rt == BENCH_RT_CLTX ? BB_CLTX
	                              : rt == PMTX_RT_COW ? BB_COW
	                                                  : BB_LOG,
	                              *(int *)arg);
	if (!c)
		return ENOMEM;
	size_t root = rt == BENCH_RT_CLTX ? PMTX_CLTX_ROOM(1)
	              : rt == PMTX_RT_COW ? sizeof(pmtx_off)
	                                  : sizeof(struct bbuf);
	c->rt = rt;
	int rc = bench_region(r, o, rt, cfg, root, BB_REGION_SIZE, &c->r,
	                      c->path);
	if (!rc) {
		c->line = bbuf_of_root(c->r); /* a zero line: an empty buffer */
		c->b = pmtx_root(c->r, NULL);
		if (c->kind == BB_COW)
			rc = bb_cow_setup(c);
	}
	return bb_bind(r, c, rc);
}

static int bb_pmdk_runner(struct runner *r, const struct bench_opts *o,
                          void *arg)
{
	struct bb_ctx *c = bb_ctx_new(BB_PMDK, *(int *)arg);
	if (!c)
		return ENOMEM;
	int rc = bench_pmdk_pool(r, o, sizeof(struct bbuf), PMEMOBJ_MIN_POOL,
	                         &c->pop, c->path);
	if (!rc)
		c->b = pmemobj_direct(pmemobj_root(c->pop, sizeof(struct bbuf)));
	return bb_bind(r, c, rc);
}

static int bb_plain_runner(struct runner *r, const struct bench_opts *o,
                           void *arg)
{
	struct bb_ctx *c = bb_ctx_new(BB_PLAIN, *(int *)arg);
	(void)o;
	if (!c)
		return ENOMEM;
	bench_plain_names(r);
	c->b = calloc(1, sizeof(struct bbuf));
	return bb_bind(r, c, c->b ? 0 : ENOMEM);
}

static void bb_extra(const struct runner *r, char *buf, size_t len)
{
	const struct bb_ctx *c = r->ctx;
	int t = bb_tx_per_op(c->scenario);
	double ops = r->ns ? 1e9 * (double)r->ops / (double)r->ns : 0;
	snprintf(buf, len, "\"tx_per_op\":%d,\"tx_per_s\":%.1f", t, t * ops);
}

static const pmtx_runtime bb_runtimes[] = {
	BENCH_RT_CLTX, PMTX_RT_UNDO, PMTX_RT_REDO, PMTX_RT_REDO_ASYNC,
	PMTX_RT_COW, PMTX_RT_TWIN,
};

static const struct bench_makers bb_makers = BENCH_MAKERS(
	bb_runtimes, bb_pmtx_runner, bb_pmdk_runner, bb_plain_runner);

static int bb_point(const struct bench_opts *o, int scenario)
{
	struct runner rs[BENCH_MAX_RUNNERS];
	int n = 0, rc = bench_runners(rs, &n, o, &bb_makers, &scenario);
	char params[32];
	snprintf(params, sizeof(params), "\"scenario\":%d", scenario);
	return bench_point(rs, n, rc, o, "bbuf", params, bb_extra);
}

int wl_bbuf(const struct bench_opts *o)
{
	static const char *const systems[] = {
		"pmtx-cltx", "pmtx-undo", "pmtx-redo", "pmtx-redo-async",
		"pmtx-cow", "pmtx-twin", "pmdk", "plain", NULL};
	long sc[8];
	if (bench_check_systems(o, "bbuf", systems))
		return PMTX_E_INVAL;
	int nsc = bench_param_in(o, "bbuf", "scenario", "1,2,3", 1, 3, sc, 8);
	int rc = nsc < 0 ? PMTX_E_INVAL : 0;
	for (int i = 0; !rc && i < nsc; i++)
		rc = bb_point(o, (int)sc[i]);
	return rc;
}
