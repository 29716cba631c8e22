/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_hmap.cpp - the hash map (src/containers/hmap.c) against
 * std::unordered_map, under every runtime, standalone and inside the
 * caller's transactions (some aborted); its scan guarantee across splits;
 * concurrent writers on stripe locks, and views that outlive another
 * thread's writes; bad input.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "conttest.hpp"

extern "C" {
#include "containers/hmap.h"
}

using conttest::rng;
using conttest::str;
using model = std::unordered_map<std::string, std::string>;

namespace {

struct fixture {
	const char *path = nullptr;
	pmtx_region *r = nullptr;
	pmtx_off off = 0;
	pmtx_hmap *m = nullptr;
};

void make(fixture &f, pmtx_runtime rt, unsigned flags = 0,
          unsigned stripes = 0, size_t size = 64 << 20)
{
	f.r = conttest::region_for(rt, size, 256, &f.path);
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_hmap_create(tx, flags, &f.off), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	pmtx_cont_options o;
	pmtx_cont_options_init(&o);
	o.stripes = stripes;
	assert_int_equal(pmtx_hmap_open(f.r, f.off, &o, &f.m), 0);
}

void drop(fixture &f)
{
	pmtx_hmap_close(f.m);
	assert_int_equal(pmtx_close(f.r), 0);
	unlink(f.path);
}

void check(fixture &f, const model &want)
{
	char msg[200];
	int rc = hmap_check(f.m, msg, sizeof msg);
	if (rc)
		fail_msg("hmap_check: %s", msg);
	uint64_t n;
	assert_int_equal(pmtx_hmap_len(nullptr, f.m, &n), 0);
	assert_int_equal(n, want.size());
	for (auto &kv : want) {
		pmtx_bytes v;
		assert_int_equal(pmtx_hmap_get(nullptr, f.m, kv.first.data(),
		                               kv.first.size(), &v), 0);
		assert_true(str(v) == kv.second);
	}
}

/* One random operation on map and model; tx may be null. */
void random_op(fixture &f, pmtx_tx *tx, model &mm, rng &g)
{
	std::string k = g.bytes(12), v = g.bytes(g.below(8) ? 40 : 3000);
	unsigned what = (unsigned)g.below(10);
	int existed = -1;
	if (what < 5) {
		unsigned flags = g.below(4) == 0 ? PMTX_HMAP_NX
		                 : g.below(4) == 0 ? PMTX_HMAP_XX : 0;
		int rc = pmtx_hmap_put(tx, f.m, k.data(), k.size(), v.data(),
		                       v.size(), flags, &existed);
		bool had = mm.count(k) != 0;
		assert_int_equal(existed, had);
		if (flags == PMTX_HMAP_NX && had) {
			assert_int_equal(rc, PMTX_E_EXISTS);
		} else if (flags == PMTX_HMAP_XX && !had) {
			assert_int_equal(rc, PMTX_E_NOT_FOUND);
		} else {
			assert_int_equal(rc, 0);
			mm[k] = v;
		}
	} else if (what < 8) {
		int rc = pmtx_hmap_del(tx, f.m, k.data(), k.size());
		assert_int_equal(rc, mm.erase(k) ? 0 : PMTX_E_NOT_FOUND);
	} else {
		pmtx_bytes got;
		int rc = pmtx_hmap_get(tx, f.m, k.data(), k.size(), &got);
		auto it = mm.find(k);
		assert_int_equal(rc, it == mm.end() ? PMTX_E_NOT_FOUND : 0);
		if (!rc)
			assert_true(str(got) == it->second);
	}
}

/* Standalone operations, then transactions of several operations, one in
 * four aborted (the model rolls back with it). */
void differential(pmtx_runtime rt, unsigned rounds)
{
	fixture f;
	make(f, rt);
	model mm;
	rng g(0x5eed + rt);
	for (unsigned i = 0; i < rounds; i++)
		random_op(f, nullptr, mm, g);
	check(f, mm);
	for (unsigned t = 0; t < rounds / 8; t++) {
		model before = mm;
		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		for (unsigned i = 0, n = 1 + (unsigned)g.below(12); i < n; i++)
			random_op(f, tx, mm, g);
		if (g.below(4) == 0) {
			assert_int_equal(pmtx_abort(tx), 0);
			mm = before;
		} else {
			assert_int_equal(pmtx_commit(tx), 0);
		}
		if (t % 64 == 0)
			check(f, mm);
	}
	check(f, mm);
	/* reopen: the map is what was committed */
	pmtx_hmap_close(f.m);
	assert_int_equal(pmtx_close(f.r), 0);
	f.r = tu_open(f.path);
	assert_int_equal(pmtx_hmap_open(f.r, f.off, nullptr, &f.m), 0);
	check(f, mm);
	drop(f);
}

unsigned rounds()
{
	return tu_long_mode() ? 200000 : 3000;
}

void matches_a_model_under_every_runtime(void **)
{
	for (size_t i = 0; i < conttest::nruntimes; i++)
		differential(conttest::runtimes[i], rounds());
}

/* Growth splits one bucket an insert: the buckets follow the entries. */
void grows_one_bucket_at_a_time(void **)
{
	fixture f;
	make(f, PMTX_RT_REDO);
	model mm;
	uint64_t last = hmap_buckets(f.m);
	for (unsigned i = 0; i < 20000; i++) {
		std::string k = "key" + std::to_string(i);
		assert_int_equal(pmtx_hmap_put(nullptr, f.m, k.data(), k.size(),
		                               "v", 1, 0, nullptr), 0);
		mm[k] = "v";
		uint64_t b = hmap_buckets(f.m);
		assert_true(b == last || b == last + 1);
		last = b;
	}
	assert_true(last >= 20000 / 2 - 1 && last <= 20000 / 2 + 1);
	check(f, mm);
	drop(f);
}

struct scan_state {
	std::multiset<std::string> seen;
};

int collect(const pmtx_bytes *k, const pmtx_bytes *, void *arg)
{
	((scan_state *)arg)->seen.insert(str(*k));
	return 0;
}

/* Redis's SCAN guarantee: keys present for the whole scan are returned,
 * while inserts split buckets and deletes remove other keys. */
void scan_returns_every_key_present_throughout(void **)
{
	for (size_t ri = 0; ri < conttest::nruntimes; ri++) {
		fixture f;
		make(f, conttest::runtimes[ri]);
		rng g(7 + ri);
		std::set<std::string> stay;
		for (unsigned i = 0; i < 3000; i++) {
			std::string k = "s" + std::to_string(i);
			pmtx_hmap_put(nullptr, f.m, k.data(), k.size(), "x", 1, 0,
			              nullptr);
			stay.insert(k);
		}
		scan_state st;
		uint64_t cur = 0, n = 0;
		do {
			assert_int_equal(pmtx_hmap_scan(nullptr, f.m, cur, 10,
			                                collect, &st, &cur), 0);
			for (unsigned j = 0; j < 20; j++, n++) {
				std::string k = "t" + std::to_string(n);
				pmtx_hmap_put(nullptr, f.m, k.data(), k.size(),
				              "y", 1, 0, nullptr);
				if (n % 3 == 0) {
					std::string d = "t" + std::to_string(n / 3);
					pmtx_hmap_del(nullptr, f.m, d.data(),
					              d.size());
				}
			}
		} while (cur);
		for (auto &k : stay)
			assert_true(st.seen.count(k) >= 1);
		assert_true(n > 3000); /* the table at least doubled */
		drop(f);
	}
}

/* An operation that fails before writing changes nothing; a handle that
 * is not a map is refused; copy-on-write is refused. */
void bad_input_changes_nothing(void **)
{
	fixture f;
	make(f, PMTX_RT_UNDO);
	model mm{{"a", "1"}};
	assert_int_equal(pmtx_hmap_put(nullptr, f.m, "a", 1, "1", 1, 0, nullptr),
	                 0);
	std::string big(PMTX_CONT_BYTES_MAX + 1, 'x');
	assert_int_equal(pmtx_hmap_put(nullptr, f.m, big.data(), big.size(),
	                               "v", 1, 0, nullptr), PMTX_E_TOO_BIG);
	assert_int_equal(pmtx_hmap_put(nullptr, f.m, "k", 1, big.data(),
	                               big.size(), 0, nullptr), PMTX_E_TOO_BIG);
	assert_int_equal(pmtx_hmap_put(nullptr, f.m, "a", 1, "2", 1,
	                               PMTX_HMAP_NX, nullptr), PMTX_E_EXISTS);
	assert_int_equal(pmtx_hmap_put(nullptr, f.m, "b", 1, "2", 1,
	                               PMTX_HMAP_XX, nullptr), PMTX_E_NOT_FOUND);
	assert_int_equal(pmtx_hmap_del(nullptr, f.m, "b", 1), PMTX_E_NOT_FOUND);
	assert_int_equal(pmtx_hmap_put(nullptr, f.m, nullptr, 3, "v", 1, 0,
	                               nullptr), PMTX_E_INVAL);
	check(f, mm);
	pmtx_hmap *bad;
	pmtx_tx *tx;
	pmtx_off blk;
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_zalloc(tx, 256, &blk), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	assert_int_equal(pmtx_hmap_open(f.r, blk, nullptr, &bad),
	                 PMTX_E_NOT_CONTAINER);
	assert_int_equal(pmtx_hmap_open(f.r, blk + 8, nullptr, &bad),
	                 PMTX_E_NOT_CONTAINER);
	assert_int_equal(pmtx_hmap_open(f.r, 1ull << 40, nullptr, &bad),
	                 PMTX_E_NOT_CONTAINER);
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_COW, &tx), 0);
	assert_int_equal(pmtx_hmap_put(tx, f.m, "c", 1, "3", 1, 0, nullptr),
	                 PMTX_E_UNSUPPORTED);
	pmtx_bytes v;
	assert_int_equal(pmtx_hmap_get(tx, f.m, "a", 1, &v),
	                 PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_commit(tx), 0);
	check(f, mm);
	drop(f);
}

/* A failure after the first write (the heap full) aborts the caller's
 * transaction: nothing of it stays. */
void failure_after_a_write_aborts_the_transaction(void **)
{
	fixture f;
	make(f, PMTX_RT_REDO, 0, 0, 4 << 20);
	model mm;
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_hmap_put(tx, f.m, "k", 1, "v", 1, 0, nullptr), 0);
	std::string huge(3 << 20, 'h');
	int rc = pmtx_hmap_put(tx, f.m, "h", 1, huge.data(), huge.size(), 0,
	                       nullptr);
	assert_int_equal(rc, PMTX_E_NOMEM);
	assert_int_equal(pmtx_commit(tx), PMTX_E_ABORTED);
	check(f, mm);
	drop(f);
}

/* Two maps change together or not at all. */
void two_maps_change_atomically(void **)
{
	for (size_t ri = 0; ri < conttest::nruntimes; ri++) {
		fixture f;
		make(f, conttest::runtimes[ri]);
		pmtx_off off2;
		pmtx_hmap *m2;
		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		assert_int_equal(pmtx_hmap_create(tx, 0, &off2), 0);
		assert_int_equal(pmtx_commit(tx), 0);
		assert_int_equal(pmtx_hmap_open(f.r, off2, nullptr, &m2), 0);
		for (int commit = 0; commit < 2; commit++) {
			assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
			assert_int_equal(pmtx_hmap_put(tx, f.m, "a", 1, "1", 1, 0,
			                               nullptr), 0);
			assert_int_equal(pmtx_hmap_put(tx, m2, "b", 1, "2", 1, 0,
			                               nullptr), 0);
			pmtx_bytes v;
			assert_int_equal(pmtx_hmap_get(tx, m2, "b", 1, &v), 0);
			if (commit)
				assert_int_equal(pmtx_commit(tx), 0);
			else
				assert_int_equal(pmtx_abort(tx), 0);
			uint64_t n1, n2;
			pmtx_hmap_len(nullptr, f.m, &n1);
			pmtx_hmap_len(nullptr, m2, &n2);
			assert_int_equal(n1, (uint64_t)commit);
			assert_int_equal(n2, (uint64_t)commit);
		}
		pmtx_hmap_close(m2);
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		assert_int_equal(pmtx_hmap_destroy(tx, off2), 0);
		assert_int_equal(pmtx_commit(tx), 0);
		assert_int_equal(pmtx_hmap_open(f.r, off2, nullptr, &m2),
		                 PMTX_E_NOT_CONTAINER);
		drop(f);
	}
}

void clear_empties_and_the_map_is_reusable(void **)
{
	fixture f;
	make(f, PMTX_RT_UNDO);
	model mm;
	pmtx_heap_stats st0, st;
	assert_int_equal(pmtx_heap_check(f.r, &st0), 0);
	for (unsigned i = 0; i < 5000; i++) {
		std::string k = std::to_string(i);
		pmtx_hmap_put(nullptr, f.m, k.data(), k.size(), "v", 1, 0,
		              nullptr);
	}
	assert_int_equal(pmtx_hmap_clear(nullptr, f.m), 0);
	check(f, mm);
	assert_int_equal(pmtx_heap_check(f.r, &st), 0);
	/* every block but the header's is back (pmtx's own log chunks, which
	 * the clear's many frees grew, are not the map's) */
	assert_int_equal(st.allocated_blocks - st.internal_blocks,
	                 st0.allocated_blocks - st0.internal_blocks);
	for (unsigned i = 0; i < 100; i++) {
		std::string k = "again" + std::to_string(i);
		pmtx_hmap_put(nullptr, f.m, k.data(), k.size(), "w", 1, 0,
		              nullptr);
		mm[k] = "w";
	}
	check(f, mm);
	drop(f);
}

/* A map destroyed a piece at a time: each step is a transaction of its
 * own, the map consistent after each (an aborted step changes nothing),
 * and at the end every block is back. */
void destroy_some_frees_everything_in_steps(void **)
{
	for (size_t ri = 0; ri < conttest::nruntimes; ri++) {
		fixture f;
		make(f, conttest::runtimes[ri]);
		pmtx_heap_stats st0, st;
		pmtx_drain(f.r);
		assert_int_equal(pmtx_heap_check(f.r, &st0), 0);
		pmtx_off again;
		pmtx_tx *tx;
		/* a second map, destroyed piecewise; the fixture's stays */
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		assert_int_equal(pmtx_hmap_create(tx, 0, &again), 0);
		assert_int_equal(pmtx_commit(tx), 0);
		pmtx_hmap *m2;
		assert_int_equal(pmtx_hmap_open(f.r, again, nullptr, &m2), 0);
		for (unsigned i = 0; i < 3000; i++) {
			std::string k = std::to_string(i);
			assert_int_equal(pmtx_hmap_put(nullptr, m2, k.data(),
			                               k.size(), "v", 1, 0,
			                               nullptr), 0);
		}
		pmtx_hmap_close(m2);
		int left = 1;
		unsigned steps = 0;
		char msg[200];
		for (; left; steps++) {
			uint64_t before = 0, after = 0;
			assert_int_equal(pmtx_hmap_open(f.r, again, nullptr, &m2),
			                 0);
			pmtx_hmap_len(nullptr, m2, &before);
			pmtx_hmap_close(m2);
			assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
			assert_int_equal(pmtx_hmap_destroy_some(tx, again, 256,
			                                        &left), 0);
			if (steps % 3 == 1) { /* aborted: nothing changes */
				assert_int_equal(pmtx_abort(tx), 0);
				left = 1;
			} else {
				assert_int_equal(pmtx_commit(tx), 0);
			}
			if (!left)
				break;
			assert_int_equal(pmtx_hmap_open(f.r, again, nullptr, &m2),
			                 0);
			if (hmap_check(m2, msg, sizeof msg))
				fail_msg("after step %u: %s", steps, msg);
			pmtx_hmap_len(nullptr, m2, &after);
			assert_int_equal(after, steps % 3 == 1 ? before
			                        : before - std::min<uint64_t>(before, 256));
			pmtx_hmap_close(m2);
		}
		assert_true(steps >= 3000 / 256);
		assert_int_equal(pmtx_hmap_open(f.r, again, nullptr, &m2),
		                 PMTX_E_NOT_CONTAINER);
		pmtx_drain(f.r);
		assert_int_equal(pmtx_heap_check(f.r, &st), 0);
		assert_int_equal(st.allocated_blocks - st.internal_blocks,
		                 st0.allocated_blocks - st0.internal_blocks);
		drop(f);
	}
}

/* Hints read with plain loads and never follow a word outside the
 * region: a hint on a healthy map names a bucket word; one whose
 * geometry or segment table is garbage returns 0 and reads nothing. */
void prefetch_is_harmless_on_a_corrupt_map(void **)
{
	fixture f;
	make(f, PMTX_RT_UNDO);
	for (unsigned i = 0; i < 2000; i++) {
		std::string k = std::to_string(i);
		pmtx_hmap_put(nullptr, f.m, k.data(), k.size(), "v", 1, 0,
		              nullptr);
	}
	for (unsigned i = 0; i < 2000; i++) {
		std::string k = std::to_string(i);
		uint64_t t = pmtx_hmap_prefetch(f.m, k.data(), k.size());
		assert_true(t != 0);
		pmtx_hmap_prefetch_more(f.m, t);
	}
	uint64_t *geom = (uint64_t *)((char *)pmtx_ptr(f.r, f.off) + 24);
	uint64_t *segtab = geom + 1, keep_g = *geom, keep_t = *segtab;
	*geom = ~0ull;
	assert_int_equal(pmtx_hmap_prefetch(f.m, "1", 1), 0);
	*geom = keep_g;
	*segtab = 1ull << 60;
	for (unsigned i = 0; i < 2000; i++) {
		std::string k = std::to_string(i);
		pmtx_hmap_prefetch_more(f.m, pmtx_hmap_prefetch(f.m, k.data(),
		                                                k.size()));
	}
	*segtab = keep_t;
	pmtx_hmap_prefetch_more(f.m, 1ull << 62);
	drop(f);
}

/* The link that names the entry at eoff: a word of one of the map's
 * blocks whose offset field (hmap_layout.h: bits 0-43, the offset over
 * 16) is eoff's. */
uint64_t *link_to(fixture &f, pmtx_off eoff)
{
	std::vector<pmtx_off> blocks;
	auto add = [](pmtx_off off, void *arg) {
		static_cast<std::vector<pmtx_off> *>(arg)->push_back(off);
		return 0;
	};
	assert_int_equal(hmap_walk(f.m, add, &blocks), 0);
	for (pmtx_off b : blocks) {
		uint64_t *w = (uint64_t *)pmtx_ptr(f.r, b);
		for (size_t i = 0; i < pmtx_usable_size(f.r, b) / 8; i++)
			if (w[i] && (w[i] & ((1ull << 44) - 1)) == eoff >> 4)
				return &w[i];
	}
	fail_msg("no link names entry %llu", (unsigned long long)eoff);
	return nullptr;
}

/* A link's filter holds the tags of its chain from the entry it names on
 * (hmap_layout.h HL4): one that lacks them is reported by the checker,
 * and a lookup of such a key stops at that link, not finding it (the
 * filter is what spares an absent key's lookup the chain). */
void checker_catches_a_filter_that_lacks_a_key(void **)
{
	fixture f;
	make(f, PMTX_RT_UNDO);
	model mm;
	for (unsigned i = 0; i < 300; i++) {
		std::string k = "k" + std::to_string(i);
		mm[k] = "v" + k;
		assert_int_equal(pmtx_hmap_put(nullptr, f.m, k.data(), k.size(),
		                               mm[k].data(), mm[k].size(), 0,
		                               nullptr), 0);
	}
	check(f, mm);
	for (const char *k : {"k7", "k150", "k299"}) {
		pmtx_bytes v;
		assert_int_equal(pmtx_hmap_get(nullptr, f.m, k, strlen(k), &v),
		                 0);
		/* the entry: its 16-byte header, the key, then the value */
		pmtx_off e = pmtx_off_of(f.r, v.p) - strlen(k) - 16;
		uint64_t *l = link_to(f, e), keep = *l;
		*l &= ~(0xfffull << 44);
		char msg[200];
		assert_int_equal(hmap_check(f.m, msg, sizeof msg),
		                 PMTX_E_CORRUPT);
		assert_non_null(strstr(msg, "filter"));
		assert_int_equal(pmtx_hmap_get(nullptr, f.m, k, strlen(k), &v),
		                 PMTX_E_NOT_FOUND);
		*l = keep;
		check(f, mm);
	}
	drop(f);
}

/* A header whose geometry no map can have (a shift of 64 bits or more, a
 * split at or past 2^log, fewer buckets than segment 0 holds) is refused
 * at open, as the rest of a corrupt header is: every operation trusts the
 * geometry of an open map (fuzz_cont_corrupt found a shift of 239 bits,
 * undefined behaviour, in bucket_of). */
void open_refuses_a_corrupt_geometry(void **)
{
	fixture f;
	make(f, PMTX_RT_UNDO);
	uint64_t *geom = (uint64_t *)((char *)pmtx_ptr(f.r, f.off) + 24);
	const uint64_t keep = *geom, bad[] = {~0ull, 63ull << 56, 1ull << 56,
	                                      2ull << 56 | 4};
	pmtx_hmap *m;
	for (uint64_t g : bad) {
		*geom = g;
		assert_int_equal(pmtx_hmap_open(f.r, f.off, nullptr, &m),
		                 PMTX_E_CORRUPT);
	}
	*geom = keep;
	assert_int_equal(pmtx_hmap_open(f.r, f.off, nullptr, &m), 0);
	pmtx_hmap_close(m);
	drop(f);
}

/* Writers on a locked map, each on keys of its own, in transactions:
 * every commit is there and the map is consistent. */
void concurrent_writers_on_stripes(void **)
{
	const pmtx_runtime rts[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
	                            PMTX_RT_REDO_ASYNC};
	for (pmtx_runtime rt : rts) {
		fixture f;
		make(f, rt, PMTX_HMAP_LOCKED, 16);
		const unsigned nthreads = 4, ops = tu_long_mode() ? 50000 : 3000;
		pthread_t th[nthreads];
		struct job {
			fixture *f;
			unsigned id, ops;
			model mm;
			int err;
		} jobs[nthreads];
		auto body = [](void *arg) -> void * {
			job *j = (job *)arg;
			rng g(100 + j->id);
			for (unsigned i = 0; i < j->ops && !j->err; i++) {
				pmtx_tx *tx;
				std::string k = std::to_string(j->id) + ":" +
				                std::to_string(g.below(400));
				std::string v = g.bytes(30);
				bool put = g.below(3) != 0;
				if ((j->err = pmtx_begin(j->f->r, PMTX_RT_DEFAULT,
				                         &tx)))
					break;
				int rc = put ? pmtx_hmap_put(tx, j->f->m, k.data(),
				                             k.size(), v.data(),
				                             v.size(), 0, nullptr)
				             : pmtx_hmap_del(tx, j->f->m, k.data(),
				                             k.size());
				if (rc && rc != PMTX_E_NOT_FOUND)
					j->err = rc;
				int crc = pmtx_commit(tx);
				if (crc)
					j->err = crc;
				if (put)
					j->mm[k] = v;
				else
					j->mm.erase(k);
			}
			return nullptr;
		};
		for (unsigned t = 0; t < nthreads; t++) {
			jobs[t].f = &f;
			jobs[t].id = t;
			jobs[t].ops = ops;
			jobs[t].err = 0;
			pthread_create(&th[t], nullptr, body, &jobs[t]);
		}
		model all;
		for (unsigned t = 0; t < nthreads; t++) {
			pthread_join(th[t], nullptr);
			assert_int_equal(jobs[t].err, 0);
			all.insert(jobs[t].mm.begin(), jobs[t].mm.end());
		}
		check(f, all);
		drop(f);
	}
}

/* One insert that does not split costs what a transaction of the same
 * writes costs, written by hand: an allocation of the entry's size filled
 * with naked stores and flushed, and two words in two other lines (the
 * bucket and the count). The counters are exact, so an extra write or
 * barrier of the map's shows. */
pmtx_counters by_hand(fixture &f, size_t entry)
{
	char *root = (char *)pmtx_root(f.r, nullptr);
	pmtx_tx *tx;
	pmtx_off off;
	tu_count_start();
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_alloc(tx, entry, &off), 0);
	char *p = (char *)pmtx_ptr(f.r, off);
	memset(p, 1, entry);
	pmtx_flush(f.r, p, entry);
	uint64_t v = off;
	assert_int_equal(pmtx_write(tx, root, &v, 8), 0);
	assert_int_equal(pmtx_write(tx, root + 128, &v, 8), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	return tu_count();
}

void an_insert_costs_only_its_writes(void **)
{
	const struct {
		pmtx_runtime rt;
		uint64_t barriers, flushes;
	} want[] = {
		{PMTX_RT_UNDO, 6, 12},
		{PMTX_RT_REDO, 3, 11},
		{PMTX_RT_REDO_ASYNC, 2, 13},
		{PMTX_RT_TWIN, 2, 6},
	};
	for (auto &w : want) {
		fixture f;
		make(f, w.rt, 0, 0, 64 << 20);
		uint64_t n = 0, i = 0;
		/* past the header's buckets, to where one more entry fits
		 * the load factor */
		while (n < 1000 || n + 1 > 2 * hmap_buckets(f.m)) {
			std::string k = "p" + std::to_string(i++);
			pmtx_hmap_put(nullptr, f.m, k.data(), k.size(), "v", 1,
			              0, nullptr);
			pmtx_hmap_len(nullptr, f.m, &n);
		}
		uint64_t b = hmap_buckets(f.m);
		std::string k = "fresh-key", v(39, 'v');
		pmtx_drain(f.r);
		tu_count_start();
		assert_int_equal(pmtx_hmap_put(nullptr, f.m, k.data(), k.size(),
		                               v.data(), v.size(), 0, nullptr),
		                 0);
		pmtx_counters c = tu_count();
		assert_int_equal(hmap_buckets(f.m), b);
		pmtx_drain(f.r);
		pmtx_counters h = by_hand(f, 16 + k.size() + v.size());
		assert_int_equal(c.barriers, h.barriers);
		assert_int_equal(c.flushes, h.flushes);
		assert_int_equal(c.barriers, w.barriers);
		assert_int_equal(c.flushes, w.flushes);
		drop(f);
	}
}

/* The blocks the map owns (hmap_walk), in order. */
std::set<pmtx_off> blocks_of(fixture &f)
{
	std::set<pmtx_off> out;
	auto add = [](pmtx_off off, void *arg) {
		static_cast<std::set<pmtx_off> *>(arg)->insert(off);
		return 0;
	};
	assert_int_equal(hmap_walk(f.m, add, &out), 0);
	return out;
}

void put_s(fixture &f, pmtx_tx *tx, const std::string &k,
           const std::string &v)
{
	assert_int_equal(pmtx_hmap_put(tx, f.m, k.data(), k.size(), v.data(),
	                               v.size(), 0, nullptr), 0);
}

std::string get_s(fixture &f, pmtx_tx *tx, const std::string &k)
{
	pmtx_bytes v;
	assert_int_equal(pmtx_hmap_get(tx, f.m, k.data(), k.size(), &v), 0);
	return str(v);
}

/* hmap.c H2: a value that fits its entry's block is written in place
 * (the map keeps its blocks), read back by the transaction that wrote it
 * under every runtime (under redo the bytes are in its write set: the
 * view is a copy, which outlives the commit), and rolled back by an
 * abort; a value that does not fit, or would leave too much of the
 * block unused, gets a fresh entry. */
void a_replace_that_fits_is_written_in_place(void **)
{
	for (pmtx_runtime rt : conttest::runtimes) {
		fixture f;
		make(f, rt);
		const std::string k = "key", a(40, 'a'), b(40, 'b'), c(33, 'c');
		put_s(f, nullptr, k, a);
		std::set<pmtx_off> blocks = blocks_of(f);
		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		put_s(f, tx, k, b);
		assert_true(get_s(f, tx, k) == b);
		put_s(f, tx, k, c);
		pmtx_bytes seen;
		assert_int_equal(pmtx_hmap_get(tx, f.m, k.data(), k.size(),
		                               &seen), 0);
		assert_true(str(seen) == c);
		uint64_t next;
		std::string scanned;
		auto take = [](const pmtx_bytes *, const pmtx_bytes *v,
		               void *arg) {
			*static_cast<std::string *>(arg) = str(*v);
			return 0;
		};
		assert_int_equal(pmtx_hmap_scan(tx, f.m, 0, 10, take, &scanned,
		                                &next), 0);
		assert_true(scanned == c);
		assert_int_equal(pmtx_abort(tx), 0);
		assert_true(get_s(f, nullptr, k) == a);

		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		put_s(f, tx, k, c);
		assert_int_equal(pmtx_hmap_get(tx, f.m, k.data(), k.size(),
		                               &seen), 0);
		assert_int_equal(pmtx_commit(tx), 0);
		assert_true(str(seen) == c); /* valid until the next write */
		assert_true(get_s(f, nullptr, k) == c);
		assert_true(blocks_of(f) == blocks);

		put_s(f, nullptr, k, std::string(300, 'd')); /* over 256 */
		assert_true(blocks_of(f) != blocks);
		blocks = blocks_of(f);
		put_s(f, nullptr, k, b); /* fits, 64+ bytes to spare */
		assert_true(blocks_of(f) != blocks);
		assert_true(get_s(f, nullptr, k) == b);
		check(f, model{{k, b}});
		drop(f);
	}
}

/* A replace in place costs what writing its bytes by hand in a
 * transaction costs, under every runtime: no allocation, no flush of a
 * fresh block, under redo no barrier before the commit record for one
 * (the counters, exact). */
void a_replace_in_place_costs_only_its_write(void **)
{
	for (pmtx_runtime rt : conttest::runtimes) {
		if (rt == PMTX_RT_AUTO)
			continue; /* chooses per call site: no by-hand twin */
		fixture f;
		make(f, rt);
		const std::string k = "key", a(40, 'a'), b(40, 'b');
		put_s(f, nullptr, k, a);
		pmtx_bytes v;
		assert_int_equal(pmtx_hmap_get(nullptr, f.m, k.data(), k.size(),
		                               &v), 0);
		void *at = (void *)v.p; /* the value in place */
		pmtx_drain(f.r);
		tu_count_start();
		put_s(f, nullptr, k, b);
		pmtx_counters c = tu_count();
		pmtx_drain(f.r);
		pmtx_tx *tx;
		tu_count_start();
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		assert_int_equal(pmtx_write(tx, at, a.data(), a.size()), 0);
		assert_int_equal(pmtx_commit(tx), 0);
		pmtx_counters h = tu_count();
		assert_int_equal(c.barriers, h.barriers);
		assert_int_equal(c.flushes, h.flushes);
		assert_true(get_s(f, nullptr, k) == a);
		drop(f);
	}
}

/* The stripe of every key of a map opened with S stripes, from the
 * bucket it is in: a scan asked for one entry stops after the first
 * bucket that holds one (next names the bucket after it), and bucket b
 * holds keys of stripe b mod S only (hmap.c H4). No writer may run. */
std::map<std::string, unsigned> stripes_of(fixture &f, unsigned S)
{
	std::map<std::string, unsigned> out;
	std::vector<std::string> got;
	auto take = [](const pmtx_bytes *k, const pmtx_bytes *, void *arg) {
		static_cast<std::vector<std::string> *>(arg)->push_back(str(*k));
		return 0;
	};
	uint64_t cursor = 0, next;
	do {
		got.clear();
		assert_int_equal(pmtx_hmap_scan(nullptr, f.m, cursor, 1, take,
		                                &got, &next), 0);
		uint64_t b = (next ? next : hmap_buckets(f.m)) - 1;
		for (auto &k : got)
			out[k] = (unsigned)(b & (S - 1));
		cursor = next;
	} while (cursor);
	return out;
}

/* cont.h C5: views are per thread. Under redo, thread A writes key k in
 * place (H2) and takes its view, a copy (the bytes in place stay the old
 * ones until commit), and holds k's stripe until its transaction ends.
 * Thread B then writes keys of the other stripes through the same
 * handle, in transactions that also take views of their own: a write
 * frees the writing thread's copies only, so A's view still reads what A
 * wrote, before A's commit and after. (B runs between pthread_create and
 * pthread_join, inside A's transaction.) */
void a_view_survives_another_threads_writes(void **)
{
	const pmtx_runtime rts[] = {PMTX_RT_REDO, PMTX_RT_REDO_ASYNC};
	for (pmtx_runtime rt : rts) {
		const unsigned S = 4;
		fixture f;
		make(f, rt, PMTX_HMAP_LOCKED, S);
		const std::string k = "k", a(40, 'a'), b(40, 'b'), c(40, 'c');
		model mm{{k, a}};
		for (unsigned i = 0; i < 32; i++)
			mm["other" + std::to_string(i)] = a;
		for (auto &kv : mm)
			put_s(f, nullptr, kv.first, kv.second);
		std::map<std::string, unsigned> stripe = stripes_of(f, S);
		assert_int_equal(stripe.size(), mm.size());
		struct job {
			fixture *f;
			std::vector<std::string> keys;
			std::string v;
			int err;
		} w{&f, {}, c, 0};
		for (auto &ks : stripe)
			if (ks.second != stripe[k])
				w.keys.push_back(ks.first);
		assert_true(w.keys.size() >= 4);
		pmtx_bytes in_place, seen;
		assert_int_equal(pmtx_hmap_get(nullptr, f.m, k.data(), k.size(),
		                               &in_place), 0);

		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		put_s(f, tx, k, b);
		assert_int_equal(pmtx_hmap_get(tx, f.m, k.data(), k.size(),
		                               &seen), 0);
		assert_true(seen.p != in_place.p); /* a copy (C5) */
		assert_true(str(seen) == b);
		auto body = [](void *arg) -> void * {
			job *j = (job *)arg;
			for (auto &key : j->keys) {
				pmtx_tx *t;
				pmtx_bytes v;
				if ((j->err = pmtx_begin(j->f->r, PMTX_RT_DEFAULT,
				                         &t)))
					break;
				j->err = pmtx_hmap_put(t, j->f->m, key.data(),
				                       key.size(), j->v.data(),
				                       j->v.size(), 0, nullptr);
				if (!j->err)
					j->err = pmtx_hmap_get(t, j->f->m, key.data(),
					                       key.size(), &v);
				if (!j->err && str(v) != j->v)
					j->err = -1;
				int crc = pmtx_commit(t);
				if (j->err || (j->err = crc))
					break;
			}
			return nullptr;
		};
		pthread_t th;
		assert_int_equal(pthread_create(&th, nullptr, body, &w), 0);
		assert_int_equal(pthread_join(th, nullptr), 0);
		assert_int_equal(w.err, 0);
		assert_true(str(seen) == b);
		assert_int_equal(pmtx_commit(tx), 0);
		assert_true(str(seen) == b); /* until A next writes the map */

		mm[k] = b;
		for (auto &key : w.keys)
			mm[key] = c;
		check(f, mm);
		drop(f);
	}
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(matches_a_model_under_every_runtime),
		cmocka_unit_test(grows_one_bucket_at_a_time),
		cmocka_unit_test(scan_returns_every_key_present_throughout),
		cmocka_unit_test(bad_input_changes_nothing),
		cmocka_unit_test(failure_after_a_write_aborts_the_transaction),
		cmocka_unit_test(two_maps_change_atomically),
		cmocka_unit_test(clear_empties_and_the_map_is_reusable),
		cmocka_unit_test(concurrent_writers_on_stripes),
		cmocka_unit_test(destroy_some_frees_everything_in_steps),
		cmocka_unit_test(prefetch_is_harmless_on_a_corrupt_map),
		cmocka_unit_test(checker_catches_a_filter_that_lacks_a_key),
		cmocka_unit_test(open_refuses_a_corrupt_geometry),
		cmocka_unit_test(an_insert_costs_only_its_writes),
		cmocka_unit_test(a_replace_that_fits_is_written_in_place),
		cmocka_unit_test(a_replace_in_place_costs_only_its_write),
		cmocka_unit_test(a_view_survives_another_threads_writes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
