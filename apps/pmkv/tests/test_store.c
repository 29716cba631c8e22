/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_store.c - pmkv's store without a server: every operation against
 * a DRAM model, for the opt version under undo, redo and redo-async and
 * for the wrapped version under undo, redo and copy-on-write; table growth
 * over many keys; FLUSHALL; expiry; limits; a region of another kind or
 * of the other version refused; and every key back after a reopen.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "containers/hmap_layout.h"
#include "layout.h"
#include "store.h"
#include "store_copy.h"
#include "store_int.h"

static pmtx_runtime g_rt = PMTX_RT_REDO;
static unsigned g_flavour = PMKV_OPT;

struct buf {
	char p[256];
	size_t n;
	int calls;
};

static void keep(void *arg, const void *p, size_t n)
{
	struct buf *b = arg;
	assert_true(n <= sizeof(b->p));
	memcpy(b->p, p, n);
	b->n = n;
	b->calls++;
}

/* Open the store at path with this test's limits; pmkv_open's status. */
static int try_open_max(const char *path, pmtx_runtime rt, unsigned flavour,
                        size_t max_size, struct pmkv_store **s, char *msg,
                        size_t len)
{
	struct pmkv_config c;
	pmkv_config_init(&c);
	c.path = path;
	c.size = 16u << 20;
	c.max_size = max_size;
	c.runtime = rt;
	c.flavour = flavour;
	c.max_value = 4096;
	c.max_key = 512;
	*msg = 0;
	return pmkv_open(&c, s, msg, len);
}

#define MAX_SIZE (256u << 20) /* the size a region may grow to */

static int try_open(const char *path, pmtx_runtime rt, unsigned flavour,
                    struct pmkv_store **s, char *msg, size_t len)
{
	return try_open_max(path, rt, flavour, MAX_SIZE, s, msg, len);
}

/* The store at path under this test's runtime and version. */
static struct pmkv_store *open_max(const char *path, size_t max_size)
{
	struct pmkv_store *s = NULL;
	char msg[256];
	int rc = try_open_max(path, g_rt, g_flavour, max_size, &s, msg,
	                      sizeof(msg));
	if (rc)
		fprintf(stderr, "pmkv_open: %s\n", msg);
	assert_int_equal(rc, 0);
	return s;
}

static struct pmkv_store *open_at(const char *path)
{
	return open_max(path, MAX_SIZE);
}

static void check(struct pmkv_store *s)
{
	char msg[256] = "";
	int rc = pmkv_check(s, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "check: %s\n", msg);
	assert_int_equal(rc, 0);
}

/* The store of a test that runs under every runtime and version (ALL):
 * opened on a fresh region file by the setup that names them, and
 * checked, closed and removed by store_done, unless the test closed it
 * (s NULL). */
static struct {
	const char *path;
	struct pmkv_store *s;
} t;

/* The test's store closed as it is, without a check. */
static void close_store(void)
{
	assert_int_equal(pmkv_close(t.s), 0);
	t.s = NULL;
}

/* The test's store checked, closed and opened again. */
static struct pmkv_store *reopen(void)
{
	check(t.s);
	close_store();
	return t.s = open_at(t.path);
}

/* The test's store closed as it is and its file removed; a fresh one in
 * its place, whose region grows to max_size. */
static struct pmkv_store *replace_store(size_t max_size)
{
	close_store();
	unlink(t.path);
	return t.s = open_max(t.path, max_size);
}

static int get(struct pmkv_store *s, const char *k, struct buf *b)
{
	int found = -1;
	b->n = 0;
	assert_int_equal(pmkv_get(s, k, strlen(k), keep, b, &found), 0);
	return found;
}

static int set(struct pmkv_store *s, const char *k, const char *v,
               unsigned flags, int64_t exp)
{
	int done = -1, found;
	assert_int_equal(pmkv_set(s, k, strlen(k), v, strlen(v), flags, exp,
	                          &done, keep, NULL, &found), 0);
	return done;
}

static void expect(struct pmkv_store *s, const char *k, const char *v)
{
	struct buf b;
	if (!v) {
		assert_int_equal(get(s, k, &b), 0);
		return;
	}
	assert_int_equal(get(s, k, &b), 1);
	assert_int_equal(b.n, strlen(v));
	assert_memory_equal(b.p, v, b.n);
}

static void set_get_del_and_conditions(void **state)
{
	struct pmkv_store *s = t.s;
	uint64_t n;
	expect(s, "a", NULL);
	assert_int_equal(set(s, "a", "1", 0, 0), 1);
	expect(s, "a", "1");
	assert_int_equal(set(s, "a", "2", PMKV_SET_NX, 0), 0);
	expect(s, "a", "1");
	assert_int_equal(set(s, "b", "2", PMKV_SET_XX, 0), 0);
	expect(s, "b", NULL);
	assert_int_equal(set(s, "a", "a longer value than before", PMKV_SET_XX,
	                     0), 1);
	expect(s, "a", "a longer value than before");
	assert_int_equal(pmkv_dbsize(s), 1);
	struct pmkv_key ks[] = {{"a", 1}, {"b", 1}, {"a", 1}};
	assert_int_equal(pmkv_exists(s, ks, 3, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(pmkv_del(s, ks, 3, &n), 0);
	assert_int_equal(n, 1);
	expect(s, "a", NULL);
	assert_int_equal(pmkv_dbsize(s), 0);
}

static void binary_keys_and_values(void **state)
{
	struct pmkv_store *s = t.s;
	const char k[] = {'\0', '\r', '\n', 'x', '\0'};
	const char v[] = {'\n', '\0', '\0', '\xff'};
	int done, found;
	struct buf b = {0};
	assert_int_equal(pmkv_set(s, k, sizeof(k), v, sizeof(v), 0, 0, &done,
	                          keep, NULL, &found), 0);
	assert_int_equal(pmkv_get(s, k, sizeof(k), keep, &b, &found), 0);
	assert_int_equal(found, 1);
	assert_int_equal(b.n, sizeof(v));
	assert_memory_equal(b.p, v, sizeof(v));
	assert_int_equal(pmkv_get(s, k, sizeof(k) - 1, keep, &b, &found), 0);
	assert_int_equal(found, 0); /* a prefix is another key */
}

static void incr_append_strlen(void **state)
{
	struct pmkv_store *s = t.s;
	int64_t v;
	uint64_t len;
	assert_int_equal(pmkv_incrby(s, "n", 1, 5, &v), 0);
	assert_int_equal(v, 5);
	assert_int_equal(pmkv_incrby(s, "n", 1, -7, &v), 0);
	assert_int_equal(v, -2);
	expect(s, "n", "-2");
	set(s, "n", "9223372036854775807", 0, 0);
	assert_int_equal(pmkv_incrby(s, "n", 1, 1, &v), PMKV_E_OVERFLOW);
	expect(s, "n", "9223372036854775807");
	const char *bad[] = {"", "x", "01", "+1", " 1", "1 ", "-0",
	                     "9223372036854775808", "1.5"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		set(s, "m", bad[i], 0, 0);
		assert_int_equal(pmkv_incrby(s, "m", 1, 1, &v), PMKV_E_NOTINT);
		expect(s, "m", bad[i]);
	}
	set(s, "m", "-9223372036854775808", 0, 0);
	assert_int_equal(pmkv_incrby(s, "m", 1, -1, &v), PMKV_E_OVERFLOW);
	assert_int_equal(pmkv_incrby(s, "m", 1, 0, &v), 0);
	assert_int_equal(v, INT64_MIN);
	assert_int_equal(pmkv_append(s, "s", 1, "ab", 2, &len), 0);
	assert_int_equal(len, 2);
	assert_int_equal(pmkv_append(s, "s", 1, "cd", 2, &len), 0);
	assert_int_equal(len, 4);
	expect(s, "s", "abcd");
	char big[300];
	memset(big, 'z', sizeof(big));
	assert_int_equal(pmkv_append(s, "s", 1, big, sizeof(big), &len), 0);
	assert_int_equal(len, 304);
	assert_int_equal(pmkv_strlen(s, "s", 1, &len), 0);
	assert_int_equal(len, 304);
	assert_int_equal(pmkv_strlen(s, "none", 4, &len), 0);
	assert_int_equal(len, 0);
}

static void limits_store_nothing(void **state)
{
	struct pmkv_store *s = t.s;
	char big[5000];
	int done = 7, found;
	uint64_t len;
	memset(big, 'v', sizeof(big));
	assert_int_equal(pmkv_set(s, "k", 1, big, 4097, 0, 0, &done, keep,
	                          NULL, &found), PMKV_E_TOOBIG);
	assert_int_equal(done, 0);
	expect(s, "k", NULL);
	assert_int_equal(pmkv_set(s, big, 513, "v", 1, 0, 0, &done, keep,
	                          NULL, &found), PMKV_E_TOOBIG);
	set(s, "k", "v", 0, 0);
	assert_int_equal(pmkv_append(s, "k", 1, big, 4096, &len),
	                 PMKV_E_TOOBIG);
	expect(s, "k", "v");
	assert_int_equal(pmkv_dbsize(s), 1);
}

/* SET of key number i to 3,000 bytes of c. */
static int set_big(struct pmkv_store *s, int i, char c)
{
	char k[32], v[3000];
	int done, found;
	snprintf(k, sizeof(k), "full:%d", i);
	memset(v, c, sizeof(v));
	return pmkv_set(s, k, strlen(k), v, sizeof(v), 0, 0, &done, keep, NULL,
	                &found);
}

static uint64_t len_of(struct pmkv_store *s, int i)
{
	char k[32];
	uint64_t n;
	snprintf(k, sizeof(k), "full:%d", i);
	assert_int_equal(pmkv_strlen(s, k, strlen(k), &n), 0);
	return n;
}

/* A region that cannot grow: the write that does not fit gets
 * PMKV_E_OOM (Redis's OOM error) and stores nothing, every key before it
 * stays, and deleting keys makes room again (under cow too, where a
 * delete copies a segment). */
static void a_full_region_refuses_and_keeps(void **state)
{
	struct pmkv_store *s = replace_store(16u << 20); /* cannot grow */
	struct pmkv_key ks[16];
	char names[16][32];
	int rc = 0, n;
	uint64_t removed;
	for (n = 0; n < 20000 && !(rc = set_big(s, n, 'a')); n++)
		;
	assert_int_equal(rc, PMKV_E_OOM);
	assert_true(n > 1000);
	assert_int_equal(pmkv_dbsize(s), n);
	assert_int_equal(len_of(s, n), 0);
	assert_int_equal(len_of(s, n - 1), 3000);
	check(s);
	for (int i = 0; i < 16; i++) {
		snprintf(names[i], sizeof(names[i]), "full:%d", i);
		ks[i] = (struct pmkv_key){names[i], strlen(names[i])};
	}
	assert_int_equal(pmkv_del(s, ks, 16, &removed), 0);
	assert_int_equal(removed, 16);
	assert_int_equal(set_big(s, n, 'b'), 0);
	s = reopen();
	assert_int_equal(pmkv_dbsize(s), n - 16 + 1);
	assert_int_equal(len_of(s, 0), 0);
	assert_int_equal(len_of(s, n), 3000);
}

static void expiry_hides_and_removes(void **state)
{
	struct pmkv_store *s = t.s;
	int64_t ttl, v;
	set(s, "gone", "x", 0, pmkv_now_ms() - 1);
	set(s, "later", "y", 0, pmkv_now_ms() + 100000);
	expect(s, "gone", NULL);
	assert_int_equal(pmkv_pttl(s, "gone", 4, &ttl), 0);
	assert_int_equal(ttl, -2);
	assert_int_equal(pmkv_pttl(s, "later", 5, &ttl), 0);
	assert_true(ttl > 90000 && ttl <= 100000);
	/* KEEPTTL keeps it; a plain SET drops it */
	set(s, "later", "z", PMKV_SET_KEEPTTL, 0);
	assert_int_equal(pmkv_pttl(s, "later", 5, &ttl), 0);
	assert_true(ttl > 0);
	set(s, "later", "z", 0, 0);
	assert_int_equal(pmkv_pttl(s, "later", 5, &ttl), 0);
	assert_int_equal(ttl, -1);
	/* a write meets the expired key and takes its place */
	assert_int_equal(set(s, "gone", "new", PMKV_SET_NX, 0), 1);
	set(s, "gone", "5", 0, pmkv_now_ms() - 1);
	assert_int_equal(pmkv_incrby(s, "gone", 4, 1, &v), 0);
	assert_int_equal(v, 1);
}

/* Active expiry (store.c S10): steps over the whole table remove the
 * keys whose expiry has passed, and only those, and give the count back;
 * a step's cursor walks the table and comes back to 0. */
static void active_expiry_removes_what_expired(void **state)
{
	struct pmkv_store *s = t.s;
	char k[32];
	int64_t now = pmkv_now_ms();
	for (int i = 0; i < 300; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		set(s, k, "v", 0, i % 3 == 0 ? now - 1 : i % 3 == 1 ? now + 100000
		                                                     : 0);
	}
	assert_int_equal(pmkv_dbsize(s), 300); /* expired ones still held */
	uint64_t cursor = 0, seen, removed, total_seen = 0, total = 0;
	unsigned steps = 0;
	do {
		assert_int_equal(pmkv_expire_step(s, pmkv_now_ms(), &cursor, 7,
		                                  &seen, &removed), 0);
		total_seen += seen, total += removed;
		assert_true(++steps < 10000);
	} while (cursor != 0);
	assert_true(steps > 1);
	assert_int_equal(total, 100);
	assert_int_equal(total_seen, 300);
	assert_int_equal(pmkv_dbsize(s), 200);
	for (int i = 0; i < 300; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		expect(s, k, i % 3 ? "v" : NULL);
	}
	/* nothing left to remove; a cursor past the table starts again */
	cursor = 1u << 30;
	assert_int_equal(pmkv_expire_step(s, pmkv_now_ms(), &cursor, 1u << 20,
	                                  &seen, &removed), 0);
	assert_int_equal(removed, 0);
	assert_int_equal(seen, 200);
	assert_int_equal(cursor, 0);
	/* not in a group */
	assert_int_equal(pmkv_group_begin(s), 0);
	assert_int_equal(pmkv_expire_step(s, pmkv_now_ms(), &cursor, 1, &seen,
	                                  &removed), PMTX_E_INVAL);
	assert_int_equal(pmkv_group_end(s), 0);
	s = reopen();
	assert_int_equal(pmkv_dbsize(s), 200);
}

#define NKEYS 30000

static void growth_keeps_every_key_across_reopen(void **state)
{
	struct pmkv_store *s = t.s;
	char k[32], v[32];
	for (int i = 0; i < NKEYS; i++) {
		snprintf(k, sizeof(k), "key:%d", i);
		snprintf(v, sizeof(v), "%d", i * 7);
		assert_int_equal(set(s, k, v, 0, 0), 1);
	}
	assert_int_equal(pmkv_dbsize(s), NKEYS);
	struct pmkv_info in;
	pmkv_info_get(s, &in);
	/* a split per insert past the load factor: 2 keys a bucket in the
	 * hash map, 1 in the wrapped table */
	assert_true(in.buckets * (g_flavour == PMKV_OPT ? 2 : 1) + 1 >= NKEYS);
	s = reopen();
	for (int i = 0; i < NKEYS; i += 7) {
		snprintf(k, sizeof(k), "key:%d", i);
		snprintf(v, sizeof(v), "%d", i * 7);
		expect(s, k, v);
	}
	assert_int_equal(pmkv_dbsize(s), NKEYS);
}

struct scan_seen {
	unsigned char *seen;
	uint64_t n;
};

static void mark(void *arg, const void *p, size_t n)
{
	struct scan_seen *ss = arg;
	char k[32];
	assert_true(n < sizeof(k));
	memcpy(k, p, n);
	k[n] = 0;
	int i = atoi(k + 4);
	assert_true(i >= 0 && i < NKEYS);
	ss->seen[i] = 1;
	ss->n++;
}

static void scan_sees_every_key_while_the_table_grows(void **state)
{
	struct pmkv_store *s = t.s;
	struct scan_seen ss = {calloc(NKEYS, 1), 0};
	char k[32];
	for (int i = 0; i < NKEYS / 2; i++) {
		snprintf(k, sizeof(k), "key:%d", i);
		set(s, k, "v", 0, 0);
	}
	uint64_t cur = 0, next;
	int more = NKEYS / 2, steps = 0;
	do {
		assert_int_equal(pmkv_scan(s, cur, 10, mark, &ss, &next), 0);
		for (int j = 0; j < 20 && more < NKEYS; j++, more++) {
			snprintf(k, sizeof(k), "key:%d", more);
			set(s, k, "v", 0, 0); /* splits buckets meanwhile */
		}
		cur = next;
		steps++;
	} while (cur != 0);
	for (int i = 0; i < NKEYS / 2; i++)
		assert_int_equal(ss.seen[i], 1);
	assert_true(steps > 10);
	free(ss.seen);
}

static void flushall_empties_and_frees(void **state)
{
	struct pmkv_store *s = t.s;
	char k[32];
	pmtx_heap_stats before, after;
	assert_int_equal(pmtx_heap_check(pmkv_region(s), &before), 0);
	for (int i = 0; i < 5000; i++) {
		snprintf(k, sizeof(k), "key:%d", i);
		set(s, k, "value", 0, 0);
	}
	assert_int_equal(pmkv_flushall(s), 0);
	assert_int_equal(pmkv_dbsize(s), 0);
	expect(s, "key:1", NULL);
	assert_int_equal(pmtx_heap_check(pmkv_region(s), &after), 0);
	/* the new table's two blocks, as before; pmtx's logs aside */
	assert_int_equal(after.allocated_blocks - after.internal_blocks,
	                 before.allocated_blocks - before.internal_blocks);
	set(s, "key:1", "again", 0, 0);
	expect(s, "key:1", "again");
}

static void other_regions_are_refused(void **state)
{
	(void)state;
	const char *path;
	pmtx_options o;
	pmtx_options_init(&o);
	o.layout = "pmcached";
	o.root_size = 4096;
	pmtx_region *r = tu_create_with(&path, 8u << 20, &o);
	assert_int_equal(pmtx_close(r), 0);
	struct pmkv_config c;
	struct pmkv_store *s = NULL;
	char msg[256] = "";
	pmkv_config_init(&c);
	c.path = path;
	assert_int_equal(pmkv_open(&c, &s, msg, sizeof(msg)),
	                 PMTX_E_BAD_LAYOUT);
	assert_non_null(strstr(msg, path));
	assert_null(s);
	unlink(path);
}

/* A store of one version is refused as the other, and the opt version
 * under copy-on-write; the wrapped one reopens under every runtime. */
static void versions_are_kept_apart(void **state)
{
	(void)state;
	const char *path = tu_path();
	struct pmkv_store *s = NULL;
	char msg[256] = "";
	assert_int_equal(try_open(path, PMTX_RT_COW, PMKV_OPT, &s, msg,
	                          sizeof(msg)), PMTX_E_UNSUPPORTED);
	g_flavour = PMKV_OPT, g_rt = PMTX_RT_REDO;
	s = open_at(path);
	set(s, "k", "opt", 0, 0);
	assert_int_equal(pmkv_close(s), 0);
	/* the store's own version (0): opt, which cow cannot run */
	assert_int_equal(try_open(path, PMTX_RT_COW, 0, &s, msg, sizeof(msg)),
	                 PMTX_E_UNSUPPORTED);
	assert_non_null(strstr(msg, "wrapped"));
	assert_int_equal(try_open(path, PMTX_RT_REDO, PMKV_WRAPPED, &s, msg,
	                          sizeof(msg)), PMKV_E_FORMAT);
	assert_non_null(strstr(msg, "the store is the opt version"));
	unlink(path);

	g_flavour = PMKV_WRAPPED;
	pmtx_runtime rts[] = {PMTX_RT_COW, PMTX_RT_UNDO, PMTX_RT_REDO,
	                      PMTX_RT_REDO_ASYNC, PMTX_RT_AUTO, PMTX_RT_COW};
	char v[8];
	for (unsigned i = 0; i < 6; i++) {
		g_rt = rts[i];
		s = open_at(path);
		if (i)
			expect(s, "k", (snprintf(v, sizeof(v), "w%u", i - 1), v));
		snprintf(v, sizeof(v), "w%u", i);
		set(s, "k", v, 0, 0);
		check(s);
		assert_int_equal(pmkv_close(s), 0);
	}
	assert_int_equal(try_open(path, PMTX_RT_UNDO, PMKV_OPT, &s, msg,
	                          sizeof(msg)), PMKV_E_FORMAT);
	assert_non_null(strstr(msg, "the store is the wrapped version"));
	assert_int_equal(try_open(path, PMTX_RT_UNDO, 0, &s, msg, sizeof(msg)),
	                 0);
	expect(s, "k", "w5");
	assert_int_equal(pmkv_close(s), 0);
	unlink(path);
}

/* A group (store.c S8): its operations read each other's writes, commit
 * together, and many of them grow the table within one transaction. */
static void a_group_commits_together(void **state)
{
	struct pmkv_store *s = t.s;
	char k[32], v[32];
	int64_t r;
	uint64_t n;
	assert_int_equal(set(s, "old", "1", 0, 0), 1);
	assert_int_equal(pmkv_group_begin(s), 0);
	assert_int_equal(pmkv_group_begin(s), PMTX_E_INVAL); /* one a thread */
	assert_int_equal(set(s, "a", "x", 0, 0), 1);
	expect(s, "a", "x");
	assert_int_equal(set(s, "a", "a much longer value than x", 0, 0), 1);
	expect(s, "a", "a much longer value than x");
	assert_int_equal(pmkv_incrby(s, "ctr", 3, 5, &r), 0);
	assert_int_equal(pmkv_incrby(s, "ctr", 3, 5, &r), 0);
	assert_int_equal(r, 10);
	struct pmkv_key old[] = {{"old", 3}};
	assert_int_equal(pmkv_del(s, old, 1, &n), 0);
	assert_int_equal(n, 1);
	for (int i = 0; i < 300; i++) { /* splits and directory growth */
		snprintf(k, sizeof(k), "g%d", i);
		snprintf(v, sizeof(v), "v%d", i);
		assert_int_equal(set(s, k, v, 0, 0), 1);
	}
	assert_int_equal(pmkv_dbsize(s), 302); /* the group's own count */
	assert_int_equal(pmkv_group_end(s), 0);
	assert_int_equal(pmkv_group_end(s), PMTX_E_INVAL);
	s = reopen();
	expect(s, "a", "a much longer value than x");
	expect(s, "ctr", "10");
	expect(s, "old", NULL);
	expect(s, "g299", "v299");
	assert_int_equal(pmkv_dbsize(s), 302);
}

/* Hints (store.c S9) give nothing outside a group or in the wrapped
 * version; in the opt version they follow no offset out of the region,
 * whatever the root or the map's header holds, and change nothing. */
struct hint_run {
	uint64_t tok, far_seg, bad_geom, bad_root, again;
};

/* In the group: a key's token, then with the map's segment table far out
 * of the region, its geometry out of range and the root naming no map,
 * each put back after. */
static void hint_corrupt(struct pmkv_store *s, const char *k,
                         struct hint_run *h)
{
	pmtx_region *r = pmkv_region(s);
	struct pmkv_root *root = pmtx_root(r, NULL);
	pmtx_off map = root->db[0];
	struct hmap_hdr *H = pmtx_ptr(r, map);
	uint64_t segtab = H->segtab, geom = H->geom;
	H->segtab = ((pmtx_off)1 << 44) + 16;
	h->far_seg = pmkv_hint(s, k, strlen(k));
	H->segtab = segtab;
	H->geom = (uint64_t)63 << HMAP_GEOM_LOG_SHIFT;
	h->bad_geom = pmkv_hint(s, k, strlen(k));
	H->geom = geom;
	root->db[0] = ~(uint64_t)15; /* aligned, and its end wraps */
	h->bad_root = pmkv_hint(s, k, strlen(k));
	root->db[0] = map;
	h->again = pmkv_hint(s, k, strlen(k));
}

static void hints_follow_no_offset_out_of_the_region(void **state)
{
	struct pmkv_store *s = t.s;
	struct hint_run h = {0, 1, 1, 1, 0};
	char k[32];
	for (int i = 0; i < 300; i++) { /* buckets beyond the header's */
		snprintf(k, sizeof(k), "k%d", i);
		set(s, k, "v", 0, 0);
	}
	assert_int_equal(pmkv_hint(s, "k1", 2), 0); /* not in a group */
	/* asserted after the group's end, so that a failure leaves no group
	 * open for later tests */
	pmtx_off map = ((struct pmkv_root *)pmtx_root(pmkv_region(s),
	                                             NULL))->db[0];
	assert_int_equal(pmkv_group_begin(s), 0);
	h.tok = pmkv_hint(s, "k1", 2);
	pmkv_hint_more(s, h.tok);
	/* a key whose bucket is in a segment, not in the map's header */
	for (int i = 0; g_flavour == PMKV_OPT && i < 300; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		if ((h.tok = pmkv_hint(s, k, strlen(k))) > map + 256)
			break;
	}
	if (g_flavour == PMKV_OPT)
		hint_corrupt(s, k, &h);
	assert_int_equal(pmkv_group_end(s), 0);
	assert_int_equal(h.tok != 0, g_flavour == PMKV_OPT);
	if (g_flavour == PMKV_OPT) {
		assert_true(h.tok > map + 256);
		assert_int_equal(h.far_seg, 0);
		assert_int_equal(h.bad_geom, 0);
		assert_int_equal(h.bad_root, 0);
		assert_int_equal(h.again, h.tok);
	}
	expect(s, "k1", "v");
}

/* Sixteen databases (store.c S15): each its own key space, selected per
 * thread; MOVE and SWAPDB one transaction each, FLUSHDB one database,
 * FLUSHALL all; all of it kept across a reopen. The wrapped version has
 * database 0 only. */
static void databases_are_separate_key_spaces(void **state)
{
	struct pmkv_store *s = t.s;
	int done;
	(void)state;
	if (g_flavour == PMKV_WRAPPED) {
		assert_int_equal(pmkv_select(s, 1), PMKV_E_DBINDEX);
		assert_int_equal(pmkv_swapdb(s, 0, 1), PMKV_E_DBINDEX);
		assert_int_equal(pmkv_select(s, 0), 0);
		return;
	}
	assert_int_equal(pmkv_select(s, PMKV_DBS), PMKV_E_DBINDEX);
	assert_int_equal(set(s, "a", "zero", 0, 0), 1);
	assert_int_equal(pmkv_select(s, 3), 0);
	expect(s, "a", NULL);
	assert_int_equal(set(s, "a", "three", 0, 0), 1);
	assert_int_equal(set(s, "b", "b3", 0, 0), 1);
	assert_int_equal(pmkv_dbsize(s), 2);
	assert_int_equal(pmkv_move(s, "a", 1, 0, &done), 0);
	assert_int_equal(done, 0); /* there already */
	assert_int_equal(pmkv_move(s, "a", 1, 3, &done), PMKV_E_SAMEDB);
	assert_int_equal(pmkv_move(s, "b", 1, 7, &done), 0);
	assert_int_equal(done, 1);
	assert_int_equal(pmkv_dbsize(s), 1);
	assert_int_equal(pmkv_swapdb(s, 3, 0), 0);
	expect(s, "a", "zero"); /* database 3 is the old 0 */
	assert_int_equal(pmkv_group_begin(s), 0);
	assert_int_equal(pmkv_swapdb(s, 3, 0), PMKV_E_INGROUP);
	assert_int_equal(pmkv_group_end(s), 0);
	s = reopen();
	assert_int_equal(pmkv_select(s, 0), 0);
	expect(s, "a", "three");
	assert_int_equal(pmkv_select(s, 7), 0);
	expect(s, "b", "b3");
	assert_int_equal(pmkv_flushdb(s), 0);
	assert_int_equal(pmkv_dbsize(s), 0);
	assert_int_equal(pmkv_select(s, 3), 0);
	assert_int_equal(pmkv_dbsize(s), 1);
	assert_int_equal(pmkv_flushall(s), 0);
	assert_int_equal(pmkv_dbsize(s), 0);
	assert_int_equal(pmkv_select(s, 0), 0);
	assert_int_equal(pmkv_dbsize(s), 0);
	s = reopen();
	assert_int_equal(pmkv_dbsize(s), 0);
}

/* A FLUSHALL's new maps take the offsets of maps an earlier one freed: a
 * handle kept from before must not be taken for the new map at its old
 * offset (keyspace.c K2), whose seed puts every key elsewhere, so that a
 * fresh handle does not find them. */
static void handles_follow_flushes(void **state)
{
	struct pmkv_store *s = t.s;
	(void)state;
	if (g_flavour == PMKV_WRAPPED)
		return;
	for (unsigned round = 0; round < 40; round++) {
		for (unsigned db = 0; db < PMKV_DBS; db++) {
			char k[16];
			/* a handle kept over an even number of FLUSHALLs, whose
			 * new maps here take the offsets freed two before */
			if ((db + round) % 4)
				continue;
			snprintf(k, sizeof(k), "k%u", round);
			assert_int_equal(pmkv_select(s, db), 0);
			assert_int_equal(set(s, k, "v", 0, 0), 1);
			expect(s, k, "v");
			assert_int_equal(pmkv_dbsize(s), 1);
		}
		if (round % 4 != 3)
			continue;
		/* a fresh handle must find what the kept one wrote */
		s = reopen();
		for (unsigned db = 0; db < PMKV_DBS; db++) {
			assert_int_equal(pmkv_select(s, db), 0);
			assert_int_equal(pmkv_dbsize(s), 1);
			for (unsigned r = round - 3; r <= round; r++) {
				char k[16];
				snprintf(k, sizeof(k), "k%u", r);
				if ((db + r) % 4 == 0)
					expect(s, k, "v");
			}
		}
		assert_int_equal(pmkv_flushall(s), 0); /* each map elsewhere */
		assert_int_equal(pmkv_flushall(s), 0); /* and back */
	}
	assert_int_equal(pmkv_select(s, 0), 0);
}

/* A client's mistake fails its own operation only (store.c S13): the
 * group goes on, and commits the others' writes. */
static void a_user_error_fails_only_its_operation(void **state)
{
	struct pmkv_store *s = t.s;
	char big[5000];
	int64_t r;
	int done, found;
	memset(big, 'b', sizeof(big));
	assert_int_equal(set(s, "text", "abc", 0, 0), 1);
	assert_int_equal(pmkv_group_begin(s), 0);
	assert_int_equal(set(s, "keep", "2", 0, 0), 1);
	/* fails after its lookup, nothing written */
	assert_int_equal(pmkv_incrby(s, "text", 4, 1, &r), PMKV_E_NOTINT);
	/* fails before anything */
	assert_int_equal(pmkv_set(s, "k", 1, big, sizeof(big), 0, 0, &done,
	                          keep, NULL, &found), PMKV_E_TOOBIG);
	assert_int_equal(pmkv_set(s, "after", 5, "a", 1, 0, 0, &done, keep,
	                          NULL, &found), 0);
	assert_int_equal(pmkv_group_end(s), 0);
	s = reopen();
	expect(s, "keep", "2");
	expect(s, "text", "abc");
	expect(s, "after", "a");
	expect(s, "k", NULL);
	assert_int_equal(pmkv_dbsize(s), 3);
	check(s);
}

/* Any other failure breaks its group: the later operations do not run,
 * and the end aborts every write of the group, the earlier ones too. */
static void a_failed_operation_aborts_its_group(void **state)
{
	struct pmkv_store *s = replace_store(16u << 20); /* cannot grow */
	int done, found, rc = 0, n;
	(void)state;
	assert_int_equal(set(s, "keep", "1", 0, 0), 1);
	assert_int_equal(pmkv_group_begin(s), 0);
	assert_int_equal(set(s, "keep", "2", 0, 0), 1);
	for (n = 0; n < 20000 && !(rc = set_big(s, n, 'a')); n++)
		;
	assert_int_equal(rc, PMKV_E_OOM);
	assert_int_equal(pmkv_set(s, "after", 5, "a", 1, 0, 0, &done, keep,
	                          NULL, &found), PMKV_E_GROUP);
	assert_int_equal(pmkv_group_end(s), PMKV_E_OOM);
	expect(s, "keep", "1");
	expect(s, "after", NULL);
	assert_int_equal(len_of(s, 0), 0);
	assert_int_equal(pmkv_dbsize(s), 1);
	check(s);
	s = reopen();
	expect(s, "keep", "1");
	assert_int_equal(pmkv_dbsize(s), 1);
}

/* A hash of n fields (each with a 100-byte value) at key k, built in one
 * RESTORE's transaction. */
static void restore_hash(struct pmkv_store *s, const char *k, int n)
{
	struct pmkv_image im = {0};
	char f[32], v[100];
	int busy = -1;
	memset(v, 'h', sizeof(v));
	im.type = PMKV_T_HASH;
	for (int i = 0; i < n; i++) {
		snprintf(f, sizeof(f), "field:%d", i);
		assert_int_equal(pmkv_image_add(&im, f, strlen(f), 0), 0);
		assert_int_equal(pmkv_image_add(&im, v, sizeof(v), 0), 0);
	}
	assert_int_equal(pmkv_restore(s, k, strlen(k), &im, 0, -1, -1, &busy),
	                 0);
	assert_int_equal(busy, 0);
	pmkv_image_free(&im);
}

static int type_of(struct pmkv_store *s, const char *k)
{
	int type = -2;
	assert_int_equal(pmkv_type(s, k, strlen(k), &type), 0);
	return type;
}

/* COPY of a collection is one transaction (store_copy.c Y1): a copy
 * that runs out of room after it has written part of the new hash
 * leaves no destination, the source whole and nothing leaked (the
 * check); with room, the same copy is made whole (opt: the wrapped
 * version holds strings only). */
static void a_copy_that_runs_out_of_room_leaves_nothing(void **state)
{
	struct pmkv_store *s;
	uint64_t n;
	int done = -1, rc = 0, big;
	(void)state;
	if (g_flavour != PMKV_OPT)
		return;
	s = replace_store(16u << 20); /* cannot grow */
	restore_hash(s, "src", 8000);
	for (big = 0; big < 20000 && !(rc = set_big(s, big, 'a')); big++)
		;
	assert_int_equal(rc, PMKV_E_OOM);
	for (int i = 0; i < 60; i++) { /* room for part of a copy */
		char k[32];
		snprintf(k, sizeof(k), "full:%d", i);
		struct pmkv_key d = {k, strlen(k)};
		assert_int_equal(pmkv_del(s, &d, 1, &n), 0);
	}
	assert_int_equal(pmkv_copy(s, "src", 3, "dst", 3, 0, 0, &done),
	                 PMKV_E_OOM);
	assert_int_equal(done, 0);
	assert_int_equal(type_of(s, "dst"), -1);
	assert_int_equal(type_of(s, "src"), PMKV_T_HASH);
	check(s);
	for (int i = 60; i < big; i++) { /* room for all of it */
		char k[32];
		snprintf(k, sizeof(k), "full:%d", i);
		struct pmkv_key d = {k, strlen(k)};
		assert_int_equal(pmkv_del(s, &d, 1, &n), 0);
	}
	assert_int_equal(pmkv_copy(s, "src", 3, "dst", 3, 0, 0, &done), 0);
	assert_int_equal(done, 1);
	s = reopen();
	struct pmkv_key keys[2] = {{"src", 3}, {"dst", 3}};
	struct pmkv_image im[2] = {{0}, {0}};
	assert_int_equal(pmkv_image_read(s, keys, 2, UINT64_MAX, 1, im), 0);
	assert_int_equal(im[1].type, PMKV_T_HASH);
	assert_int_equal(im[0].len, 8000);
	assert_int_equal(im[1].len, 8000);
	assert_int_equal(im[1].nbytes, im[0].nbytes);
	pmkv_image_free(&im[0]);
	pmkv_image_free(&im[1]);
}

/* A group reads what its own operations wrote, under every runtime
 * (store.c S3, S4): format 1.x wrote short values in place, which a
 * later read of the same group under redo did not see. */
static void a_group_reads_its_own_writes(void **state)
{
	struct pmkv_store *s = t.s;
	int64_t r;
	uint64_t len;
	assert_int_equal(set(s, "k", "xxxxx", 0, 0), 1);
	assert_int_equal(set(s, "c", "5", 0, 0), 1);
	assert_int_equal(pmkv_group_begin(s), 0);
	assert_int_equal(set(s, "k", "yy", 0, 0), 1);
	expect(s, "k", "yy");
	for (int i = 6; i <= 8; i++) {
		assert_int_equal(pmkv_incrby(s, "c", 1, 1, &r), 0);
		assert_int_equal(r, i);
	}
	expect(s, "c", "8");
	assert_int_equal(pmkv_append(s, "k", 1, "zz", 2, &len), 0);
	assert_int_equal(len, 4);
	expect(s, "k", "yyzz");
	assert_int_equal(pmkv_strlen(s, "k", 1, &len), 0);
	assert_int_equal(len, 4);
	assert_int_equal(pmkv_group_end(s), 0);
	expect(s, "k", "yyzz");
	expect(s, "c", "8");
}

static int keep_off(pmtx_off off, void *arg)
{
	tu_offs_push(arg, off);
	return 0;
}

/* pmkv_walk reaches exactly the heap's blocks (the explorer's leak check
 * relies on it), after growth, removals and a FLUSHALL. */
static void the_walk_reaches_every_block(void **state)
{
	struct pmkv_store *s = t.s;
	struct tu_offs used = {0};
	uint64_t n;
	char k[32];
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 3000; i++) {
			snprintf(k, sizeof(k), "key:%d", i);
			set(s, k, i % 2 ? "v" : "a longer value, a longer block",
			    0, 0);
		}
		for (int i = 0; i < 3000; i += 3) {
			struct pmkv_key d = {k, (size_t)snprintf(k, sizeof(k),
			                                         "key:%d", i)};
			assert_int_equal(pmkv_del(s, &d, 1, &n), 0);
		}
		used.n = 0;
		assert_int_equal(pmkv_walk(s, keep_off, &used), 0);
		tu_assert_heap_blocks(pmkv_region(s), &used, "after deletes");
		if (round == 1)
			assert_int_equal(pmkv_flushall(s), 0);
	}
	free(used.v);
}

/* An object that is not one (layout.h L4) is PMTX_E_CORRUPT to every
 * operation that reads it and to the check (opt). */
static void a_malformed_object_is_corrupt(void **state)
{
	if (g_flavour != PMKV_OPT)
		return;
	static const struct {
		const char *v;
		size_t n;
	} bad[] = {
		{"", 0},                 /* no header */
		{"\x09\x00x", 3},        /* a type this format has not */
		{"\x00\x02x", 3},        /* an unknown flag */
		{"\x00\x01\x01\x02", 4}, /* an expiry cut short */
		{"\x00\x01\0\0\0\0\0\0\0\0", 10}, /* expiry 0 */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct pmkv_store *s = t.s;
		pmtx_region *r = pmkv_region(s);
		struct pmkv_root *root = pmtx_root(r, NULL);
		pmtx_hmap *m;
		char msg[256] = "";
		int found;
		struct buf b;
		set(s, "good", "v", 0, 0);
		assert_int_equal(pmtx_hmap_open(r, root->db[0], NULL, &m), 0);
		assert_int_equal(pmtx_hmap_put(NULL, m, "bad", 3, bad[i].v,
		                               bad[i].n, 0, NULL), 0);
		pmtx_hmap_close(m);
		expect(s, "good", "v");
		assert_int_equal(pmkv_get(s, "bad", 3, keep, &b, &found),
		                 PMTX_E_CORRUPT);
		assert_int_equal(pmkv_check(s, msg, sizeof(msg)),
		                 PMTX_E_CORRUPT);
		assert_non_null(strstr(msg, "database 0"));
		replace_store(MAX_SIZE);
	}
}

/* A region of a newer minor of this format (L5) is refused, by name. */
static void a_newer_minor_is_refused(void **state)
{
	struct pmkv_store *s = t.s;
	struct pmkv_root_hdr *h = pmtx_root(pmkv_region(s), NULL);
	char msg[256], want[32];
	uint16_t minor = (uint16_t)(h->minor + 1);
	h->minor = minor; /* a plain store, then a clean close */
	pmtx_persist(pmkv_region(s), &h->minor, sizeof(h->minor));
	snprintf(want, sizeof(want), "format %u.%u", h->major, minor);
	close_store();
	assert_int_equal(try_open(t.path, g_rt, g_flavour, &s, msg,
	                          sizeof(msg)), PMKV_E_FORMAT);
	assert_non_null(strstr(msg, want));
}

static const char *g_golden; /* the unpacked golden regions (argv[1]) */

/* A copy of the golden region of format 1.1 of this version. */
static const char *golden_copy(const char *version)
{
	char src[4096];
	const char *dst = tu_path();
	if (!g_golden)
		fail_msg("no golden directory (test_pmkv_store DIR)");
	snprintf(src, sizeof(src), "%s/pmkv-1.1-%s.region", g_golden, version);
	tu_copy_file(src, dst);
	return dst;
}

/* Format 1.1's opt version is refused at open, with what it is, what
 * this pmkv reads and what to do (layout.h L5), and left as it was. */
static void the_old_opt_format_is_refused(void **state)
{
	(void)state;
	const char *path = golden_copy("opt");
	uint64_t before = tu_file_hash(path);
	struct pmkv_store *s = NULL;
	char msg[1024];
	for (unsigned f = 0; f <= PMKV_OPT; f++) {
		assert_int_equal(try_open(path, PMTX_RT_REDO, f, &s, msg,
		                          sizeof(msg)), PMKV_E_FORMAT);
		assert_null(s);
		assert_non_null(strstr(msg, path));
		assert_non_null(strstr(msg, "format 1.1 (the opt version"));
		assert_non_null(strstr(msg, "reads the opt version of format "
		                            "2.0"));
		assert_non_null(strstr(msg, "the pmkv that wrote it"));
	}
	assert_int_equal(tu_file_hash(path), before);
	unlink(path);
}

/* Format 1.1's wrapped version is still this pmkv's: it opens under
 * every runtime with the keys it was written with. */
static void the_wrapped_format_still_opens(void **state)
{
	(void)state;
	const char *path = golden_copy("wrapped");
	pmtx_runtime rts[] = {PMTX_RT_REDO, PMTX_RT_UNDO, PMTX_RT_COW};
	g_flavour = PMKV_WRAPPED;
	for (unsigned i = 0; i < 3; i++) {
		struct pmkv_store *s;
		int64_t ttl;
		g_rt = rts[i];
		s = open_at(path);
		expect(s, "greeting", "hello");
		expect(s, "counter", i ? "43" : "42");
		expect(s, "a", "1");
		expect(s, "b", "2");
		expect(s, "c", "3");
		assert_int_equal(pmkv_pttl(s, "later", 5, &ttl), 0);
		assert_true(ttl > 0 && ttl <= 4102444800000 - pmkv_now_ms());
		assert_int_equal(pmkv_dbsize(s), 6);
		check(s);
		if (i == 0)
			assert_int_equal(pmkv_incrby(s, "counter", 7, 1, &ttl),
			                 0);
		assert_int_equal(pmkv_close(s), 0);
	}
	unlink(path);
}

static int use(pmtx_runtime rt, unsigned flavour)
{
	g_rt = rt;
	g_flavour = flavour;
	t.path = tu_path();
	t.s = open_at(t.path);
	return 0;
}
static int undo(void **s) { return (void)s, use(PMTX_RT_UNDO, PMKV_OPT); }
static int redo(void **s) { return (void)s, use(PMTX_RT_REDO, PMKV_OPT); }
static int redo_async(void **s)
{
	return (void)s, use(PMTX_RT_REDO_ASYNC, PMKV_OPT);
}
static int w_undo(void **s) { return (void)s, use(PMTX_RT_UNDO, PMKV_WRAPPED); }
static int w_redo(void **s) { return (void)s, use(PMTX_RT_REDO, PMKV_WRAPPED); }
static int w_cow(void **s) { return (void)s, use(PMTX_RT_COW, PMKV_WRAPPED); }

static int store_done(void **state)
{
	(void)state;
	if (t.s) {
		check(t.s);
		close_store();
	}
	unlink(t.path);
	return 0;
}

#define ON(f, setup) cmocka_unit_test_setup_teardown(f, setup, store_done)
#define ALL(f)                                                               \
	ON(f, undo), ON(f, redo), ON(f, redo_async), ON(f, w_undo),          \
		ON(f, w_redo), ON(f, w_cow)

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		ALL(set_get_del_and_conditions),
		ALL(binary_keys_and_values),
		ALL(incr_append_strlen),
		ALL(limits_store_nothing),
		ALL(a_full_region_refuses_and_keeps),
		ALL(expiry_hides_and_removes),
		ALL(active_expiry_removes_what_expired),
		ALL(growth_keeps_every_key_across_reopen),
		ALL(scan_sees_every_key_while_the_table_grows),
		ALL(flushall_empties_and_frees),
		ALL(a_group_commits_together),
		ALL(databases_are_separate_key_spaces),
		ALL(handles_follow_flushes),
		ALL(a_user_error_fails_only_its_operation),
		ALL(a_failed_operation_aborts_its_group),
		ALL(a_copy_that_runs_out_of_room_leaves_nothing),
		ALL(hints_follow_no_offset_out_of_the_region),
		ALL(a_group_reads_its_own_writes),
		ALL(the_walk_reaches_every_block),
		ALL(a_malformed_object_is_corrupt),
		ALL(a_newer_minor_is_refused),
		cmocka_unit_test(other_regions_are_refused),
		cmocka_unit_test(versions_are_kept_apart),
		cmocka_unit_test(the_old_opt_format_is_refused),
		cmocka_unit_test(the_wrapped_format_still_opens),
	};
	g_golden = argc > 1 ? argv[1] : NULL;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
