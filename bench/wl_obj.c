/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_obj.c - the `single-obj` and `multi-obj` workloads of seed 004
 * (Wan et al., section III-C): undo vs redo logging with synchronous and
 * asynchronous truncation, by log entry size and read ratio.
 *
 * What the seed says, and where it comes from. Its workloads are NVML's
 * pmembench obj_tx_add_range benchmark: `basic` ("each transaction ...
 * adds the same object to undo/redo log many times": one object of
 * data-size bytes, added whole n times in one transaction) and `all-obj`
 * ("adds all the objects": n objects of data-size bytes, each added whole
 * once per transaction), with data-size 128::2::16384 and n = 1000 (Table
 * II, "Number of operations 1000"; in pmembench that is both the number of
 * add_range calls per transaction and of transactions). The seed then
 * makes 10, 30 or 50 % of each transaction's operations reads. Its y axis
 * is transactions per second.
 *
 * So here:
 *   log entry size  `size` bytes: one object, always read or written
 *                   whole (a write is one logged range of `size` bytes).
 *   single-obj      one object; a transaction performs `ops` (1000)
 *                   operations on it.
 *   multi-obj       `objects` (1000) objects; a transaction performs one
 *                   operation on each, in order.
 *   read ratio      `read_pct` % of a transaction's operations are reads
 *                   (of the whole object, into DRAM), the others writes of
 *                   a new value (the whole object). Which operations read
 *                   is fixed once per parameter point from `seed`: exactly
 *                   round(ops * read_pct / 100) of them, shuffled; the
 *                   pattern is rotated by one position per transaction so
 *                   that, in multi-obj, which objects are read changes.
 *                   Every system runs the same sequence.
 *   op              one transaction. Extra field bytes_per_s = bytes the
 *                   transactions write to the objects per second (writes
 *                   per transaction * size * ops_per_s; logging excluded).
 *
 * Seed choices the text leaves open, and what is done here:
 *  - The objects are allocated before the measurement, as pmembench does
 *    (the seed's "allocates" describes the benchmark's setup), each a
 *    block of its own (pmtx_alloc / pmemobj_alloc / malloc).
 *  - A write must store something: the value is the object's initial
 *    contents with one 8-byte word replaced by a stamp (top bit set, a
 *    counter below it), the word chosen by the stamp. The writer keeps that
 *    value in DRAM and updates two words of it per write.
 *  - The seed's PMDK dedups repeated ranges of one transaction; pmtx's undo
 *    log does too (its lineset), while pmtx's redo log appends a record
 *    per write, which is part of what single-obj measures.
 *
 * Systems: pmtx-undo, pmtx-redo, pmtx-redo-async (pmtx_write / pmtx_read of
 * the whole object), pmtx-cow (each object a copy-on-write object; a write
 * opens it for writing with a copy constructor that copies nothing, since
 * the whole payload is overwritten next, then stores into the copy; a read
 * opens it for reading), pmtx-twin (the same pmtx_write / pmtx_read, in a
 * twin region: PMTX_RT_TWIN, twice the bytes; a read is a plain load, a
 * write stores in place and notes its lines in DRAM, and commit flushes the
 * distinct lines written and copies them to the back copy (non-temporal):
 * 4 barriers per transaction; single-obj's repeated writes of one object
 * cost one copy of its lines), pmdk (TX_BEGIN,
 * pmemobj_tx_add_range_direct of the whole object, then memcpy; reads are
 * memcpy), plain (memcpy in DRAM).
 * pmtx regions are created with 4 transaction descriptors instead of 64,
 * to bound their size: a descriptor's log grows to hold its largest
 * transaction (up to 16 MB here) and never shrinks; redo-async keeps a log
 * until its truncation retires it, and a thread committing faster than its
 * truncations uses every descriptor; and a thread's choice of descriptor
 * follows the one it used last in ANY region, so with the runners
 * interleaved even an undo region sees several descriptors used. Each
 * region is sized for a full log on every descriptor, and before the
 * measurement every descriptor's log is grown to the size a transaction
 * needs (OBJ_NDESC threads each hold a descriptor at once and write as
 * much as one transaction logs, then abort), so that no timed transaction
 * pays for growing a log (pmtx-cow, whose log holds one small record per
 * object written, is not pre-grown). (redo-async with 4 descriptors measured no
 * slower than with 64, at 100 writes of 4 KiB per transaction.) pmtx-twin
 * keeps no persistent log (its list of lines is in DRAM): its region holds
 * the objects and their back copy only, and is not pre-grown. Setup
 * transactions are undo ones, twin in a twin region (which refuses any
 * other runtime): bench_setup_rt.
 *
 * Validation. Each runner keeps, per object, the stamp of its last write
 * (its DRAM shadow: the contents follow from it). Every read checks the
 * word that the last write stamped (redo must redirect reads of this
 * transaction's writes); `check` compares every object with its shadow,
 * and for pmtx runs pmtx_heap_check. `corrupt` flips a byte of object 0.
 */
#include <libpmemobj.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define OBJ_NDESC 4
#define OBJ_STAMP (1ull << 63) /* set in stamps, clear in initial words */
#define OBJ_SETUP_BATCH 64

/* One parameter point, shared (read-only) by all its runners. */
struct obj_plan {
	int multi;
	long size, read_pct, ops, nobj, nwrites;
	size_t words;     /* size / 8 */
	uint8_t *is_read; /* ops entries: the read pattern */
	uint64_t *base;   /* the initial contents of every object */
};

enum obj_kind { OBJ_LOG, OBJ_COW, OBJ_PMDK, OBJ_PLAIN };

struct obj_ctx {
	const struct obj_plan *pl;
	enum obj_kind kind;
	pmtx_runtime rt;
	pmtx_region *r;
	PMEMobjpool *pop;
	char path[256];
	void **obj;      /* the objects (log runtimes, pmdk, plain) */
	pmtx_off *w;     /* pmtx-cow: their wrappers */
	uint64_t *val;   /* the value the next write stores */
	uint64_t *rbuf;  /* reads land here (in val's block, after it) */
	uint64_t *last;  /* per object: its last stamp, 0 = initial */
	size_t vpos;     /* the word of val that holds a stamp */
	uint64_t stamp, txno, bad_reads;
};

/* ---- the operations ---- */

static inline int op_reads(const struct obj_ctx *c, long k)
{
	return c->pl->is_read[(uint64_t)(k + c->txno) % (uint64_t)c->pl->ops];
}

static inline long op_obj(const struct obj_plan *pl, long k)
{
	return pl->multi ? k : 0;
}

/* Make val the next value of object i and note it in the shadow. */
static void next_value(struct obj_ctx *c, long i)
{
	c->val[c->vpos] = c->pl->base[c->vpos];
	uint64_t s = ++c->stamp;
	c->vpos = s % c->pl->words;
	c->val[c->vpos] = s | OBJ_STAMP;
	c->last[i] = s;
}

/* The word of object i that its last write stamped, and its value. */
static uint64_t shadow_word(const struct obj_ctx *c, long i, size_t *pos)
{
	uint64_t s = c->last[i];
	*pos = s ? s % c->pl->words : 0;
	return s ? s | OBJ_STAMP : c->pl->base[0];
}

static void note_read(struct obj_ctx *c, long i)
{
	size_t pos;
	uint64_t want = shadow_word(c, i, &pos);
	c->bad_reads += c->rbuf[pos] != want;
}

static int log_ops(struct obj_ctx *c, pmtx_tx *tx)
{
	const struct obj_plan *pl = c->pl;
	const size_t size = (size_t)pl->size;
	for (long k = 0; k < pl->ops; k++) {
		long i = op_obj(pl, k);
		int rc;
		if (op_reads(c, k)) {
			rc = pmtx_read(tx, c->rbuf, c->obj[i], size);
			if (!rc)
				note_read(c, i);
		} else {
			next_value(c, i);
			rc = pmtx_write(tx, c->obj[i], c->val, size);
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* The whole payload is overwritten right after the open: copy nothing. */
static void obj_no_copy(void *dst, const void *src, size_t n)
{
	(void)dst, (void)src, (void)n;
}

static int cow_ops(struct obj_ctx *c, pmtx_tx *tx)
{
	const struct obj_plan *pl = c->pl;
	for (long k = 0; k < pl->ops; k++) {
		long i = op_obj(pl, k);
		int rd = op_reads(c, k);
		void *p;
		int rc = pmtx_cow_open(tx, c->w[i], rd ? PMTX_COW_READ
		                                       : PMTX_COW_WRITE,
		                       obj_no_copy, &p);
		if (rc)
			return rc;
		if (rd) {
			memcpy(c->rbuf, p, (size_t)pl->size);
			note_read(c, i);
		} else {
			next_value(c, i);
			memcpy(p, c->val, (size_t)pl->size);
		}
	}
	return 0;
}

static int pmtx_obj_tx(struct obj_ctx *c)
{
	pmtx_tx *tx;
	int rc = pmtx_begin(c->r, c->rt, &tx);
	if (rc)
		return rc;
	rc = c->kind == OBJ_COW ? cow_ops(c, tx) : log_ops(c, tx);
	c->txno++;
	return bench_tx_end(tx, rc);
}

/* pmdk (add_range before each write) and plain (no transaction). */
static void direct_ops(struct obj_ctx *c, int pmdk)
{
	const struct obj_plan *pl = c->pl;
	const size_t size = (size_t)pl->size;
	for (long k = 0; k < pl->ops; k++) {
		long i = op_obj(pl, k);
		if (op_reads(c, k)) {
			memcpy(c->rbuf, c->obj[i], size);
			note_read(c, i);
			continue;
		}
		next_value(c, i);
		if (pmdk)
			pmemobj_tx_add_range_direct(c->obj[i], size);
		memcpy(c->obj[i], c->val, size);
	}
}

static void pmdk_body(void *vctx)
{
	direct_ops(vctx, 1);
}

static int pmdk_obj_tx(struct obj_ctx *c)
{
	int rc = bench_pmdk_tx(c->pop, pmdk_body, c);
	c->txno++;
	return rc;
}

static int obj_run(void *vctx, uint64_t n)
{
	struct obj_ctx *c = vctx;
	for (uint64_t t = 0; t < n; t++) {
		int rc = 0;
		if (c->kind == OBJ_PMDK)
			rc = pmdk_obj_tx(c);
		else if (c->kind == OBJ_PLAIN)
			direct_ops(c, 0), c->txno++;
		else
			rc = pmtx_obj_tx(c);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- validation ---- */

static void *obj_view(const struct obj_ctx *c, long i)
{
	if (c->kind == OBJ_COW)
		return (void *)pmtx_cow_peek(c->r, c->w[i]);
	return c->obj[i];
}

static int obj_check_one(const struct obj_ctx *c, long i)
{
	const uint64_t *p = obj_view(c, i);
	size_t pos;
	uint64_t want = shadow_word(c, i, &pos);
	for (size_t k = 0; k < c->pl->words; k++) {
		uint64_t e = c->last[i] && k == pos ? want : c->pl->base[k];
		if (p[k] != e) {
			fprintf(stderr, "obj: object %ld word %zu is %#llx, "
			        "expected %#llx\n", i, k,
			        (unsigned long long)p[k],
			        (unsigned long long)e);
			return PMTX_E_CORRUPT;
		}
	}
	return 0;
}

static int obj_check(void *vctx)
{
	struct obj_ctx *c = vctx;
	if (c->bad_reads) {
		fprintf(stderr, "obj: %llu reads did not see the last write\n",
		        (unsigned long long)c->bad_reads);
		return PMTX_E_CORRUPT;
	}
	for (long i = 0; i < c->pl->nobj; i++) {
		int rc = obj_check_one(c, i);
		if (rc)
			return rc;
	}
	pmtx_heap_stats st;
	if (c->r && pmtx_heap_check(c->r, &st)) {
		fprintf(stderr, "obj: heap check: %s\n", st.first_error);
		return PMTX_E_CORRUPT;
	}
	return 0;
}

static void obj_corrupt(void *vctx)
{
	struct obj_ctx *c = vctx;
	((uint8_t *)obj_view(c, 0))[c->pl->size / 2] ^= 0x5a;
}

/* ---- setup ---- */

static void obj_destroy(void *vctx)
{
	struct obj_ctx *c = vctx;
	bench_close(c->r, c->pop, c->path);
	for (long i = 0; c->kind == OBJ_PLAIN && c->obj && i < c->pl->nobj; i++)
		free(c->obj[i]);
	free(c->obj);
	free(c->w);
	free(c->val);
	free(c->last);
	free(c);
}

static struct obj_ctx *obj_ctx_new(const struct obj_plan *pl,
                                   enum obj_kind kind)
{
	struct obj_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->pl = pl;
	c->kind = kind;
	c->obj = calloc((size_t)pl->nobj, sizeof(*c->obj));
	c->w = calloc((size_t)pl->nobj, sizeof(*c->w));
	c->val = malloc(2 * (size_t)pl->size);
	c->rbuf = c->val ? c->val + pl->words : NULL;
	c->last = calloc((size_t)pl->nobj, sizeof(*c->last));
	if (!c->obj || !c->w || !c->val || !c->last) {
		obj_destroy(c);
		return NULL;
	}
	memcpy(c->val, pl->base, (size_t)pl->size);
	return c;
}

static int obj_bind(struct runner *r, struct obj_ctx *c, int rc)
{
	return bench_bind(r, rc, c, obj_run, obj_check, obj_corrupt,
	                  obj_destroy);
}

/* Writes a transaction of runtime rt logs (undo logs an object once). */
static long obj_logged_writes(const struct obj_plan *pl, pmtx_runtime rt)
{
	if (rt == PMTX_RT_UNDO && !pl->multi && pl->nwrites)
		return 1;
	return pl->nwrites;
}

/* A region that holds the objects and the logs that runtime rt keeps:
 * records of `size` bytes split at 4 KiB (redo), one per write (redo) or
 * per distinct object written (undo), a full log on each of the OBJ_NDESC
 * descriptors (see the design comment). */
static size_t obj_region_size(const struct obj_plan *pl, pmtx_runtime rt)
{
	size_t S = (size_t)pl->size, blk = bench_heap_block(S);
	size_t rec = S + 128 * (S / 4096 + 2);
	size_t distinct = pl->multi ? (size_t)pl->nwrites : pl->nwrites > 0;
	size_t log = (size_t)obj_logged_writes(pl, rt) * rec;
	if (rt == PMTX_RT_COW)
		log = distinct * 256;
	size_t data = (size_t)pl->nobj * blk;
	if (rt == PMTX_RT_COW)
		data += distinct * blk + (size_t)pl->nobj * 64;
	if (rt == PMTX_RT_TWIN) /* no log; the heap, and its back copy */
		return 2 * (data + (8u << 20)) + (1u << 20);
	return data + OBJ_NDESC * (log * 5 / 4 + (64u << 10)) + (8u << 20);
}

/* bench_region() with OBJ_NDESC descriptors. */
static int obj_region(struct runner *r, const struct bench_opts *o,
                      pmtx_runtime rt, struct bench_cfg cfg,
                      struct obj_ctx *c)
{
	pmtx_options opt;
	pmtx_options_init(&opt);
	opt.root_size = 64;
	opt.ndesc = OBJ_NDESC;
	return bench_region_opt(r, o, rt, cfg, &opt,
	                        obj_region_size(c->pl, rt), &c->r, c->path);
}

/* Allocate object i in tx, holding the initial contents. */
static int obj_alloc_one(void *vctx, pmtx_tx *tx, uint64_t i)
{
	struct obj_ctx *c = vctx;
	size_t S = (size_t)c->pl->size;
	pmtx_off off;
	int rc = c->kind == OBJ_COW ? pmtx_cow_new(tx, S, &c->w[i])
	                            : pmtx_alloc(tx, S, &off);
	if (rc)
		return rc;
	if (c->kind != OBJ_COW)
		c->obj[i] = pmtx_ptr(c->r, off);
	void *p = obj_view(c, (long)i); /* fresh: naked stores + flush */
	memcpy(p, c->pl->base, S);
	pmtx_flush(c->r, p, S);
	return 0;
}

static int obj_pmtx_setup(struct obj_ctx *c)
{
	return bench_setup_txs(c->r, bench_setup_rt(c->rt),
	                       (uint64_t)c->pl->nobj, OBJ_SETUP_BATCH,
	                       obj_alloc_one, c);
}

struct obj_warm {
	struct obj_ctx *c;
	pthread_barrier_t *all_leased;
	int rc;
};

/* Grow one descriptor's log: lease it (while the other warm threads hold
 * theirs, so each gets its own), write what a transaction logs, abort.
 * Redo writes leave the objects untouched, whatever runtime rt is. */
static void *obj_warm_one(void *arg)
{
	struct obj_warm *w = arg;
	const struct obj_plan *pl = w->c->pl;
	pmtx_tx *tx;
	w->rc = pmtx_begin(w->c->r, PMTX_RT_REDO, &tx);
	pthread_barrier_wait(w->all_leased);
	if (w->rc)
		return NULL;
	for (long k = 0; !w->rc && k < obj_logged_writes(pl, w->c->rt); k++)
		w->rc = pmtx_write(tx, w->c->obj[op_obj(pl, k)], pl->base,
		                   (size_t)pl->size);
	pmtx_abort(tx);
	return NULL;
}

static int obj_warm_logs(struct obj_ctx *c)
{
	pthread_barrier_t bar;
	pthread_t th[OBJ_NDESC];
	struct obj_warm w[OBJ_NDESC];
	int n = 0, rc = 0;
	pthread_barrier_init(&bar, NULL, OBJ_NDESC);
	for (; n < OBJ_NDESC; n++) {
		w[n] = (struct obj_warm){c, &bar, 0};
		if (pthread_create(&th[n], NULL, obj_warm_one, &w[n]))
			break;
	}
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		rc = rc ? rc : w[i].rc;
	}
	pthread_barrier_destroy(&bar);
	return n < OBJ_NDESC ? EAGAIN : rc;
}

static int obj_pmtx_runner(struct runner *r, const struct bench_opts *o,
                           pmtx_runtime rt, struct bench_cfg cfg, void *arg)
{
	const struct obj_plan *pl = arg;
	struct obj_ctx *c = obj_ctx_new(pl, rt == PMTX_RT_COW ? OBJ_COW
	                                                      : OBJ_LOG);
	if (!c)
		return ENOMEM;
	c->rt = rt;
	int rc = obj_region(r, o, rt, cfg, c);
	if (!rc)
		rc = obj_pmtx_setup(c);
	if (!rc && c->kind == OBJ_LOG && rt != PMTX_RT_TWIN)
		rc = obj_warm_logs(c);
	return obj_bind(r, c, rc);
}

static int obj_pmdk_setup(struct obj_ctx *c)
{
	size_t S = (size_t)c->pl->size;
	for (long i = 0; i < c->pl->nobj; i++) {
		PMEMoid oid;
		if (pmemobj_alloc(c->pop, &oid, S, 1, NULL, NULL)) {
			fprintf(stderr, "pmemobj_alloc: %s\n",
			        pmemobj_errormsg());
			return PMTX_E_NOMEM;
		}
		c->obj[i] = pmemobj_direct(oid);
		pmemobj_memcpy_persist(c->pop, c->obj[i], c->pl->base, S);
	}
	return 0;
}

static int obj_pmdk_runner(struct runner *r, const struct bench_opts *o,
                           void *arg)
{
	const struct obj_plan *pl = arg;
	struct obj_ctx *c = obj_ctx_new(pl, OBJ_PMDK);
	if (!c)
		return ENOMEM;
	size_t S = (size_t)pl->size + 64;
	size_t snap = pl->multi ? (size_t)pl->nwrites : 1;
	size_t pool = (size_t)pl->nobj * S * 5 / 4 + 2 * snap * S + (16u << 20);
	int rc = bench_pmdk_pool(r, o, 0, pool, &c->pop, c->path);
	return obj_bind(r, c, rc ? rc : obj_pmdk_setup(c));
}

static int obj_plain_runner(struct runner *r, const struct bench_opts *o,
                            void *arg)
{
	const struct obj_plan *pl = arg;
	(void)o;
	struct obj_ctx *c = obj_ctx_new(pl, OBJ_PLAIN);
	if (!c)
		return ENOMEM;
	bench_plain_names(r);
	int rc = 0;
	for (long i = 0; !rc && i < pl->nobj; i++) {
		if (!(c->obj[i] = malloc((size_t)pl->size)))
			rc = ENOMEM;
		else
			memcpy(c->obj[i], pl->base, (size_t)pl->size);
	}
	return obj_bind(r, c, rc);
}

/* ---- the sweep ---- */

static void obj_plan_free(struct obj_plan *pl)
{
	free(pl->is_read);
	free(pl->base);
}

/* The read pattern and the initial contents, from seed. */
static int obj_plan_init(struct obj_plan *pl, uint64_t seed)
{
	uint64_t s = seed ? seed : 1;
	long nreads = (pl->ops * pl->read_pct + 50) / 100;
	pl->nwrites = pl->ops - nreads;
	pl->words = (size_t)pl->size / 8;
	pl->is_read = calloc((size_t)pl->ops, 1);
	pl->base = malloc((size_t)pl->size);
	if (!pl->is_read || !pl->base) {
		obj_plan_free(pl);
		return ENOMEM;
	}
	for (long k = 0; k < nreads; k++)
		pl->is_read[k] = 1;
	for (long k = pl->ops - 1; k > 0; k--) { /* Fisher-Yates */
		long j = (long)(bench_rand(&s) % (uint64_t)(k + 1));
		uint8_t t = pl->is_read[k];
		pl->is_read[k] = pl->is_read[j];
		pl->is_read[j] = t;
	}
	for (size_t k = 0; k < pl->words; k++)
		pl->base[k] = bench_rand(&s) & ~OBJ_STAMP;
	return 0;
}

static const struct bench_makers obj_makers = BENCH_MAKERS(
	bench_obj_runtimes, obj_pmtx_runner, obj_pmdk_runner, obj_plain_runner);

static void obj_extra(const struct runner *r, char *buf, size_t len)
{
	const struct obj_ctx *c = r->ctx;
	double ops = r->ns ? 1e9 * (double)r->ops / (double)r->ns : 0;
	snprintf(buf, len, "\"bytes_per_s\":%.1f",
	         ops * (double)c->pl->nwrites * (double)c->pl->size);
}

static int obj_point(const struct bench_opts *o, struct obj_plan *pl,
                     uint64_t seed)
{
	const char *name = pl->multi ? "multi-obj" : "single-obj";
	char params[128];
	int rc = obj_plan_init(pl, seed), n = 0;
	if (rc)
		return rc;
	snprintf(params, sizeof(params),
	         "\"size\":%ld,\"read_pct\":%ld,\"%s\":%ld", pl->size,
	         pl->read_pct, pl->multi ? "objects" : "ops",
	         pl->multi ? pl->nobj : pl->ops);
	struct runner rs[BENCH_MAX_RUNNERS];
	rc = bench_runners(rs, &n, o, &obj_makers, pl);
	rc = bench_point(rs, n, rc, o, name, params, obj_extra);
	obj_plan_free(pl);
	return rc;
}

static int obj_bad_param(const char *name, const char *what)
{
	fprintf(stderr, "%s: %s\n", name, what);
	return PMTX_E_INVAL;
}

static int obj_sweep(const struct bench_opts *o, int multi)
{
	static const char *const systems[] = {
		"pmtx-undo", "pmtx-redo", "pmtx-redo-async", "pmtx-cow",
		"pmtx-twin", "pmdk", "plain", NULL};
	const char *name = multi ? "multi-obj" : "single-obj";
	long sizes[32], pcts[32];
	if (bench_check_systems(o, name, systems))
		return PMTX_E_INVAL;
	int ns = bench_param(o, "size", "128,256,512,1024,2048,4096,8192,16384",
	                     sizes, 32);
	int np = bench_param_in(o, name, "read_pct", "0,10,30,50", 0, 100, pcts,
	                        32);
	long count = multi ? bench_param1(o, "objects", 1000)
	                   : bench_param1(o, "ops", 1000);
	uint64_t seed = (uint64_t)bench_param1(o, "seed", 1);
	if (count < 1)
		return obj_bad_param(name, multi ? "objects must be >= 1"
		                                 : "ops must be >= 1");
	for (int i = 0; i < ns; i++)
		if (sizes[i] < 8 || sizes[i] % 8)
			return obj_bad_param(name, "size must be a positive "
			                           "multiple of 8");
	if (np < 0)
		return PMTX_E_INVAL;
	for (int i = 0; i < ns; i++)
		for (int j = 0; j < np; j++) {
			struct obj_plan pl = {.multi = multi, .size = sizes[i],
			                      .read_pct = pcts[j], .ops = count,
			                      .nobj = multi ? count : 1};
			int rc = obj_point(o, &pl, seed);
			if (rc)
				return rc;
		}
	return 0;
}

int wl_single_obj(const struct bench_opts *o)
{
	return obj_sweep(o, 0);
}

int wl_multi_obj(const struct bench_opts *o)
{
	return obj_sweep(o, 1);
}
