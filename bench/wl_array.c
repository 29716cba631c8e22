/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_array.c - the `array` and `array-raw` workloads: seed 000 section 6.1
 * (the SoftWrAP Array microbenchmark), transaction latency under a
 * read/write mix.
 *
 * An array of `slots` slots, each of `slot` 64-bit integers (1..64), lives
 * in the region's root. Each transaction draws a random start index and
 * accesses `per_tx` (20) consecutive slots, clamped so the run stays inside
 * the array (start uniform in [0, slots - per_tx]), so no slot repeats in a
 * transaction. Each access is, with probability write_pct/100, a write
 * (read-modify-write: every integer of the slot incremented), else a read
 * of every integer of the slot (summed into a sink). An op is one
 * transaction.
 *   array      the seed's "one shot" update: the slot is copied into a
 *              private DRAM buffer (pmtx_read), incremented there, and
 *              written back with one pmtx_write.
 *   array-raw  the seed's "read-after-write intensive" version: each
 *              integer is read through the transaction (pmtx_read), incremented
 *              and written back (pmtx_write), one at a time, so redo looks
 *              up its own writes on every read.
 * The seed's writes increment; so do these (the issue suggested storing a
 * value derived from the transaction counter; incrementing is what the seed
 * measures and needs the read too).
 *
 * Systems (the pmtx ones under each configuration of bench_configs())
 *   pmtx-twin  used the way PMDK's runner is written (its reads are
 *       plain loads, so pmtx_read would only add a call): a read sums the
 *       slot in place; an array write copies the slot to a buffer,
 *       increments it and pmtx_write's it back; an array-raw write does
 *       pmtx_add_range of each 8-byte integer, then ++ in place. It runs
 *       in a twin region (PMTX_RT_TWIN: twice the bytes, bench_region):
 *       a write stores in place and notes its lines, and commit flushes
 *       them and copies them to the back copy (non-temporal stores): 4
 *       barriers per transaction that writes, none for one that only
 *       reads.
 *   pmtx-undo, pmtx-redo, pmtx-redo-async, pmtx-auto  as above (undo
 *       runs the same code as auto's undo arm, so that the two compare).
 *       Once a redo transaction has written, every later read in it looks
 *       up its lines in the write set (reads before the first write are
 *       plain loads). pmtx-auto begins with PMTX_RT_AUTO (one call
 *       site).
 *   pmtx-cow  every slot is a copy-on-write object of slot * 8 bytes; the
 *       root holds the wrappers. A read opens the object for reading and
 *       sums the payload; a write (array and array-raw alike: the private
 *       copy is the private buffer) opens it for writing and increments the
 *       copy. This runner uses min(slots, cow_slots) slots, emitted as
 *       "cow_slots". By default cow_slots = slots: creating 1M objects
 *       takes about 1 s, and a smaller array would give COW a smaller
 *       working set, the very cost (cache locality) the seed attributes
 *       its slowness to. --p cow_slots=65536 caps it to save memory.
 *   pmdk  libpmemobj: a read sums the slot in place; an array write copies
 *       the slot to a buffer, increments it, pmemobj_tx_add_range's the
 *       slot and memcpy's the buffer back; an array-raw write does
 *       pmemobj_tx_add_range of each 8-byte integer, then ++ in place.
 *   plain  the same accesses with plain loads and stores and no transaction
 *       on a pmtx region's root: the uninstrumented floor, on the same kind
 *       of mapping as the pmtx systems (same page size and TLB behaviour).
 * pmtx-cltx does not apply (a slot can be larger than a cache line).
 *
 * Parameters (--p): slots (1000000), slot (sweep, "4,64"), write_pct
 * (sweep, "0,10,...,100"), per_tx (20), seed (1), cow_slots (= slots),
 * inplace (1; 0: twin goes through pmtx_read and pmtx_write like the
 * others, so that a persistence trace sees every store).
 * Every runner draws the same slots and coins from the same seed.
 *
 * Measurement. Setting up an array is costly (1M slots of 64 integers is
 * 512 MiB per runner, zeroed by the region's posix_fallocate, then
 * initialised), so the runners of one slot size are built once and
 * measured at every write_pct in turn (each point is interleaved and
 * emitted as bench_point would, with fresh accumulators); they are checked
 * and destroyed after the last point. The array is initialised with naked
 * stores and one persist, outside the measurement. Each line carries the
 * extra field "setup_s": that runner's region creation + initialisation.
 *
 * Validation (check). Every runner keeps a DRAM shadow: the number of
 * writes applied to each slot. Integer j of slot s starts as s * 64 + j, so
 * after the run it must equal s * 64 + j + count[s]. corrupt
 * (--inject-fault) flips the low bit of integer 0 of slot 0.
 */
#include <libpmemobj.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MAX_SLOT 64
#define SETUP_BATCH 256u    /* COW objects created per setup transaction */
#define SLACK (64ull << 20) /* region bytes beyond the data, for logs */

enum arr_kind { AR_PMTX, AR_COW, AR_PMDK, AR_PLAIN };

struct arr_params {
	uint64_t slots;     /* slots of the array */
	long slot;          /* integers per slot */
	long write_pct;     /* changed between the points of one sweep */
	long per_tx;
	uint64_t seed;
	uint64_t cow_slots; /* slots of the cow runner: min(slots, cap) */
	int raw;            /* array-raw */
	int inplace;        /* twin: as the PMDK runner (1) or not */
};

struct arr_ctx {
	struct arr_params p;
	enum arr_kind kind;
	pmtx_runtime rt;
	int inplace;       /* twin: plain loads, as pmdk_access */
	uint64_t nslots;   /* p.slots, or p.cow_slots for cow */
	uint64_t rng;
	uint64_t sink;     /* sum of what reads read */
	uint32_t *count;   /* shadow: writes applied to each slot */
	uint64_t *data;    /* nslots * slot integers (all kinds but cow) */
	pmtx_off *wrap;    /* cow: nslots wrappers, in the root */
	pmtx_region *r;
	PMEMobjpool *pop;
	PMEMoid root;
	char path[256];
	uint64_t buf[MAX_SLOT];
};

static uint64_t rng_seed(uint64_t seed)
{
	return seed ^ 0x9e3779b97f4a7c15ull; /* xorshift needs nonzero */
}

static size_t slot_bytes(const struct arr_ctx *c)
{
	return (size_t)c->p.slot * sizeof(uint64_t);
}

/* Slot s, wherever the kind keeps it (cow: the committed payload). */
static uint64_t *slot_at(const struct arr_ctx *c, uint64_t s)
{
	if (c->kind == AR_COW)
		return (uint64_t *)pmtx_cow_peek(c->r, c->wrap[s]);
	return c->data + s * (uint64_t)c->p.slot;
}

static uint64_t sum(const uint64_t *v, long n)
{
	uint64_t t = 0;
	for (long j = 0; j < n; j++)
		t += v[j];
	return t;
}

static void inc(uint64_t *v, long n)
{
	for (long j = 0; j < n; j++)
		v[j]++;
}

/* ---- one access, per kind ---- */

static int pmtx_access(struct arr_ctx *c, pmtx_tx *tx, uint64_t s, int write)
{
	uint64_t *p = slot_at(c, s);
	if (write && c->p.raw) {
		for (long j = 0; j < c->p.slot; j++) {
			uint64_t v;
			int rc = pmtx_read(tx, &v, &p[j], sizeof(v));
			v++;
			if (rc || (rc = pmtx_write(tx, &p[j], &v, sizeof(v))))
				return rc;
		}
		return 0;
	}
	int rc = pmtx_read(tx, c->buf, p, slot_bytes(c));
	if (rc || !write) {
		c->sink += sum(c->buf, c->p.slot);
		return rc;
	}
	inc(c->buf, c->p.slot);
	return pmtx_write(tx, p, c->buf, slot_bytes(c));
}

/* twin: as pmdk_access, through pmtx's calls. */
static int inplace_access(struct arr_ctx *c, pmtx_tx *tx, uint64_t s,
                          int write)
{
	uint64_t *p = slot_at(c, s);
	if (!write) {
		c->sink += sum(p, c->p.slot);
		return 0;
	}
	if (c->p.raw) {
		for (long j = 0; j < c->p.slot; j++) {
			int rc = pmtx_add_range(tx, &p[j], sizeof(p[j]));
			if (rc)
				return rc;
			p[j]++;
		}
		return 0;
	}
	memcpy(c->buf, p, slot_bytes(c));
	inc(c->buf, c->p.slot);
	return pmtx_write(tx, p, c->buf, slot_bytes(c));
}

static int cow_access(struct arr_ctx *c, pmtx_tx *tx, uint64_t s, int write)
{
	uint64_t *p;
	int rc = pmtx_cow_open(tx, c->wrap[s],
	                       write ? PMTX_COW_WRITE : PMTX_COW_READ, NULL,
	                       (void **)&p);
	if (rc)
		return rc;
	if (write)
		inc(p, c->p.slot);
	else
		c->sink += sum(p, c->p.slot);
	return 0;
}

/* Inside TX_BEGIN: a failed pmemobj_tx_add_range aborts (longjmp). */
static void pmdk_access(struct arr_ctx *c, uint64_t s, int write)
{
	uint64_t *p = slot_at(c, s);
	uint64_t off = s * slot_bytes(c);
	if (!write) {
		c->sink += sum(p, c->p.slot);
	} else if (c->p.raw) {
		for (long j = 0; j < c->p.slot; j++) {
			pmemobj_tx_add_range(c->root, off + (uint64_t)j * 8, 8);
			p[j]++;
		}
	} else {
		memcpy(c->buf, p, slot_bytes(c));
		inc(c->buf, c->p.slot);
		pmemobj_tx_add_range(c->root, off, slot_bytes(c));
		memcpy(p, c->buf, slot_bytes(c));
	}
}

static void plain_access(struct arr_ctx *c, uint64_t s, int write)
{
	uint64_t *p = slot_at(c, s);
	if (!write) {
		c->sink += sum(p, c->p.slot);
	} else if (c->p.raw) {
		inc(p, c->p.slot);
	} else {
		memcpy(c->buf, p, slot_bytes(c));
		inc(c->buf, c->p.slot);
		memcpy(p, c->buf, slot_bytes(c));
	}
}

/* ---- transactions ---- */

static uint64_t tx_start(struct arr_ctx *c)
{
	return bench_rand(&c->rng) % (c->nslots - (uint64_t)c->p.per_tx + 1);
}

/* Draw whether the next access writes; count it in the shadow if so. */
static int coin(struct arr_ctx *c, uint64_t s)
{
	int write = (long)(bench_rand(&c->rng) % 100) < c->p.write_pct;
	c->count[s] += (uint32_t)write;
	return write;
}

static int pmtx_body(void *vctx, pmtx_tx *tx)
{
	struct arr_ctx *c = vctx;
	uint64_t s0 = tx_start(c);
	for (uint64_t s = s0; s < s0 + (uint64_t)c->p.per_tx; s++) {
		int write = coin(c, s);
		int rc = c->kind == AR_COW ? cow_access(c, tx, s, write)
		         : c->inplace ? inplace_access(c, tx, s, write)
		                      : pmtx_access(c, tx, s, write);
		if (rc)
			return rc;
	}
	return 0;
}

static int pmtx_run(void *vctx, uint64_t n)
{
	struct arr_ctx *c = vctx;
	return bench_txs(c->r, c->rt, n, pmtx_body, c);
}

static void pmdk_body(void *vctx)
{
	struct arr_ctx *c = vctx;
	uint64_t s0 = tx_start(c);
	for (uint64_t s = s0; s < s0 + (uint64_t)c->p.per_tx; s++)
		pmdk_access(c, s, coin(c, s));
}

static int pmdk_run(void *vctx, uint64_t n)
{
	return bench_pmdk_txs(((struct arr_ctx *)vctx)->pop, n, pmdk_body, vctx);
}

static int plain_run(void *vctx, uint64_t n)
{
	struct arr_ctx *c = vctx;
	for (uint64_t t = 0; t < n; t++) {
		uint64_t s0 = tx_start(c);
		for (uint64_t s = s0; s < s0 + (uint64_t)c->p.per_tx; s++)
			plain_access(c, s, coin(c, s));
	}
	return 0;
}

/* ---- validation ---- */

static uint64_t init_value(uint64_t s, long j)
{
	return s * MAX_SLOT + (uint64_t)j;
}

static int arr_check(void *vctx)
{
	struct arr_ctx *c = vctx;
	for (uint64_t s = 0; s < c->nslots; s++) {
		const uint64_t *p = slot_at(c, s);
		for (long j = 0; j < c->p.slot; j++) {
			uint64_t want = init_value(s, j) + c->count[s];
			if (p[j] == want)
				continue;
			fprintf(stderr, "%s: slot %llu integer %ld is %llu, "
			        "expected %llu (%u writes)\n",
			        c->p.raw ? "array-raw" : "array",
			        (unsigned long long)s, j,
			        (unsigned long long)p[j],
			        (unsigned long long)want, c->count[s]);
			return PMTX_E_CORRUPT;
		}
	}
	return 0;
}

static void arr_corrupt(void *vctx)
{
	slot_at(vctx, 0)[0] ^= 1;
}

static void arr_destroy(void *vctx)
{
	struct arr_ctx *c = vctx;
	bench_close(c->r, c->pop, c->path);
	free(c->count);
	free(c);
}

/* ---- setup ---- */

static void fill(struct arr_ctx *c)
{
	for (uint64_t s = 0; s < c->nslots; s++) {
		uint64_t *p = slot_at(c, s);
		for (long j = 0; j < c->p.slot; j++)
			p[j] = init_value(s, j);
	}
}

/* Create the COW objects (zeroed), then fill them with naked stores. */
static int cow_new_slot(void *vctx, pmtx_tx *tx, uint64_t s)
{
	struct arr_ctx *c = vctx;
	pmtx_off w;
	int rc = pmtx_cow_new(tx, slot_bytes(c), &w);
	return rc ? rc : PMTX_SET(tx, c->wrap[s], w);
}

static int cow_setup(struct arr_ctx *c)
{
	int rc = bench_setup_txs(c->r, PMTX_RT_UNDO, c->nslots, SETUP_BATCH,
	                         cow_new_slot, c);
	if (rc)
		return rc;
	fill(c);
	for (uint64_t s = 0; s < c->nslots; s++)
		pmtx_flush(c->r, slot_at(c, s), slot_bytes(c));
	return pmtx_barrier(c->r);
}

static struct arr_ctx *ctx_new(const struct arr_params *p,
                               enum arr_kind kind, pmtx_runtime rt)
{
	struct arr_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	*c = (struct arr_ctx){.p = *p, .kind = kind, .rt = rt,
	                      .inplace = p->inplace && rt == PMTX_RT_TWIN,
	                      .nslots = kind == AR_COW ? p->cow_slots : p->slots,
	                      .rng = rng_seed(p->seed)};
	if (!(c->count = calloc(c->nslots, sizeof(*c->count)))) {
		free(c);
		return NULL;
	}
	return c;
}

static int runner_bind(struct runner *r, struct arr_ctx *c, int rc,
                       int (*run)(void *, uint64_t))
{
	return bench_bind(r, rc, c, run, arr_check, arr_corrupt, arr_destroy);
}

static size_t data_bytes(struct arr_params p)
{
	return p.slots * (size_t)p.slot * sizeof(uint64_t);
}

/* Heap for the cow objects: a payload block (16-byte header, size classes
 * at most 25% apart) and a wrapper block each. SLACK covers the copies of
 * one transaction and partly used superblocks. */
static size_t cow_heap_bytes(struct arr_params p)
{
	size_t payload = ((size_t)p.slot * 8 + 16) * 5 / 4 + 16;
	return p.cow_slots * (payload + 64);
}

/* The slots of a pmtx runner, in its root: their initial values,
 * durable. */
static int pmtx_fill(struct arr_ctx *c)
{
	if (c->kind == AR_COW) {
		c->wrap = pmtx_root(c->r, NULL);
		return cow_setup(c);
	}
	c->data = pmtx_root(c->r, NULL);
	fill(c);
	return pmtx_persist(c->r, c->data, data_bytes(c->p));
}

static int pmtx_runner(struct runner *r, const struct bench_opts *o,
                       pmtx_runtime rt, struct bench_cfg cfg, void *arg)
{
	int cow = rt == PMTX_RT_COW;
	struct arr_ctx *c = ctx_new(arg, cow ? AR_COW : AR_PMTX, rt);
	if (!c)
		return PMTX_E_NOMEM;
	struct arr_params p = c->p;
	size_t root = cow ? p.cow_slots * sizeof(pmtx_off) : data_bytes(p);
	size_t heap = cow ? cow_heap_bytes(p) : 0;
	int rc = bench_region(r, o, rt, cfg, root, root + heap + SLACK, &c->r,
	                      c->path);
	return runner_bind(r, c, rc ? rc : pmtx_fill(c), pmtx_run);
}

static int pmdk_runner(struct runner *r, const struct bench_opts *o,
                       void *arg)
{
	struct arr_ctx *c = ctx_new(arg, AR_PMDK, PMTX_RT_DEFAULT);
	if (!c)
		return PMTX_E_NOMEM;
	size_t root = data_bytes(c->p);
	int rc = bench_pmdk_pool(r, o, root, root + root / 8 + SLACK, &c->pop,
	                         c->path);
	if (!rc) {
		c->root = pmemobj_root(c->pop, root);
		c->data = pmemobj_direct(c->root);
		fill(c);
		pmemobj_persist(c->pop, c->data, root);
	}
	return runner_bind(r, c, rc, pmdk_run);
}

static int plain_runner(struct runner *r, const struct bench_opts *o,
                        void *arg)
{
	struct arr_ctx *c = ctx_new(arg, AR_PLAIN, PMTX_RT_DEFAULT);
	if (!c)
		return PMTX_E_NOMEM;
	size_t root = data_bytes(c->p);
	int rc = bench_plain_region(r, o, root, root + SLACK, &c->r, c->path);
	if (!rc) {
		c->data = pmtx_root(c->r, NULL);
		fill(c);
	}
	return runner_bind(r, c, rc, plain_run);
}

static const struct bench_makers makers =
	BENCH_MAKERS(bench_runtimes, pmtx_runner, pmdk_runner, plain_runner);

/* ---- the sweep ---- */

/* bench_point without the check and destroy, for runners that are
 * measured at several points: fresh accumulators, interleaved
 * measurement, one line per runner. */
static int measure_point(struct runner *rs, int n, const struct bench_opts *o,
                         const char *workload, const char *params)
{
	for (int i = 0; i < n; i++) {
		rs[i].ops = rs[i].ns = rs[i].barriers = rs[i].flushes = 0;
		rs[i].nrounds = 0;
	}
	int rc = bench_measure(rs, n, o);
	for (int i = 0; !rc && i < n; i++) {
		char extra[48];
		snprintf(extra, sizeof(extra), "\"setup_s\":%.3f",
		         rs[i].setup_s);
		bench_emit_ex(&rs[i], workload, params, extra);
	}
	return rc;
}

static void set_write_pct(struct runner *rs, int n, long pct)
{
	for (int i = 0; i < n; i++)
		((struct arr_ctx *)rs[i].ctx)->p.write_pct = pct;
}

/* One slot size: build, measure at every write_pct, check, destroy. */
static int slot_sweep(const struct bench_opts *o, struct arr_params p,
                      const long *pcts, int npct, const char *workload)
{
	struct runner rs[BENCH_MAX_RUNNERS];
	int n = 0;
	int rc = bench_runners(rs, &n, o, &makers, &p);
	for (int k = 0; !rc && k < npct; k++) {
		char params[192];
		snprintf(params, sizeof(params),
		         "\"slots\":%llu,\"slot\":%ld,\"write_pct\":%ld,"
		         "\"per_tx\":%ld,\"seed\":%llu,\"cow_slots\":%llu",
		         (unsigned long long)p.slots, p.slot, pcts[k], p.per_tx,
		         (unsigned long long)p.seed,
		         (unsigned long long)p.cow_slots);
		set_write_pct(rs, n, pcts[k]);
		rc = measure_point(rs, n, o, workload, params);
	}
	return bench_finish(rs, n, rc, o, workload);
}

static int params_ok(const struct arr_params *p, const long *slot, int nslot,
                     const long *pct, int npct, const char *workload)
{
	int ok = p->slots >= 1 && p->per_tx >= 1 &&
	         (uint64_t)p->per_tx <= p->cow_slots && nslot > 0 && npct > 0;
	for (int i = 0; i < nslot; i++)
		ok &= slot[i] >= 1 && slot[i] <= MAX_SLOT;
	for (int i = 0; i < npct; i++)
		ok &= pct[i] >= 0 && pct[i] <= 100;
	if (!ok)
		fprintf(stderr, "%s: need slots >= 1, 1 <= per_tx <= "
		        "min(slots, cow_slots), slot in 1..%d, write_pct in "
		        "0..100\n", workload, MAX_SLOT);
	return ok;
}

static int array_main(const struct bench_opts *o, int raw)
{
	static const char *const systems[] = {"pmtx-undo", "pmtx-redo",
	                                      "pmtx-redo-async", "pmtx-cow",
	                                      "pmtx-auto", "pmtx-twin", "pmdk",
	                                      "plain", NULL};
	const char *wl = raw ? "array-raw" : "array";
	if (bench_check_systems(o, wl, systems))
		return PMTX_E_INVAL;
	long slot[16], pct[32];
	int nslot = bench_param(o, "slot", "4,64", slot, 16);
	int npct = bench_param(o, "write_pct",
	                       "0,10,20,30,40,50,60,70,80,90,100", pct, 32);
	long slots = bench_param1(o, "slots", 1000000);
	long cap = bench_param1(o, "cow_slots", slots);
	struct arr_params p = {.slots = (uint64_t)(slots > 0 ? slots : 0),
	                       .per_tx = bench_param1(o, "per_tx", 20),
	                       .seed = (uint64_t)bench_param1(o, "seed", 1),
	                       .raw = raw,
	                       .inplace = bench_param1(o, "inplace", 1) != 0};
	p.cow_slots = cap > 0 && (uint64_t)cap < p.slots ? (uint64_t)cap
	                                                 : p.slots;
	if (!params_ok(&p, slot, nslot, pct, npct, wl))
		return PMTX_E_INVAL;
	for (int i = 0; i < nslot; i++) {
		p.slot = slot[i];
		int rc = slot_sweep(o, p, pct, npct, wl);
		if (rc)
			return rc;
	}
	return 0;
}

int wl_array(const struct bench_opts *o)
{
	return array_main(o, 0);
}

int wl_array_raw(const struct bench_opts *o)
{
	return array_main(o, 1);
}
