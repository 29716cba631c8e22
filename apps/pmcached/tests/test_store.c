/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_store.c - pmcached's store (store.h) against memcached's semantics,
 * and its restart: every operation and result, expiry and flush_all on a
 * clock the test moves, eviction at the memory limit, hash-table
 * expansion, references across a delete (pending reclamation), a restart
 * with items pending and references left behind, and a foreign or
 * corrupt root refused.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "layout.h"
#include "store.h"

static int64_t g_now = 1000000;

static int64_t fake_now(void *arg)
{
	(void)arg;
	return g_now;
}

static mc_store_opts opts(void)
{
	mc_store_opts o;
	mc_store_opts_init(&o);
	o.now = fake_now;
	o.region_size = 4u << 20;
	o.max_size = 256u << 20;
	o.hashpower = 2;
	o.mem_limit = 32u << 20;
	return o;
}

static struct mc_store *open_store(const char *path, const mc_store_opts *o)
{
	struct mc_store *s = NULL;
	int rc = mc_store_open(path, o, &s);
	if (rc)
		fprintf(stderr, "open: %s %s\n", pmtx_strerror(rc),
		        mc_store_errmsg());
	assert_int_equal(rc, 0);
	return s;
}

static enum mc_result put(struct mc_store *s, enum mc_put_mode m,
                          const char *k, const char *v, uint64_t cas)
{
	struct mc_put p = {.mode = m, .key = k, .nkey = strlen(k),
	                   .flags = 7, .value = v, .nbytes = strlen(v),
	                   .cas = cas};
	enum mc_result res;
	assert_int_equal(mc_store_put(s, 0, &p, &res, NULL), 0);
	return res;
}

/* The value of k as a string ("" if absent), and its cas. */
static const char *get(struct mc_store *s, const char *k, uint64_t *cas)
{
	static char buf[4096];
	struct mc_ref ref;
	assert_int_equal(mc_store_get(s, 0, k, strlen(k), 0, 0, &ref), 0);
	buf[0] = 0;
	if (ref.off) {
		assert_true(ref.nbytes < sizeof(buf));
		memcpy(buf, ref.value, ref.nbytes);
		buf[ref.nbytes] = 0;
		if (cas)
			*cas = ref.cas;
		assert_int_equal(mc_store_release(s, 0, &ref), 0);
	}
	return ref.nbytes || buf[0] ? buf : "";
}

/* The file of each test's store: a fresh path before the test, removed
 * after it, even when it fails. */
static const char *store_path;

static int new_store_path(void **state)
{
	store_path = tu_path();
	return 0;
}

static int remove_store_path(void **state)
{
	unlink(store_path);
	return 0;
}

/* Close s and open its file again with o (a warm restart). */
static struct mc_store *reopen(struct mc_store *s, const mc_store_opts *o)
{
	assert_int_equal(mc_store_close(s), 0);
	return open_store(store_path, o);
}

static void check_structure(struct mc_store *s)
{
	char msg[200] = "";
	int rc = mc_store_check(mc_store_region(s), msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "check: %s\n", msg);
	assert_int_equal(rc, 0);
}

static void storage_commands_follow_memcached(void **state)
{
	mc_store_opts o = opts();
	struct mc_store *s = open_store(store_path, &o);
	assert_int_equal(put(s, MC_ADD, "a", "1", 0), MC_STORED);
	assert_int_equal(put(s, MC_ADD, "a", "2", 0), MC_NOT_STORED);
	assert_int_equal(put(s, MC_REPLACE, "b", "x", 0), MC_NOT_STORED);
	assert_int_equal(put(s, MC_REPLACE, "a", "3", 0), MC_STORED);
	assert_int_equal(put(s, MC_APPEND, "a", "45", 0), MC_STORED);
	assert_int_equal(put(s, MC_PREPEND, "a", "0", 0), MC_STORED);
	assert_string_equal(get(s, "a", NULL), "0345");
	assert_int_equal(put(s, MC_APPEND, "nope", "x", 0), MC_NOT_STORED);
	uint64_t cas = 0;
	get(s, "a", &cas);
	assert_int_equal(put(s, MC_CAS, "a", "new", cas + 1), MC_EXISTS);
	assert_int_equal(put(s, MC_CAS, "a", "new", cas), MC_STORED);
	assert_int_equal(put(s, MC_CAS, "zz", "new", cas), MC_NOT_FOUND);
	assert_string_equal(get(s, "a", NULL), "new");
	enum mc_result res;
	assert_int_equal(mc_store_delete(s, 0, "a", 1, &res), 0);
	assert_int_equal(res, MC_DELETED);
	assert_int_equal(mc_store_delete(s, 0, "a", 1, &res), 0);
	assert_int_equal(res, MC_NOT_FOUND);
	assert_string_equal(get(s, "a", NULL), "");
	assert_int_equal(mc_store_close(s), 0);
}

static void incr_decr_follow_memcached(void **state)
{
	mc_store_opts o = opts();
	struct mc_store *s = open_store(store_path, &o);
	enum mc_result res;
	uint64_t v;
	put(s, MC_SET, "n", "10", 0);
	assert_int_equal(mc_store_arith(s, 0, "n", 1, 0, 1, &v, &res), 0);
	assert_int_equal(res, MC_STORED);
	assert_int_equal(v, 9);
	assert_string_equal(get(s, "n", NULL), "9 "); /* in place, padded */
	assert_int_equal(mc_store_arith(s, 0, "n", 1, 0, 100, &v, &res), 0);
	assert_int_equal(v, 0);                        /* decr stops at 0 */
	put(s, MC_SET, "n", "18446744073709551615", 0);
	assert_int_equal(mc_store_arith(s, 0, "n", 1, 1, 2, &v, &res), 0);
	assert_int_equal(v, 1);                        /* incr wraps */
	put(s, MC_SET, "n", "99", 0);
	assert_int_equal(mc_store_arith(s, 0, "n", 1, 1, 1, &v, &res), 0);
	assert_string_equal(get(s, "n", NULL), "100"); /* longer: new item */
	put(s, MC_SET, "t", "abc", 0);
	assert_int_equal(mc_store_arith(s, 0, "t", 1, 1, 1, &v, &res), 0);
	assert_int_equal(res, MC_NON_NUMERIC);
	assert_int_equal(mc_store_arith(s, 0, "u", 1, 1, 1, &v, &res), 0);
	assert_int_equal(res, MC_NOT_FOUND);
	assert_int_equal(mc_store_close(s), 0);
}

static void expiry_touch_and_flush_all_are_lazy(void **state)
{
	mc_store_opts o = opts();
	struct mc_store *s = open_store(store_path, &o);
	struct mc_put p = {.mode = MC_SET, .key = "e", .nkey = 1,
	                   .value = "v", .nbytes = 1, .exptime = g_now + 10};
	enum mc_result res;
	assert_int_equal(mc_store_put(s, 0, &p, &res, NULL), 0);
	g_now += 5;
	assert_string_equal(get(s, "e", NULL), "v");
	assert_int_equal(mc_store_touch(s, 0, "e", 1, g_now + 100, &res), 0);
	assert_int_equal(res, MC_TOUCHED);
	g_now += 50;
	assert_string_equal(get(s, "e", NULL), "v");
	g_now += 100;
	assert_string_equal(get(s, "e", NULL), "");
	put(s, MC_SET, "f", "1", 0);
	assert_int_equal(mc_store_flush_all(s, g_now - 1, 1), 0);
	assert_string_equal(get(s, "f", NULL), "");
	put(s, MC_SET, "g", "2", 0); /* same second, after the flush */
	assert_string_equal(get(s, "g", NULL), "2");
	assert_int_equal(mc_store_flush_all(s, g_now + 30, 0), 0);
	g_now += 10;
	assert_string_equal(get(s, "g", NULL), "2");
	g_now += 30;
	assert_string_equal(get(s, "g", NULL), "");
	/* -C: the cut-off is now, and a store in this second goes too */
	assert_int_equal(mc_store_flush_all(s, g_now, 0), 0);
	put(s, MC_SET, "h", "3", 0);
	assert_string_equal(get(s, "h", NULL), "");
	g_now++;
	put(s, MC_SET, "h", "3", 0);
	assert_string_equal(get(s, "h", NULL), "3");
	/* a later cut-off replaces a pending one; none drops it */
	assert_int_equal(mc_store_flush_all(s, g_now + 10, 0), 0);
	assert_int_equal(mc_store_flush_all(s, 0, 0), 0);
	g_now += 20;
	assert_string_equal(get(s, "h", NULL), "3");
	assert_int_equal(mc_store_delete(s, 0, "h", 1, &res), 0);
	struct mc_store_stats st;
	mc_store_stats(s, &st);
	assert_int_equal(st.curr_items, 0);
	assert_int_equal(mc_store_close(s), 0);
}

static void the_memory_limit_evicts_the_least_recently_used(void **state)
{
	mc_store_opts o = opts();
	o.mem_limit = 200u << 10;
	struct mc_store *s = open_store(store_path, &o);
	char key[32], val[1000];
	memset(val, 'x', sizeof(val) - 1);
	val[sizeof(val) - 1] = 0;
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_int_equal(put(s, MC_SET, key, val, 0), MC_STORED);
	}
	struct mc_store_stats st;
	mc_store_stats(s, &st);
	assert_true(st.bytes <= o.mem_limit);
	assert_true(st.evictions > 700);
	assert_string_equal(get(s, "k999", NULL), val);
	assert_string_equal(get(s, "k0", NULL), "");
	char big[300 << 10];
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	assert_int_equal(put(s, MC_SET, "k999", big, 0), MC_TOO_LARGE);
	assert_string_equal(get(s, "k999", NULL), ""); /* as memcached */
	check_structure(s);
	assert_int_equal(mc_store_close(s), 0);
	o.no_evict = 1;
	s = open_store(store_path, &o);
	int refused = 0;
	for (int i = 1000; i < 1400; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		refused += put(s, MC_SET, key, val, 0) == MC_NO_MEMORY;
	}
	assert_true(refused > 100);
	assert_int_equal(mc_store_close(s), 0);
}

/* A big item among small ones at the limit: U4's few victims in the
 * store's own transaction are not enough, so the store evicts as many as
 * it needs in transactions of its own (lru.c U5), as memcached stores any
 * item up to -I whatever fills the cache. */
static void a_big_item_evicts_as_many_small_items_as_it_needs(void **state)
{
	mc_store_opts o = opts();
	o.mem_limit = 1u << 20;
	struct mc_store *s = open_store(store_path, &o);
	char key[32], val[1000], *big = malloc(500u << 10);
	assert_non_null(big);
	memset(val, 'x', sizeof(val) - 1);
	val[sizeof(val) - 1] = 0;
	memset(big, 'b', (500u << 10) - 1);
	big[(500u << 10) - 1] = 0;
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 2000; i++) {
			snprintf(key, sizeof(key), "k%d", i);
			assert_int_equal(put(s, MC_SET, key, val, 0), MC_STORED);
		}
		snprintf(key, sizeof(key), "big%d", round);
		assert_int_equal(put(s, MC_SET, key, big, 0), MC_STORED);
		struct mc_ref ref;
		assert_int_equal(mc_store_get(s, 0, key, strlen(key), 0, 0,
		                              &ref), 0);
		assert_int_equal(ref.nbytes, (500u << 10) - 1);
		assert_memory_equal(ref.value, big, ref.nbytes);
		assert_int_equal(mc_store_release(s, 0, &ref), 0);
		struct mc_store_stats st;
		mc_store_stats(s, &st);
		/* the limit kept, and only as much evicted as it needed */
		assert_true(st.bytes > o.mem_limit - (8u << 10));
		assert_true(st.bytes <= o.mem_limit);
	}
	check_structure(s);
	assert_int_equal(mc_store_close(s), 0);
	o.no_evict = 1; /* -M: refused, and the small items stay */
	s = open_store(store_path, &o);
	for (int i = 0; i < 2000; i++) {
		snprintf(key, sizeof(key), "m%d", i);
		if (put(s, MC_SET, key, val, 0) != MC_STORED)
			break;
	}
	assert_int_equal(put(s, MC_SET, "big", big, 0), MC_NO_MEMORY);
	free(big);
	assert_int_equal(mc_store_close(s), 0);
}

static int walk_count(const struct mc_item_meta *m, void *arg)
{
	uint64_t *n = arg;
	n[0]++;
	n[1] += m->live;
	return 0;
}

static uint64_t walk_all(struct mc_store *s, uint64_t *live)
{
	uint64_t n[2] = {0, 0};
	for (unsigned l = 0; l < MC_NLRU; l++)
		assert_int_equal(mc_store_walk_lru(s, l, walk_count, n), 0);
	*live = n[1];
	return n[0];
}

static int first_item(const struct mc_item_meta *m, void *arg)
{
	*(struct mc_item_meta *)arg = *m;
	return 1;
}

static uint64_t events[2];

static void count_event(void *arg, enum mc_item_event ev,
                        const struct mc_item_meta *m)
{
	(void)arg, (void)m;
	events[ev]++;
}

/* The walks behind stats items, metadump and crawl: every linked item
 * once, dead ones marked; a walked item looked up again only while it is
 * the same version; a crawl's reap removes dead items only; an eviction
 * is told once it has committed. */
static void walks_lookups_reaps_and_events(void **state)
{
	mc_store_opts o = opts();
	o.mem_limit = 200u << 10;
	o.on_item_event = count_event;
	struct mc_store *s = open_store(store_path, &o);
	char key[32];
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "w%d", i);
		struct mc_put p = {.mode = MC_SET, .key = key,
		                   .nkey = strlen(key), .value = "v",
		                   .nbytes = 1,
		                   .exptime = i < 10 ? g_now + 5 : 0};
		enum mc_result res;
		assert_int_equal(mc_store_put(s, 0, &p, &res, NULL), 0);
	}
	uint64_t live;
	assert_int_equal(walk_all(s, &live), 100);
	assert_int_equal(live, 100);
	g_now += 10; /* the first ten expire */
	assert_int_equal(walk_all(s, &live), 100);
	assert_int_equal(live, 90);
	struct mc_item_meta m = {0}, again;
	char buf[MC_KEY_MAX];
	unsigned l = 0;
	while (!mc_store_walk_lru(s, l, first_item, &m))
		l++;
	assert_int_equal(mc_store_item_meta(s, m.off, m.cas, &again, buf), 1);
	assert_memory_equal(again.key, buf, again.nkey);
	memcpy(key, buf, again.nkey);
	key[again.nkey] = 0;
	put(s, MC_SET, key, "new", 0); /* a new version: the walk's is gone */
	assert_int_equal(mc_store_item_meta(s, m.off, m.cas, &again, buf), 0);
	int reaped = 0, total = 0;
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "w%d", i);
		assert_int_equal(mc_store_reap(s, 0, key, strlen(key), &reaped),
		                 0);
		total += reaped;
	}
	assert_true(total == 10 || total == 9); /* one may have been re-set */
	assert_int_equal(walk_all(s, &live), 100 - (uint64_t)total);
	/* evictions are told, and only those that committed */
	char val[1000];
	memset(val, 'x', sizeof(val) - 1);
	val[sizeof(val) - 1] = 0;
	for (int i = 0; i < 400; i++) {
		snprintf(key, sizeof(key), "e%d", i);
		assert_int_equal(put(s, MC_SET, key, val, 0), MC_STORED);
	}
	struct mc_store_stats st;
	mc_store_stats(s, &st);
	assert_true(st.evictions > 100);
	assert_int_equal(events[MC_EV_EVICTED], st.evictions);
	check_structure(s);
	assert_int_equal(mc_store_close(s), 0);
}

static void the_table_expands_and_keeps_every_item(void **state)
{
	mc_store_opts o = opts();
	struct mc_store *s = open_store(store_path, &o);
	char key[32], val[32];
	for (int i = 0; i < 3000; i++) {
		snprintf(key, sizeof(key), "key:%d", i);
		snprintf(val, sizeof(val), "v%d", i);
		assert_int_equal(put(s, MC_SET, key, val, 0), MC_STORED);
		if (i % 500 == 0)
			check_structure(s);
	}
	struct mc_store_stats st;
	mc_store_stats(s, &st);
	assert_true(st.hashpower >= 11);
	assert_int_equal(st.curr_items, 3000);
	check_structure(s);
	s = reopen(s, &o); /* warm: everything is there */
	for (int i = 0; i < 3000; i++) {
		snprintf(key, sizeof(key), "key:%d", i);
		snprintf(val, sizeof(val), "v%d", i);
		assert_string_equal(get(s, key, NULL), val);
	}
	check_structure(s);
	assert_int_equal(mc_store_close(s), 0);
}

/* The heap's blocks, every one of them the cache's (none leaks). */
static uint64_t owned_blocks(struct mc_store *s)
{
	uint64_t owned, heap;
	assert_int_equal(mc_store_count_blocks(mc_store_region(s), &owned,
	                                       &heap), 0);
	assert_int_equal(owned, heap);
	return heap;
}

/* A referenced item survives its delete until released (lesson 7); a
 * reference left behind by a run that died is dropped by the restart,
 * which frees the pending item (lesson 8). */
static void references_keep_deleted_items_until_released(void **state)
{
	mc_store_opts o = opts();
	struct mc_store *s = open_store(store_path, &o);
	put(s, MC_SET, "r", "held value", 0);
	struct mc_ref ref;
	assert_int_equal(mc_store_get(s, 3, "r", 1, 0, 0, &ref), 0);
	assert_true(ref.off != 0);
	enum mc_result res;
	assert_int_equal(mc_store_delete(s, 3, "r", 1, &res), 0);
	assert_int_equal(res, MC_DELETED);
	assert_memory_equal(ref.value, "held value", 10);
	owned_blocks(s);
	check_structure(s);
	assert_int_equal(mc_store_release(s, 3, &ref), 0);
	assert_int_equal(owned_blocks(s), 1); /* the table */

	/* Held across a "crash": the reference dies with the run. */
	put(s, MC_SET, "r", "again", 0);
	assert_int_equal(mc_store_get(s, 5, "r", 1, 0, 0, &ref), 0);
	put(s, MC_SET, "r", "replaced", 0);
	s = reopen(s, &o);
	struct mc_store_stats st;
	mc_store_stats(s, &st);
	assert_int_equal(st.reclaimed_at_start, 1);
	assert_string_equal(get(s, "r", NULL), "replaced");
	assert_int_equal(owned_blocks(s), 2);
	check_structure(s);
	assert_int_equal(mc_store_close(s), 0);
}

/* ---- several workers at once ---- */

#define MT_THREADS 4
#define MT_OPS 6000
#define MT_KEYS 300
#define MT_COUNTERS 8

struct mt_arg {
	struct mc_store *s;
	unsigned slot;
	unsigned seed;
	int torn;            /* values found not uniform */
	uint64_t incrs[MT_COUNTERS];
};

/* A value is n copies of one letter: a torn or mixed value shows. */
static void mt_set(struct mt_arg *a, const char *key)
{
	char v[1500];
	size_t n = 1 + rand_r(&a->seed) % sizeof(v);
	memset(v, 'a' + rand_r(&a->seed) % 26, n);
	struct mc_put p = {.mode = MC_SET, .key = key, .nkey = strlen(key),
	                   .value = v, .nbytes = n};
	enum mc_result res;
	assert_int_equal(mc_store_put(a->s, a->slot, &p, &res, NULL), 0);
}

static int uniform(const struct mc_ref *r)
{
	for (size_t i = 1; i < r->nbytes; i++)
		if (r->value[i] != r->value[0])
			return 0;
	return 1;
}

/* Gets hold their references across a few more operations, so that
 * deletes and overwrites meet referenced items (pending reclamation). */
static void mt_get(struct mt_arg *a, const char *key, struct mc_ref *held,
                   unsigned *nheld)
{
	struct mc_ref ref;
	assert_int_equal(mc_store_get(a->s, a->slot, key, strlen(key), 0, 0,
	                              &ref), 0);
	if (!ref.off)
		return;
	a->torn += !uniform(&ref);
	held[(*nheld)++] = ref;
	if (*nheld < 4)
		return;
	for (unsigned i = 0; i < *nheld; i++) {
		a->torn += !uniform(&held[i]); /* still intact when released */
		assert_int_equal(mc_store_release(a->s, a->slot, &held[i]), 0);
	}
	*nheld = 0;
}

static void *mt_worker(void *p)
{
	struct mt_arg *a = p;
	struct mc_ref held[4];
	unsigned nheld = 0;
	enum mc_result res;
	uint64_t v;
	char key[32];
	for (int i = 0; i < MT_OPS; i++) {
		unsigned op = rand_r(&a->seed) % 10;
		if (op == 9) {
			unsigned c = rand_r(&a->seed) % MT_COUNTERS;
			snprintf(key, sizeof(key), "counter%u", c);
			assert_int_equal(mc_store_arith(a->s, a->slot, key,
			                 strlen(key), 1, 1, &v, &res), 0);
			a->incrs[c] += res == MC_STORED;
			continue;
		}
		snprintf(key, sizeof(key), "key%u", rand_r(&a->seed) % MT_KEYS);
		if (op < 4)
			mt_set(a, key);
		else if (op < 8)
			mt_get(a, key, held, &nheld);
		else
			assert_int_equal(mc_store_delete(a->s, a->slot, key,
			                 strlen(key), &res), 0);
	}
	for (unsigned i = 0; i < nheld; i++)
		assert_int_equal(mc_store_release(a->s, a->slot, &held[i]), 0);
	return NULL;
}

/* Run MT_THREADS workers on one store; return the counters' increments. */
static void mt_run(struct mc_store *s, uint64_t incrs[MT_COUNTERS])
{
	pthread_t t[MT_THREADS];
	struct mt_arg a[MT_THREADS];
	for (unsigned i = 0; i < MT_THREADS; i++) {
		a[i] = (struct mt_arg){.s = s, .slot = i, .seed = 77 + i};
		assert_int_equal(pthread_create(&t[i], NULL, mt_worker, &a[i]),
		                 0);
	}
	memset(incrs, 0, MT_COUNTERS * sizeof(*incrs));
	for (unsigned i = 0; i < MT_THREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(a[i].torn, 0);
		for (unsigned c = 0; c < MT_COUNTERS; c++)
			incrs[c] += a[i].incrs[c];
	}
}

/* Every runtime: four workers set, get (holding references), delete and
 * incr shared keys while the table expands and, in the second round, the
 * memory limit evicts. No value is torn; with no eviction every counter
 * holds exactly the increments made; the structure check passes, and
 * every heap block belongs to the cache (no leak), before and after a
 * reopen. */
static void concurrent_workers_keep_the_cache_consistent(void **state)
{
	static const pmtx_runtime rts[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
	                                   PMTX_RT_REDO_ASYNC};
	for (unsigned r = 0; r < 3; r++) {
		for (int evict = 0; evict < 2; evict++) {
			const char *path = tu_path();
			mc_store_opts o = opts();
			o.runtime = rts[r];
			o.mem_limit = evict ? 96u << 10 : 32u << 20;
			struct mc_store *s = open_store(path, &o);
			char key[32];
			for (unsigned c = 0; c < MT_COUNTERS; c++) {
				snprintf(key, sizeof(key), "counter%u", c);
				put(s, MC_SET, key, "0", 0);
			}
			uint64_t incrs[MT_COUNTERS];
			mt_run(s, incrs);
			struct mc_store_stats st;
			mc_store_stats(s, &st);
			assert_true(evict ? st.evictions > 0 : st.evictions == 0);
			for (unsigned c = 0; !evict && c < MT_COUNTERS; c++) {
				snprintf(key, sizeof(key), "counter%u", c);
				assert_int_equal(strtoull(get(s, key, NULL), NULL,
				                          10), incrs[c]);
			}
			check_structure(s);
			owned_blocks(s);
			assert_int_equal(mc_store_close(s), 0);
			s = open_store(path, &o);
			check_structure(s);
			assert_int_equal(mc_store_close(s), 0);
			unlink(path);
		}
	}
}

static void a_foreign_or_corrupt_region_is_refused(void **state)
{
	pmtx_region *r = tu_create(&store_path, 4u << 20, 64, PMTX_PDOM1,
	                           PMTX_BACKEND_HARDWARE, PMTX_RT_UNDO);
	assert_int_equal(pmtx_close(r), 0);
	mc_store_opts o = opts();
	struct mc_store *s;
	assert_int_equal(mc_store_open(store_path, &o, &s), PMTX_E_BAD_LAYOUT);
	assert_non_null(strstr(mc_store_errmsg(), "layout"));
	unlink(store_path);

	store_path = tu_path();
	s = open_store(store_path, &o);
	struct mc_root *root = pmtx_root(mc_store_region(s), NULL);
	root->hashpower = 60; /* naked, as a corrupting bug would */
	pmtx_persist(mc_store_region(s), root, sizeof(*root));
	assert_int_equal(mc_store_close(s), 0);
	uint64_t h = tu_file_hash(store_path);
	assert_int_equal(mc_store_open(store_path, &o, &s), PMTX_E_CORRUPT);
	assert_non_null(strstr(mc_store_errmsg(), "hash table"));
	assert_int_equal(tu_file_hash(store_path), h);
}

/* A meta get of k (mc_store_mget, tokens on); the reference released. */
static struct mc_ref mget(struct mc_store *s, const char *k,
                          const struct mc_mget *tmpl)
{
	struct mc_mget g = tmpl ? *tmpl : (struct mc_mget){.tokens = 1};
	struct mc_ref ref;
	g.key = k, g.nkey = strlen(k);
	assert_int_equal(mc_store_mget(s, 0, &g, &ref), 0);
	struct mc_ref out = ref;
	assert_int_equal(mc_store_release(s, 0, &ref), 0);
	return out;
}

static enum mc_result mdel_stale(struct mc_store *s, const char *k,
                                 uint64_t cas)
{
	struct mc_mdel d = {.key = k, .nkey = strlen(k), .cas = cas,
	                    .stale = 1};
	enum mc_result res;
	assert_int_equal(mc_store_mdelete(s, 0, &d, &res), 0);
	return res;
}

/* items.c I8: stale items and their tokens (md I, ms I, a first reader's
 * W), mg N and R, h and l as the state before the read, all kept across
 * a restart; a last access that cannot be true reads as the store's. */
static void meta_state_follows_memcached_and_survives_restart(void **state)
{
	mc_store_opts o = opts();
	struct mc_store *s = open_store(store_path, &o);
	assert_int_equal(put(s, MC_SET, "a", "old", 0), MC_STORED);
	struct mc_ref r = mget(s, "a", NULL);
	assert_true(r.off && !r.fetched && !r.won && r.iflags == 0);
	uint64_t cas = r.cas;
	g_now += 5;
	r = mget(s, "a", NULL);
	assert_true(r.fetched && r.atime == g_now - 5);
	assert_int_equal(mdel_stale(s, "a", cas + 1), MC_EXISTS);
	assert_int_equal(mdel_stale(s, "a", cas), MC_DELETED);
	assert_int_equal(mdel_stale(s, "nope", 0), MC_NOT_FOUND);
	r = mget(s, "a", NULL);      /* X W */
	assert_true(r.iflags == MC_IF_STALE && r.won && r.cas > cas);
	cas = r.cas;
	r = mget(s, "a", NULL);      /* Z X */
	assert_true(r.iflags == (MC_IF_STALE | MC_IF_TOKEN_SENT) && !r.won);
	/* ms I with an older unique: stored, still stale, token kept */
	struct mc_put p = {.mode = MC_CAS, .key = "a", .nkey = 1, .cas = 1,
	                   .value = "new", .nbytes = 3, .stale_ok = 1};
	enum mc_result res;
	assert_int_equal(mc_store_put(s, 0, &p, &res, NULL), 0);
	assert_int_equal(res, MC_STORED);
	assert_string_equal(get(s, "a", NULL), "new");
	r = mget(s, "a", NULL);
	assert_true(r.iflags == (MC_IF_STALE | MC_IF_TOKEN_SENT) && !r.won);
	p.stale_ok = 0;            /* without I: EXISTS */
	assert_int_equal(mc_store_put(s, 0, &p, &res, NULL), 0);
	assert_int_equal(res, MC_EXISTS);
	/* N: a miss vivified, won once */
	struct mc_mget viv = {.tokens = 1, .vivify = 1,
	                      .viv_exptime = g_now + 30};
	r = mget(s, "v", &viv);
	assert_true(r.off && r.created && r.won && r.nbytes == 0);
	r = mget(s, "v", &viv);
	assert_true(!r.created && !r.won && r.iflags == MC_IF_TOKEN_SENT &&
	            r.exptime == g_now + 30);
	/* R: won once by an item expiring before the recache time */
	struct mc_mget rc = {.tokens = 1, .recache = 1,
	                     .recache_time = g_now + 100};
	assert_int_equal(put(s, MC_SET, "r", "x", 0), MC_STORED);
	assert_false(mget(s, "r", &rc).won);           /* never expires */
	struct mc_mget touch = {.touch = 1, .exptime = g_now + 50};
	mget(s, "r", &touch);
	assert_true(mget(s, "r", &rc).won);
	assert_false(mget(s, "r", &rc).won);
	/* u: nothing recorded */
	struct mc_mget u = {.no_update = 1};
	assert_int_equal(put(s, MC_SET, "u", "x", 0), MC_STORED);
	mget(s, "u", &u);
	assert_false(mget(s, "u", &u).fetched);
	/* a restart keeps it all */
	check_structure(s);
	s = reopen(s, &o);
	r = mget(s, "a", NULL);
	assert_true(r.iflags == (MC_IF_STALE | MC_IF_TOKEN_SENT) && !r.won);
	assert_true(mget(s, "v", NULL).iflags == MC_IF_TOKEN_SENT);
	assert_true(mget(s, "r", &rc).iflags == MC_IF_TOKEN_SENT);
	assert_true(r.fetched);
	/* a last access from the future (a torn or stray value) is not
	 * believed: the item counts as accessed when it was stored */
	assert_int_equal(put(s, MC_SET, "t", "x", 0), MC_STORED);
	r = mget(s, "t", &u);
	struct mc_item *it = pmtx_ptr(mc_store_region(s), r.off);
	it->atime = g_now + 1000, it->fetched = 7;
	r = mget(s, "t", &u);
	assert_true(r.atime == it->time && !r.fetched);
	check_structure(s);
	assert_int_equal(mc_store_close(s), 0);
}

/* layout.h L4: a region of another format major is refused with what to
 * do, and left as it was. */
static void another_format_is_refused_and_left_alone(void **state)
{
	mc_store_opts o = opts();
	struct mc_store *s = open_store(store_path, &o);
	struct mc_root *root = pmtx_root(mc_store_region(s), NULL);
	root->major = 1; /* naked: a region of format 1.x */
	pmtx_persist(mc_store_region(s), root, sizeof(*root));
	assert_int_equal(mc_store_close(s), 0);
	uint64_t h = tu_file_hash(store_path);
	assert_int_equal(mc_store_open(store_path, &o, &s), PMTX_E_BAD_VERSION);
	assert_non_null(strstr(mc_store_errmsg(), "pmcached format 1.0, "
	                       "this pmcached reads format 2.x only"));
	assert_int_equal(tu_file_hash(store_path), h);
	char msg[512];
	assert_int_equal(mc_store_verify(store_path, msg, sizeof(msg)),
	                 PMTX_E_BAD_VERSION);
	assert_non_null(strstr(msg, "format 1.0"));
}

/* A key of 3 bytes from i (at most 125,000 of them). */
static const char *key3(unsigned i, char k[4])
{
	k[0] = (char)('A' + i % 50);
	k[1] = (char)('A' + i / 50 % 50);
	k[2] = (char)('A' + i / 2500 % 50);
	k[3] = 0;
	return k;
}

/* A heap full below the memory limit (a region that cannot grow: here
 * its maximum, as a full file system): stores evict to make room (lru.c
 * U5); under -M they are refused, and an incr that needs a new item keeps
 * the old one. */
static void a_full_heap_evicts_or_refuses_and_loses_no_key(void **state)
{
	mc_store_opts o = opts();
	o.region_size = o.max_size = 4u << 20;
	o.hashpower = 16; /* no expansion to finish, and free room, at open */
	o.no_evict = 1;
	struct mc_store *s = open_store(store_path, &o);
	assert_int_equal(put(s, MC_SET, "n", "9", 0), MC_STORED);
	char k[4];
	unsigned i = 0;
	/* items of the size "n" = "10" will need, until that class is full */
	while (put(s, MC_SET, key3(i, k), "", 0) == MC_STORED)
		assert_true(++i < 125000);
	assert_true(i > 1000);
	enum mc_result res;
	uint64_t v;
	assert_int_equal(mc_store_arith(s, 0, "n", 1, 1, 1, &v, &res), 0);
	assert_int_equal(res, MC_NO_MEMORY);
	assert_string_equal(get(s, "n", NULL), "9");
	check_structure(s);
	assert_int_equal(mc_store_close(s), 0);

	o.no_evict = 0;
	s = open_store(store_path, &o);
	/* n is its list's oldest item: the incr's evictions must spare it */
	struct mc_store_stats st;
	assert_int_equal(mc_store_arith(s, 0, "n", 1, 1, 1, &v, &res), 0);
	assert_int_equal(res, MC_STORED);
	assert_string_equal(get(s, "n", NULL), "10");
	mc_store_stats(s, &st);
	assert_true(st.evictions > 0);
	/* over an eighth of the region: refused, and nothing evicted for it */
	uint64_t before = st.evictions;
	char *huge = malloc(1u << 20);
	assert_non_null(huge);
	memset(huge, 'h', (1u << 20) - 1);
	huge[(1u << 20) - 1] = 0;
	assert_int_equal(put(s, MC_SET, "huge", huge, 0), MC_NO_MEMORY);
	free(huge);
	mc_store_stats(s, &st);
	assert_int_equal(st.evictions, before);
	for (unsigned j = i; j < i + 2000; j++)
		assert_int_equal(put(s, MC_SET, key3(j, k), "", 0), MC_STORED);
	char big[100 << 10];
	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	for (int j = 0; j < 100; j++) { /* 10 MB through a 4 MiB region */
		char bk[16];
		snprintf(bk, sizeof(bk), "big%d", j);
		assert_int_equal(put(s, MC_SET, bk, big, 0), MC_STORED);
		struct mc_ref ref;
		assert_int_equal(mc_store_get(s, 0, bk, strlen(bk), 0, 0, &ref),
		                 0);
		assert_int_equal(ref.nbytes, sizeof(big) - 1);
		assert_memory_equal(ref.value, big, sizeof(big) - 1);
		assert_int_equal(mc_store_release(s, 0, &ref), 0);
	}
	mc_store_stats(s, &st);
	assert_true(st.evictions > 2000);
	check_structure(s);
	assert_int_equal(mc_store_close(s), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, new_store_path, \
                                              remove_store_path)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(storage_commands_follow_memcached),
		T(incr_decr_follow_memcached),
		T(expiry_touch_and_flush_all_are_lazy),
		T(the_memory_limit_evicts_the_least_recently_used),
		T(a_big_item_evicts_as_many_small_items_as_it_needs),
		T(walks_lookups_reaps_and_events),
		T(the_table_expands_and_keeps_every_item),
		T(references_keep_deleted_items_until_released),
		T(a_foreign_or_corrupt_region_is_refused),
		T(meta_state_follows_memcached_and_survives_restart),
		T(another_format_is_refused_and_left_alone),
		T(a_full_heap_evicts_or_refuses_and_loses_no_key),
		T(concurrent_workers_keep_the_cache_consistent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
