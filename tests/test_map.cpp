/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_map.cpp - the ordered map (pmtx_containers.h, "Ordered map";
 * src/containers/map.c) against std::map, under every runtime, with its
 * checker (map_check: map_layout.h L1-L6) after every batch, and its
 * block walk (map_walk) against the heap's blocks.
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "conttest.hpp"

extern "C" {
#include "containers/map.h"
}

using conttest::rng;
using conttest::str;

namespace {

const size_t REGION = 64u << 20;
const unsigned KINDS[] = {PMTX_MAP_BYTES, PMTX_MAP_U64, PMTX_MAP_I64,
                          PMTX_MAP_SCORE};

/* The map's order, written again from the API's words (the model must
 * not share map.c's code). */
int key_order(unsigned kind, const std::string &a, const std::string &b)
{
	switch (kind) {
	case PMTX_MAP_U64: {
		uint64_t x, y;
		memcpy(&x, a.data(), 8);
		memcpy(&y, b.data(), 8);
		return (x > y) - (x < y);
	}
	case PMTX_MAP_I64: {
		int64_t x, y;
		memcpy(&x, a.data(), 8);
		memcpy(&y, b.data(), 8);
		return (x > y) - (x < y);
	}
	case PMTX_MAP_SCORE: {
		double x, y;
		memcpy(&x, a.data(), 8);
		memcpy(&y, b.data(), 8);
		if (x < y)
			return -1;
		if (x > y)
			return 1;
		int c = a.substr(8).compare(b.substr(8));
		return (c > 0) - (c < 0);
	}
	default: {
		int c = a.compare(b);
		return (c > 0) - (c < 0);
	}
	}
}

struct KeyLess {
	unsigned kind;
	bool operator()(const std::string &a, const std::string &b) const
	{
		return key_order(kind, a, b) < 0;
	}
};
typedef std::map<std::string, std::string, KeyLess> Model;

std::string word(uint64_t v)
{
	return std::string((const char *)&v, 8);
}

std::string score_key(double s, const std::string &member)
{
	return std::string((const char *)&s, 8) + member;
}

/* A key of the kind: from a small space (so that keys meet again), now
 * and then a long one or an extreme one. */
std::string rand_key(rng &g, unsigned kind, uint64_t space)
{
	switch (kind) {
	case PMTX_MAP_U64:
		if (g.below(50) == 0)
			return word(~0ull - g.below(3));
		return word(g.below(space) * 3);
	case PMTX_MAP_I64:
		if (g.below(50) == 0)
			return word(g.below(2) ? (uint64_t)INT64_MIN
			                       : (uint64_t)INT64_MAX);
		return word((uint64_t)((int64_t)g.below(space) -
		                       (int64_t)space / 2));
	case PMTX_MAP_SCORE: {
		static const double sc[] = {-1e300, -2.5, -0.0, 0.0, 1.0,
		                            1.5,    3.0,  7.25, 1e300};
		double s = g.below(3) ? sc[g.below(9)]
		                      : (double)(int64_t)g.below(space) / 4;
		return score_key(s, g.bytes(3));
	}
	default:
		if (g.below(40) == 0)
			return g.bytes(300, false);
		return g.bytes(g.below(4) ? 5 : 8);
	}
}

std::string rand_val(rng &g, bool u64)
{
	if (u64)
		return word(g.next());
	if (g.below(30) == 0)
		return g.bytes(2000, false);
	return g.bytes(20, false);
}

struct MapEnv {
	pmtx_region *r = nullptr;
	const char *path = nullptr;
	pmtx_runtime rt = PMTX_RT_UNDO;
	pmtx_off off = 0;
	pmtx_map *m = nullptr;
	unsigned kind = 0;
	uint64_t base_blocks = 0; /* user blocks that are not the map's */
};

uint64_t user_blocks(pmtx_region *r)
{
	pmtx_heap_stats hs;
	assert_int_equal(pmtx_heap_check(r, &hs), 0);
	return hs.allocated_blocks - hs.internal_blocks;
}

void map_new(MapEnv &e, unsigned kind)
{
	pmtx_tx *tx;
	uint64_t before = user_blocks(e.r);
	assert_int_equal(pmtx_begin(e.r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_map_create(tx, kind, &e.off), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	assert_int_equal(pmtx_map_open(e.r, e.off, nullptr, &e.m), 0);
	e.kind = kind & 0xffu;
	e.base_blocks = before;
}

void map_gone(MapEnv &e)
{
	pmtx_tx *tx;
	pmtx_map_close(e.m);
	e.m = nullptr;
	assert_int_equal(pmtx_begin(e.r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_map_destroy(tx, e.off), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	/* Every block the map had is freed. */
	assert_int_equal(user_blocks(e.r), e.base_blocks);
}

MapEnv env_new(pmtx_runtime rt, unsigned kind, size_t size = REGION)
{
	MapEnv e;
	e.rt = rt;
	e.r = conttest::region_for(rt, size, 64, &e.path);
	map_new(e, kind);
	return e;
}

void env_gone(MapEnv &e)
{
	if (e.m)
		map_gone(e);
	assert_int_equal(pmtx_close(e.r), 0);
}

/* The map's whole contents, walked with a cursor from the first key,
 * ranks checked on the way. */
std::vector<std::pair<std::string, std::string>> dump(pmtx_map *m,
                                                      pmtx_tx *tx = nullptr)
{
	std::vector<std::pair<std::string, std::string>> out;
	pmtx_map_cursor c;
	pmtx_bytes k, v;
	int rc = pmtx_map_seek(tx, m, PMTX_SEEK_FIRST, nullptr, 0, &c);
	while (rc == 0) {
		assert_int_equal(c.rank, out.size());
		assert_int_equal(pmtx_map_cursor_get(&c, &k, &v), 0);
		out.emplace_back(str(k), str(v));
		rc = pmtx_map_next(&c);
	}
	assert_int_equal(rc, PMTX_E_NOT_FOUND);
	return out;
}

/* The checker, the contents against the model, the blocks against the
 * heap (nothing leaked, nothing freed twice). */
struct map_stats check(MapEnv &e, const Model &model)
{
	char msg[256];
	struct map_stats st;
	int rc = map_check_stats(e.m, &st, msg, sizeof(msg));
	if (rc)
		fail_msg("map_check: %s", msg);
	assert_int_equal(st.entries, model.size());
	auto d = dump(e.m);
	assert_int_equal(d.size(), model.size());
	size_t i = 0;
	for (auto &kv : model) {
		assert_true(d[i].first == kv.first);
		assert_true(d[i].second == kv.second);
		i++;
	}
	assert_int_equal(user_blocks(e.r), e.base_blocks + st.blocks);
	return st;
}

/* ---- one random operation against the model ---- */

struct Ops {
	MapEnv &e;
	Model &model;
	rng &g;
	uint64_t space;
	bool u64;

	std::string key() { return rand_key(g, e.kind, space); }

	/* The model's rank of k: keys below (incl: at most) k. */
	uint64_t mrank(const std::string &k, bool incl)
	{
		auto it = incl ? model.upper_bound(k) : model.lower_bound(k);
		return (uint64_t)std::distance(model.begin(), it);
	}

	void put(pmtx_tx *tx)
	{
		std::string k = key(), v = rand_val(g, u64);
		unsigned fl = (unsigned)g.below(4) == 0 ? PMTX_HMAP_NX
		              : g.below(4) == 0         ? PMTX_HMAP_XX
		                                        : 0u;
		int existed = -1;
		int rc = pmtx_map_put(tx, e.m, k.data(), k.size(), v.data(),
		                      v.size(), fl, &existed);
		auto it = model.find(k);
		assert_int_equal(existed, it != model.end());
		if (it != model.end() && fl == PMTX_HMAP_NX) {
			assert_int_equal(rc, PMTX_E_EXISTS);
		} else if (it == model.end() && fl == PMTX_HMAP_XX) {
			assert_int_equal(rc, PMTX_E_NOT_FOUND);
		} else {
			assert_int_equal(rc, 0);
			if (it != model.end())
				it->second = v; /* the stored key stays */
			else
				model.emplace(k, v);
		}
	}

	void get(pmtx_tx *tx)
	{
		std::string k = pick();
		pmtx_bytes v;
		int rc = pmtx_map_get(tx, e.m, k.data(), k.size(), &v);
		auto it = model.find(k);
		if (it == model.end()) {
			assert_int_equal(rc, PMTX_E_NOT_FOUND);
		} else {
			assert_int_equal(rc, 0);
			assert_true(str(v) == it->second);
		}
	}

	/* A key of the model half of the time. */
	std::string pick()
	{
		if (model.empty() || g.below(2))
			return key();
		auto it = model.lower_bound(key());
		return (it == model.end() ? model.begin() : it)->first;
	}

	void del(pmtx_tx *tx)
	{
		std::string k = pick();
		int rc = pmtx_map_del(tx, e.m, k.data(), k.size());
		auto it = model.find(k);
		assert_int_equal(rc, it == model.end() ? PMTX_E_NOT_FOUND : 0);
		if (it != model.end())
			model.erase(it);
	}

	void rank(pmtx_tx *tx)
	{
		std::string k = pick();
		bool incl = g.below(2);
		uint64_t r = ~0ull;
		assert_int_equal(pmtx_map_rank(tx, e.m, k.data(), k.size(),
		                               incl ? PMTX_MAP_INCL : 0, &r),
		                 0);
		assert_int_equal(r, mrank(k, incl));
	}

	void count(pmtx_tx *tx)
	{
		std::string lo = pick(), hi = pick();
		bool nlo = g.below(5) == 0, nhi = g.below(5) == 0;
		unsigned fl = (unsigned)g.below(4) << 1;
		uint64_t n = ~0ull;
		assert_int_equal(pmtx_map_count(tx, e.m, nlo ? nullptr : lo.data(),
		                                lo.size(),
		                                nhi ? nullptr : hi.data(),
		                                hi.size(), fl, &n),
		                 0);
		uint64_t below = nlo ? 0 : mrank(lo, fl & PMTX_MAP_LO_EXCL);
		uint64_t upto = nhi ? model.size()
		                    : mrank(hi, !(fl & PMTX_MAP_HI_EXCL));
		assert_int_equal(n, upto > below ? upto - below : 0);
	}

	/* The model's answer to a seek: its position, or end(). */
	Model::iterator mseek(int how, const std::string &k)
	{
		switch (how) {
		case PMTX_SEEK_FIRST:
			return model.begin();
		case PMTX_SEEK_LAST:
			return model.empty() ? model.end() : std::prev(model.end());
		case PMTX_SEEK_GE:
			return model.lower_bound(k);
		case PMTX_SEEK_GT:
			return model.upper_bound(k);
		default: {
			auto it = how == PMTX_SEEK_LE ? model.upper_bound(k)
			                              : model.lower_bound(k);
			return it == model.begin() ? model.end() : std::prev(it);
		}
		}
	}

	void seek(pmtx_tx *tx)
	{
		std::string k = pick();
		int how = (int)g.below(6);
		pmtx_map_cursor c;
		int rc = pmtx_map_seek(tx, e.m, how, k.data(), k.size(), &c);
		walk(rc, c, mseek(how, k));
	}

	void seek_rank(pmtx_tx *tx)
	{
		uint64_t r = g.below(model.size() + 2);
		pmtx_map_cursor c;
		int rc = pmtx_map_seek_rank(tx, e.m, r, &c);
		auto it = model.begin();
		if (r < model.size())
			std::advance(it, (long)r);
		else
			it = model.end();
		walk(rc, c, it);
	}

	/* From a seek's result, a few steps either way, against the model. */
	void walk(int rc, pmtx_map_cursor &c, Model::iterator it)
	{
		if (it == model.end()) {
			assert_int_equal(rc, PMTX_E_NOT_FOUND);
			return;
		}
		assert_int_equal(rc, 0);
		bool up = g.below(2);
		uint64_t rank = (uint64_t)std::distance(model.begin(), it);
		for (unsigned s = 0, n = (unsigned)g.below(60); s <= n; s++) {
			pmtx_bytes k, v;
			assert_int_equal(pmtx_map_cursor_get(&c, &k, &v), 0);
			assert_true(str(k) == it->first);
			assert_true(str(v) == it->second);
			assert_int_equal(c.rank, rank);
			rc = up ? pmtx_map_next(&c) : pmtx_map_prev(&c);
			if (up)
				++it, rank++;
			if (!up && it == model.begin())
				it = model.end();
			else if (!up)
				--it, rank--;
			if (it == model.end()) {
				assert_int_equal(rc, PMTX_E_NOT_FOUND);
				return;
			}
			assert_int_equal(rc, 0);
		}
	}

	void len(pmtx_tx *tx)
	{
		uint64_t n = ~0ull;
		assert_int_equal(pmtx_map_len(tx, e.m, &n), 0);
		assert_int_equal(n, model.size());
	}

	void clear(pmtx_tx *tx)
	{
		assert_int_equal(pmtx_map_clear(tx, e.m), 0);
		model.clear();
	}

	/* A clear, one time in four it is chosen. */
	void clear_sometimes(pmtx_tx *tx)
	{
		if (g.below(4) == 0)
			clear(tx);
	}

	/* One operation, chosen by weight (each runs for a roll below its
	 * bound, out of 1000): writes weigh more than reads, so the map
	 * grows to the key space. */
	void any(pmtx_tx *tx)
	{
		using op_fn = void (Ops::*)(pmtx_tx *);
		static const std::pair<unsigned, op_fn> ops[] = {
			{400, &Ops::put},        {600, &Ops::del},
			{700, &Ops::get},        {780, &Ops::rank},
			{860, &Ops::count},      {930, &Ops::seek},
			{980, &Ops::seek_rank},  {999, &Ops::len},
			{1000, &Ops::clear_sometimes}};
		unsigned w = (unsigned)g.below(1000);
		for (const auto &[bound, op] : ops)
			if (w < bound)
				return (this->*op)(tx);
	}
};

/* ops operations on a map of the kind, some alone (tx NULL), some in
 * groups inside a caller's transaction (its tx or NULL, which joins),
 * one group in five aborted (the model rolls back too). */
void random_run(pmtx_runtime rt, unsigned kind, unsigned ops, uint64_t space,
                uint64_t seed)
{
	MapEnv e = env_new(rt, kind);
	Model model(KeyLess{kind & 0xffu});
	rng g(seed);
	Ops o{e, model, g, space, (kind & PMTX_MAP_VAL_U64) != 0};
	e.kind = kind & 0xffu;
	unsigned done = 0, since_check = 0;
	while (done < ops) {
		if (g.below(3)) {
			o.any(nullptr);
			done++;
			since_check++;
		} else {
			Model saved = model;
			pmtx_tx *tx;
			assert_int_equal(pmtx_begin(e.r, PMTX_RT_DEFAULT, &tx), 0);
			unsigned n = 1 + (unsigned)g.below(8);
			for (unsigned i = 0; i < n; i++)
				o.any(g.below(4) ? tx : nullptr);
			if (g.below(5) == 0) {
				assert_int_equal(pmtx_abort(tx), 0);
				model = saved;
			} else {
				assert_int_equal(pmtx_commit(tx), 0);
			}
			done += n;
			since_check += n;
		}
		if (since_check >= 400) {
			check(e, model);
			since_check = 0;
		}
	}
	check(e, model);
	env_gone(e);
}

/* Operations of a random run: a few thousand per runtime by default,
 * millions in long mode. */
unsigned ops_per_run(unsigned dflt)
{
	return tu_long_mode() ? dflt * 200 : dflt;
}

/* ======================================================================
 * Tests.
 * ==================================================================== */

/* Every key kind with either value kind, against std::map, under every
 * runtime: puts (plain, NX, XX), gets, deletes, ranks, counts with every
 * bound flag, seeks in every mode with steps either way, seeks by rank,
 * lengths and clears. */
void every_kind_agrees_with_std_map_under_every_runtime(void **)
{
	for (size_t ri = 0; ri < conttest::nruntimes; ri++)
		for (unsigned k : KINDS)
			for (unsigned vu : {0u, PMTX_MAP_VAL_U64}) {
				uint64_t seed = ri * 131 + k * 7 + (vu ? 1 : 0);
				random_run(conttest::runtimes[ri], k | vu,
				           ops_per_run(1500),
				           tu_long_mode() ? 5000 : 1500, seed);
			}
}

/* Enough keys for a tree of four levels, inserted in order (half-full
 * leaves: the most nodes), then deleted in random order down to an
 * empty root leaf: splits and merges at every level, the checker
 * after every batch. */
void splits_and_merges_reach_every_level(void **)
{
	const unsigned n = tu_long_mode() ? 200000 : 20000;
	for (size_t ri = 0; ri < conttest::nruntimes; ri++)
		for (unsigned kind :
		     {PMTX_MAP_U64 | PMTX_MAP_VAL_U64, (unsigned)PMTX_MAP_BYTES}) {
			pmtx_runtime rt = conttest::runtimes[ri];
			if (kind == PMTX_MAP_BYTES && ri % 2)
				continue; /* bytes: undo, redo-async, auto */
			MapEnv e = env_new(rt, kind);
			e.kind = kind & 0xffu;
			Model model(KeyLess{e.kind});
			std::vector<std::string> keys;
			for (unsigned i = 0; i < n; i++) {
				char b[16];
				snprintf(b, sizeof(b), "k%08u", i);
				keys.push_back(kind == PMTX_MAP_BYTES ? b
				                                      : word(i));
			}
			unsigned max_height = 0, batch = 500;
			for (unsigned i = 0; i < n; i += batch) {
				pmtx_tx *tx;
				assert_int_equal(pmtx_begin(e.r, PMTX_RT_DEFAULT, &tx),
				                 0);
				for (unsigned j = i; j < i + batch && j < n; j++) {
					std::string v = word(j);
					assert_int_equal(
					        pmtx_map_put(tx, e.m, keys[j].data(),
					                     keys[j].size(), v.data(), 8,
					                     0, nullptr),
					        0);
					model.emplace(keys[j], v);
				}
				assert_int_equal(pmtx_commit(tx), 0);
				if (i % (batch * 8) == 0 || i + batch >= n)
					max_height = std::max(max_height,
					                      check(e, model).height);
			}
			assert_true(max_height >= 4);
			rng g(ri);
			for (size_t i = keys.size(); i > 1; i--)
				std::swap(keys[i - 1], keys[g.below(i)]);
			for (unsigned i = 0; i < n; i++) {
				assert_int_equal(pmtx_map_del(nullptr, e.m,
				                              keys[i].data(),
				                              keys[i].size()),
				                 0);
				model.erase(keys[i]);
				if (i % 2000 == 0 || n - i < 50)
					check(e, model);
			}
			assert_int_equal(check(e, model).height, 1);
			env_gone(e);
		}
}

/* The pairs of a vector, one at a time, for pmtx_map_load. */
struct Source {
	const std::vector<std::pair<std::string, std::string>> *v;
	size_t i;
};

int source_next(void *arg, pmtx_bytes *k, pmtx_bytes *v)
{
	Source *s = (Source *)arg;
	if (s->i == s->v->size())
		return 0;
	const auto &p = (*s->v)[s->i++];
	k->p = p.first.data();
	k->n = p.first.size();
	v->p = p.second.data();
	v->n = p.second.size();
	return 1;
}

int load(MapEnv &e, pmtx_tx *tx,
         const std::vector<std::pair<std::string, std::string>> &in,
         unsigned fill)
{
	Source s{&in, 0};
	return pmtx_map_load(tx, e.m, source_next, &s, fill);
}

/* Bulk load: every size around a leaf's and a level's, every fill, the
 * checker and the contents after; then inserts and deletes into the
 * loaded tree. Unsorted or duplicate input, a map not empty and a fill
 * out of range are refused and change nothing. */
void bulk_load_builds_checked_trees_and_refuses_bad_input(void **)
{
	for (size_t ri = 0; ri < conttest::nruntimes; ri++) {
		pmtx_runtime rt = conttest::runtimes[ri];
		for (unsigned kind : {PMTX_MAP_U64 | PMTX_MAP_VAL_U64,
		                      (unsigned)PMTX_MAP_SCORE}) {
			MapEnv e = env_new(rt, kind);
			e.kind = kind & 0xffu;
			rng g(ri + kind);
			for (size_t n : {0, 1, 47, 48, 49, 1000, 1537, 12000}) {
				for (unsigned fill : {50u, 77u, 100u}) {
					Model model(KeyLess{e.kind});
					while (model.size() < n)
						model.emplace(rand_key(g, e.kind, 1u << 30),
						              rand_val(g, kind &
						                          PMTX_MAP_VAL_U64));
					std::vector<std::pair<std::string, std::string>>
					        in(model.begin(), model.end());
					assert_int_equal(load(e, nullptr, in, fill), 0);
					check(e, model);
					/* Not empty: refused (unless it is). */
					assert_int_equal(load(e, nullptr, in, fill),
					                 n ? PMTX_E_INVAL : 0);
					Ops o{e, model, g, 1u << 30,
					      (kind & PMTX_MAP_VAL_U64) != 0};
					for (unsigned i = 0; i < 300; i++)
						o.any(nullptr);
					check(e, model);
					assert_int_equal(pmtx_map_clear(nullptr, e.m), 0);
				}
			}
			/* Bad input: nothing written. */
			Model model(KeyLess{e.kind});
			while (model.size() < 500)
				model.emplace(rand_key(g, e.kind, 1u << 30),
				              word(model.size()));
			std::vector<std::pair<std::string, std::string>> in(
			        model.begin(), model.end());
			auto dup = in, unsorted = in;
			dup.insert(dup.begin() + 300, dup[299]);
			std::swap(unsorted[10], unsorted[400]);
			uint64_t blocks = user_blocks(e.r);
			assert_int_equal(load(e, nullptr, dup, 90), PMTX_E_INVAL);
			assert_int_equal(load(e, nullptr, unsorted, 90),
			                 PMTX_E_INVAL);
			assert_int_equal(load(e, nullptr, in, 49), PMTX_E_INVAL);
			assert_int_equal(load(e, nullptr, in, 101), PMTX_E_INVAL);
			assert_int_equal(user_blocks(e.r), blocks);
			check(e, Model(KeyLess{e.kind}));
			/* In a caller's transaction: refused, the transaction
			 * goes on; then a good load, aborted, leaves nothing. */
			pmtx_tx *tx;
			assert_int_equal(pmtx_begin(e.r, PMTX_RT_DEFAULT, &tx), 0);
			assert_int_equal(load(e, tx, unsorted, 90), PMTX_E_INVAL);
			assert_int_equal(load(e, tx, in, 90), 0);
			assert_int_equal(pmtx_abort(tx), 0);
			check(e, Model(KeyLess{e.kind}));
			env_gone(e);
		}
	}
}

/* A transaction that writes two maps (and a third value) commits both or
 * neither; an operation that fails after writing aborts the caller's
 * transaction with every write of it. */
void two_maps_change_together_or_not_at_all(void **)
{
	for (size_t ri = 0; ri < conttest::nruntimes; ri++) {
		pmtx_runtime rt = conttest::runtimes[ri];
		MapEnv a = env_new(rt, PMTX_MAP_U64 | PMTX_MAP_VAL_U64, 8u << 20);
		MapEnv b = a;
		map_new(b, PMTX_MAP_BYTES);
		Model ma(KeyLess{PMTX_MAP_U64}), mb(KeyLess{PMTX_MAP_BYTES});
		for (int round = 0; round < 6; round++) {
			pmtx_tx *tx;
			assert_int_equal(pmtx_begin(a.r, PMTX_RT_DEFAULT, &tx), 0);
			Model sa = ma, sb = mb;
			for (uint64_t i = 0; i < 100; i++) {
				std::string k = word(round * 1000 + i);
				std::string kb = "b" + std::to_string(round * 1000 + i);
				assert_int_equal(pmtx_map_put(tx, a.m, k.data(), 8,
				                              k.data(), 8, 0, nullptr),
				                 0);
				assert_int_equal(pmtx_map_put(tx, b.m, kb.data(),
				                              kb.size(), "v", 1, 0,
				                              nullptr),
				                 0);
				ma[k] = k;
				mb[kb] = "v";
			}
			/* A status before any write leaves the caller's
			 * transaction running. */
			std::string k0 = word(round * 1000);
			assert_int_equal(pmtx_map_put(tx, a.m, k0.data(), 8,
			                              k0.data(), 8, PMTX_HMAP_NX,
			                              nullptr),
			                 PMTX_E_EXISTS);
			assert_int_equal(pmtx_map_del(tx, b.m, "zz", 2),
			                 PMTX_E_NOT_FOUND);
			if (round % 2) {
				assert_int_equal(pmtx_abort(tx), 0);
				ma = sa;
				mb = sb;
			} else {
				assert_int_equal(pmtx_commit(tx), 0);
			}
			uint64_t na, nb;
			assert_int_equal(pmtx_map_len(nullptr, a.m, &na), 0);
			assert_int_equal(pmtx_map_len(nullptr, b.m, &nb), 0);
			assert_int_equal(na, ma.size());
			assert_int_equal(nb, mb.size());
		}
		/* Fill the region from one transaction until the heap is
		 * full: the failing put aborts the caller's transaction, and
		 * both maps are as the last commit left them. */
		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(a.r, PMTX_RT_DEFAULT, &tx), 0);
		std::string k = word(77777), big(100000, 'x');
		assert_int_equal(pmtx_map_put(tx, a.m, k.data(), 8, k.data(), 8,
		                              0, nullptr),
		                 0);
		int rc = 0;
		for (unsigned i = 0; rc == 0 && i < 1000; i++) {
			std::string kb = "big" + std::to_string(i);
			rc = pmtx_map_put(tx, b.m, kb.data(), kb.size(), big.data(),
			                  big.size(), 0, nullptr);
		}
		assert_int_equal(rc, PMTX_E_NOMEM);
		assert_int_equal(pmtx_commit(tx), PMTX_E_ABORTED);
		char msg[200];
		if (map_check(a.m, msg, sizeof(msg)) ||
		    map_check(b.m, msg, sizeof(msg)))
			fail_msg("%s", msg);
		assert_true(dump(a.m) == decltype(dump(a.m))(ma.begin(), ma.end()));
		assert_true(dump(b.m) == decltype(dump(b.m))(mb.begin(), mb.end()));
		pmtx_map_close(b.m);
		pmtx_map_close(a.m);
		a.m = nullptr;
		assert_int_equal(pmtx_close(a.r), 0);
	}
}

/* Every refused input returns its status and changes nothing: the
 * checker's counts, the contents and the heap are as before. */
void bad_input_changes_nothing(void **)
{
	for (unsigned kind : KINDS)
		for (unsigned vu : {0u, PMTX_MAP_VAL_U64}) {
			MapEnv e = env_new(PMTX_RT_UNDO, kind | vu, 8u << 20);
			Model model(KeyLess{kind});
			rng g(kind + vu);
			Ops o{e, model, g, 300, vu != 0};
			for (unsigned i = 0; i < 400; i++)
				o.put(nullptr);
			struct map_stats before = check(e, model);
			const char *p = "0123456789abcdef";
			size_t huge = PMTX_CONT_BYTES_MAX + 1;
			std::string k = model.begin()->first;
			pmtx_bytes v;
			uint64_t n;
			pmtx_map_cursor c;
			int vn = vu ? 8 : 3;
			assert_int_equal(pmtx_map_put(nullptr, e.m, p, huge, p, 8, 0,
			                              nullptr),
			                 PMTX_E_TOO_BIG);
			assert_int_equal(pmtx_map_put(nullptr, e.m, k.data(),
			                              k.size(), p, huge, 0, nullptr),
			                 PMTX_E_TOO_BIG);
			assert_int_equal(pmtx_map_put(nullptr, e.m, k.data(),
			                              k.size(), p, vn,
			                              PMTX_HMAP_NX | PMTX_HMAP_XX,
			                              nullptr),
			                 PMTX_E_INVAL);
			assert_int_equal(pmtx_map_put(nullptr, e.m, k.data(),
			                              k.size(), p, vn, 8, nullptr),
			                 PMTX_E_INVAL);
			assert_int_equal(pmtx_map_put(nullptr, e.m, nullptr, 3, p,
			                              vn, 0, nullptr),
			                 PMTX_E_INVAL);
			if (vu)
				assert_int_equal(pmtx_map_put(nullptr, e.m, k.data(),
				                              k.size(), p, 7, 0,
				                              nullptr),
				                 PMTX_E_INVAL);
			if (kind != PMTX_MAP_BYTES) {
				/* U64, I64: 8 bytes; SCORE: at least 8. */
				assert_int_equal(pmtx_map_put(nullptr, e.m, p, 7, p,
				                              vn, 0, nullptr),
				                 PMTX_E_INVAL);
				assert_int_equal(pmtx_map_get(nullptr, e.m, p, 7, &v),
				                 PMTX_E_INVAL);
				assert_int_equal(pmtx_map_del(nullptr, e.m, p, 0),
				                 PMTX_E_INVAL);
				assert_int_equal(pmtx_map_rank(nullptr, e.m, p, 9, 0,
				                               &n),
				                 kind == PMTX_MAP_SCORE ? 0
				                                        : PMTX_E_INVAL);
			}
			if (kind == PMTX_MAP_SCORE) {
				std::string nan = score_key(NAN, "m");
				assert_int_equal(pmtx_map_put(nullptr, e.m, nan.data(),
				                              nan.size(), p, vn, 0,
				                              nullptr),
				                 PMTX_E_INVAL);
				assert_int_equal(pmtx_map_count(nullptr, e.m,
				                                nan.data(), nan.size(),
				                                nullptr, 0, 0, &n),
				                 PMTX_E_INVAL);
			}
			assert_int_equal(pmtx_map_rank(nullptr, e.m, k.data(),
			                               k.size(), 2, &n),
			                 PMTX_E_INVAL);
			assert_int_equal(pmtx_map_count(nullptr, e.m, nullptr, 0,
			                                nullptr, 0, PMTX_MAP_INCL,
			                                &n),
			                 PMTX_E_INVAL);
			assert_int_equal(pmtx_map_seek(nullptr, e.m, 6, k.data(),
			                               k.size(), &c),
			                 PMTX_E_INVAL);
			assert_int_equal(pmtx_map_seek(nullptr, e.m, PMTX_SEEK_GE,
			                               p, huge, &c),
			                 PMTX_E_TOO_BIG);
			/* In a caller's transaction: the same, and it can still
			 * commit what it wrote before. */
			pmtx_tx *tx;
			assert_int_equal(pmtx_begin(e.r, PMTX_RT_DEFAULT, &tx), 0);
			assert_int_equal(pmtx_map_put(tx, e.m, p, huge, p, 8, 0,
			                              nullptr),
			                 PMTX_E_TOO_BIG);
			assert_int_equal(pmtx_commit(tx), 0);
			struct map_stats after = check(e, model);
			assert_memory_equal(&before, &after, sizeof(before));
			env_gone(e);
		}
}

/* Only a map header opens as a map: anything else is not a container
 * (or, for another major version, a bad version); a map's handle runs
 * no operation under copy-on-write. */
void only_a_map_opens_and_cow_is_refused(void **)
{
	MapEnv e = env_new(PMTX_RT_UNDO, PMTX_MAP_U64 | PMTX_MAP_VAL_U64,
	                   8u << 20);
	pmtx_map *m;
	pmtx_tx *tx;
	pmtx_off blk, fake;
	assert_int_equal(pmtx_begin(e.r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_zalloc(tx, 256, &blk), 0);
	assert_int_equal(pmtx_zalloc(tx, 64, &fake), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	e.base_blocks += 2;
	assert_int_equal(pmtx_map_open(e.r, 0, nullptr, &m),
	                 PMTX_E_NOT_CONTAINER);
	assert_int_equal(pmtx_map_open(e.r, blk, nullptr, &m),
	                 PMTX_E_NOT_CONTAINER);
	assert_int_equal(pmtx_map_open(e.r, e.off + 8, nullptr, &m),
	                 PMTX_E_NOT_CONTAINER);
	assert_int_equal(pmtx_map_open(e.r, pmtx_region_size(e.r) + 64,
	                               nullptr, &m),
	                 PMTX_E_NOT_CONTAINER);
	/* A map's header with another major version. */
	unsigned char *f = (unsigned char *)pmtx_ptr(e.r, fake);
	memcpy(f, pmtx_ptr(e.r, e.off), 48);
	uint16_t major = PMTX_CONT_FORMAT_MAJOR + 1;
	memcpy(f + 4, &major, 2);
	pmtx_persist(e.r, f, 48);
	assert_int_equal(pmtx_map_open(e.r, fake, nullptr, &m),
	                 PMTX_E_BAD_VERSION);
	/* A list's magic is not a map's. */
	uint32_t list_magic = 0x504d4c53u;
	memcpy(f, &list_magic, 4);
	pmtx_persist(e.r, f, 4);
	assert_int_equal(pmtx_map_open(e.r, fake, nullptr, &m),
	                 PMTX_E_NOT_CONTAINER);
	assert_int_equal(pmtx_begin(e.r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_map_destroy(tx, blk), PMTX_E_NOT_CONTAINER);
	assert_int_equal(pmtx_commit(tx), 0);
	/* Copy-on-write: every operation refused. */
	uint64_t x = 5;
	pmtx_bytes v;
	pmtx_off off;
	assert_int_equal(pmtx_begin(e.r, PMTX_RT_COW, &tx), 0);
	assert_int_equal(pmtx_map_put(tx, e.m, &x, 8, &x, 8, 0, nullptr),
	                 PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_map_get(tx, e.m, &x, 8, &v), PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_map_create(tx, PMTX_MAP_U64, &off),
	                 PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_commit(tx), 0);
	pmtx_cont_options co;
	pmtx_cont_options_init(&co);
	co.runtime = PMTX_RT_COW;
	assert_int_equal(pmtx_map_open(e.r, e.off, &co, &m), 0);
	assert_int_equal(pmtx_map_put(nullptr, m, &x, 8, &x, 8, 0, nullptr),
	                 PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_map_clear(nullptr, m), PMTX_E_UNSUPPORTED);
	pmtx_map_close(m);
	/* No transaction to create a map in. */
	assert_int_equal(pmtx_map_create(nullptr, PMTX_MAP_U64, &off),
	                 PMTX_E_NO_TX);
	assert_int_equal(pmtx_begin(e.r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_map_create(tx, 9, &off), PMTX_E_INVAL);
	assert_int_equal(pmtx_map_create(tx, PMTX_MAP_U64 | 0x200, &off),
	                 PMTX_E_INVAL);
	assert_int_equal(pmtx_commit(tx), 0);
	check(e, Model(KeyLess{PMTX_MAP_U64}));
	e.base_blocks -= 2;
	pmtx_map_close(e.m);
	e.m = nullptr;
	assert_int_equal(pmtx_close(e.r), 0);
}

/* A map written under every runtime reads back whole after the region is
 * closed and opened again. */
void reopened_region_holds_the_same_map(void **)
{
	for (size_t ri = 0; ri < conttest::nruntimes; ri++) {
		pmtx_runtime rt = conttest::runtimes[ri];
		for (unsigned kind : KINDS) {
			MapEnv e = env_new(rt, kind, 16u << 20);
			Model model(KeyLess{kind});
			rng g(ri * 10 + kind);
			Ops o{e, model, g, 2000, false};
			for (unsigned i = 0; i < 1500; i++)
				o.put(nullptr);
			for (unsigned i = 0; i < 300; i++)
				o.del(nullptr);
			pmtx_off *root = (pmtx_off *)pmtx_root(e.r, nullptr);
			pmtx_tx *tx;
			assert_int_equal(pmtx_begin(e.r, PMTX_RT_DEFAULT, &tx), 0);
			assert_int_equal(pmtx_write(tx, root, &e.off, 8), 0);
			assert_int_equal(pmtx_commit(tx), 0);
			struct map_stats st = check(e, model);
			pmtx_map_close(e.m);
			assert_int_equal(pmtx_close(e.r), 0);
			e.r = tu_open(e.path);
			root = (pmtx_off *)pmtx_root(e.r, nullptr);
			assert_int_equal(pmtx_map_open(e.r, *root, nullptr, &e.m), 0);
			struct map_stats st2 = check(e, model);
			assert_memory_equal(&st, &st2, sizeof(st));
			env_gone(e);
		}
	}
}

/* Lines written back and barriers of one operation (tx NULL). */
using Cost = conttest::cost;
using conttest::cost_of;

/* What one operation writes back, by runtime: an insert into a leaf with
 * room writes its entry's line and the leaf's head (its order line and
 * its probe line), and one count word per inner level (map.c M1, M2); a
 * delete, the head's two lines and the counts; a new value (VAL_U64),
 * its word. Twin writes back exactly those
 * lines (its seal and back copy go by non-temporal stores); the logging
 * runtimes add their logs' lines, the same for every operation of a
 * kind. */
void an_insert_writes_back_its_lines_and_one_per_level(void **)
{
	for (size_t ri = 0; ri < conttest::nruntimes; ri++) {
		pmtx_runtime rt = conttest::runtimes[ri];
		MapEnv e = env_new(rt, PMTX_MAP_U64 | PMTX_MAP_VAL_U64);
		uint64_t n = 0;
		for (unsigned h : {1u, 2u, 3u}) {
			/* Keys 0, 10, 20...: leaves of 24 or 25 (splits in
			 * order), 1, 3 or 80 of them. */
			uint64_t upto = h == 1 ? 10 : h == 2 ? 100 : 2000;
			for (; n < upto; n++) {
				uint64_t k = n * 10;
				assert_int_equal(pmtx_map_put(nullptr, e.m, &k, 8,
				                              &k, 8, 0, nullptr),
				                 0);
			}
			struct map_stats st;
			assert_int_equal(map_check_stats(e.m, &st, nullptr, 0), 0);
			assert_int_equal(st.height, h);
			pmtx_drain(e.r);
			Cost first[3];
			for (unsigned rep = 0; rep < 4; rep++) {
				uint64_t k = (rep * 7 + 3) * 10 + 1; /* a leaf with room */
				Cost ins = cost_of([&] {
					assert_int_equal(pmtx_map_put(nullptr, e.m, &k, 8,
					                              &k, 8, 0, nullptr),
					                 0);
				});
				Cost val = cost_of([&] {
					assert_int_equal(pmtx_map_put(nullptr, e.m, &k, 8,
					                              &n, 8, 0, nullptr),
					                 0);
				});
				Cost del = cost_of([&] {
					assert_int_equal(pmtx_map_del(nullptr, e.m, &k, 8),
					                 0);
				});
				if (rep == 0) {
					printf("%-10s height %u: insert %s, new value "
					       "%s, delete %s\n",
					       pmtx_runtime_name(rt), h,
					       ins.text().c_str(), val.text().c_str(),
					       del.text().c_str());
					first[0] = ins, first[1] = val, first[2] = del;
				}
				if (rt == PMTX_RT_TWIN) {
					assert_true(ins == (Cost{2 + h, 2}));
					assert_true(val == (Cost{1, 2}));
					assert_true(del == (Cost{1 + h, 2}));
				} else if (rt == PMTX_RT_UNDO) {
					/* A logged range (a barrier) per written
					 * line, then commit's two. */
					assert_int_equal(ins.barriers, h + 3);
					assert_int_equal(val.barriers, 3);
					assert_int_equal(del.barriers, h + 2);
				} else if (rt != PMTX_RT_AUTO) {
					assert_int_equal(ins.barriers,
					                 rt == PMTX_RT_REDO ? 2 : 1);
				}
				if (rt != PMTX_RT_AUTO) { /* the same every time */
					assert_true(ins == first[0]);
					assert_true(val == first[1]);
					assert_true(del == first[2]);
				}
			}
		}
		env_gone(e);
	}
}

/* The on-media offsets of map_layout.h, written again here (the
 * layout header is C only). */
enum {
	HDR_ROOT = 16, HDR_HEIGHT = 24, HDR_FIRST = 32, HDR_LAST = 40,
	LEAF_ORDER = 0, LEAF_RESERVED = 47, LEAF_COUNT = 52, LEAF_USED = 56,
	LEAF_FP = 64, LEAF_E = 112, LEAF_NEXT = 864, LEAF_PREV = 872,
	IN_N = 52, IN_KEY = 56, IN_CHILD = 304, IN_CNT = 560,
};

template <typename T> T at(pmtx_region *r, pmtx_off off, size_t field)
{
	T v;
	memcpy(&v, (char *)pmtx_ptr(r, off) + field, sizeof(v));
	return v;
}

template <typename T>
void plant(pmtx_region *r, pmtx_off off, size_t field, T v)
{
	memcpy((char *)pmtx_ptr(r, off) + field, &v, sizeof(v));
}

/* Read operations on a map that may be corrupt: any status but a crash;
 * how many of them said PMTX_E_CORRUPT. */
unsigned read_all(MapEnv &e, const Model &model, rng &g)
{
	unsigned corrupt = 0;
	auto note = [&](int rc) {
		assert_true(rc == 0 || rc == PMTX_E_NOT_FOUND ||
		            rc == PMTX_E_CORRUPT);
		corrupt += rc == PMTX_E_CORRUPT;
	};
	for (auto &kv : model) { /* every path from the root */
		pmtx_bytes v;
		note(pmtx_map_get(nullptr, e.m, kv.first.data(),
		                  kv.first.size(), &v));
	}
	for (unsigned i = 0; i < 40; i++) {
		std::string k = rand_key(g, e.kind, 3000);
		if (i % 2 && !model.empty())
			k = std::next(model.begin(),
			              (long)g.below(model.size()))->first;
		pmtx_bytes v;
		uint64_t n;
		pmtx_map_cursor c;
		note(pmtx_map_get(nullptr, e.m, k.data(), k.size(), &v));
		note(pmtx_map_rank(nullptr, e.m, k.data(), k.size(), 0, &n));
		note(pmtx_map_count(nullptr, e.m, k.data(), k.size(), nullptr, 0,
		                    0, &n));
		note(pmtx_map_len(nullptr, e.m, &n));
		int rc = pmtx_map_seek(nullptr, e.m, (int)(i % 6), k.data(),
		                       k.size(), &c);
		if (i % 7 == 0)
			rc = pmtx_map_seek_rank(nullptr, e.m, g.below(3000), &c);
		note(rc);
		for (unsigned s = 0; rc == 0 && s < model.size() + 10; s++) {
			pmtx_bytes kk;
			note(pmtx_map_cursor_get(&c, &kk, &v));
			rc = i % 2 ? pmtx_map_next(&c) : pmtx_map_prev(&c);
			note(rc);
		}
	}
	return corrupt;
}

/* Writes on a map that may be corrupt, in a transaction then aborted
 * (undo puts every byte back): any status but a crash. */
void write_all(MapEnv &e, const Model &model, rng &g)
{
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(e.r, PMTX_RT_DEFAULT, &tx), 0);
	int rc = 0;
	for (unsigned i = 0; i < 200 && rc != PMTX_E_CORRUPT; i++) {
		std::string k = rand_key(g, e.kind, 3000);
		if (i % 2 && !model.empty())
			k = std::next(model.begin(),
			              (long)g.below(model.size()))->first;
		rc = i % 3 ? pmtx_map_put(tx, e.m, k.data(), k.size(), "v", 1,
		                          0, nullptr)
		           : pmtx_map_del(tx, e.m, k.data(), k.size());
		assert_true(rc == 0 || rc == PMTX_E_NOT_FOUND ||
		            rc == PMTX_E_CORRUPT);
	}
	/* (A failed operation that had written aborted it already.) */
	assert_int_equal(pmtx_abort(tx), 0);
	assert_null(pmtx_tx_current());
}

/* One planted violation: the checker reports it, operations do not
 * crash, and the map is whole again once the bytes are put back. */
struct Planter {
	MapEnv &e;
	const Model &model;
	rng &g;
	unsigned reported = 0, read_corrupt = 0;

	template <typename T>
	void run(const char *what, pmtx_off off, size_t field, T bad,
	         bool reads_see_it = false)
	{
		T good = at<T>(e.r, off, field);
		plant(e.r, off, field, bad);
		char msg[256] = "";
		int rc = map_check(e.m, msg, sizeof(msg));
		if (rc != PMTX_E_CORRUPT)
			fail_msg("planted %s: the checker said %d", what, rc);
		assert_true(msg[0] != 0);
		reported++;
		unsigned c = read_all(e, model, g);
		if (reads_see_it && !c)
			fail_msg("planted %s: no read reported it", what);
		read_corrupt += c > 0;
		write_all(e, model, g);
		plant(e.r, off, field, good);
		if (map_check(e.m, msg, sizeof(msg)))
			fail_msg("after %s was put back: %s", what, msg);
	}
};

/* The checker catches each planted violation of L1-L6 (a checker never
 * shown to catch a bug is not one), and the operations meet corruption
 * with PMTX_E_CORRUPT or a wrong answer, never a crash. */
void checker_catches_each_planted_violation(void **)
{
	for (unsigned kind : {(unsigned)PMTX_MAP_U64, (unsigned)PMTX_MAP_BYTES}) {
		MapEnv e = env_new(PMTX_RT_UNDO, kind, 16u << 20);
		Model model(KeyLess{kind});
		rng g(kind);
		Ops o{e, model, g, 3000, false};
		while (model.size() < 2000)
			o.put(nullptr);
		assert_int_equal(check(e, model).height, 3);
		pmtx_region *r = e.r;
		pmtx_off h = e.off;
		pmtx_off root = at<uint64_t>(r, h, HDR_ROOT);
		pmtx_off mid = at<uint64_t>(r, root, IN_CHILD + 8);
		pmtx_off leaf = at<uint64_t>(r, mid, IN_CHILD + 8);
		pmtx_off first = at<uint64_t>(r, h, HDR_FIRST);
		uint8_t count = at<uint8_t>(r, leaf, LEAF_COUNT);
		uint8_t o0 = at<uint8_t>(r, leaf, LEAF_ORDER);
		uint8_t o1 = at<uint8_t>(r, leaf, LEAF_ORDER + 1);
		Planter p{e, model, g};
		p.run("a leaf count over its slots", leaf, LEAF_COUNT,
		      (uint8_t)200, true);
		p.run("a leaf count one more", leaf, LEAF_COUNT,
		      (uint8_t)(count + 1));
		p.run("a slot out of order", leaf, LEAF_ORDER,
		      (uint16_t)(o1 | o0 << 8));
		p.run("an order naming no slot", leaf, LEAF_ORDER,
		      (uint8_t)250, true);
		p.run("a bitmap bit cleared", leaf, LEAF_USED,
		      at<uint64_t>(r, leaf, LEAF_USED) & ~(1ull << o0));
		p.run("a subtree count one more", root, IN_CNT + 8,
		      at<uint64_t>(r, root, IN_CNT + 8) + 1);
		p.run("a separator above its right subtree", root, IN_KEY,
		      at<uint64_t>(r, root, IN_KEY + 8));
		p.run("an inner node with too many children", mid, IN_N,
		      (uint32_t)40, true);
		p.run("a child that is no node", mid, IN_CHILD + 16,
		      (uint64_t)pmtx_region_size(r) + 4096, true);
		p.run("a child off alignment", mid, IN_CHILD + 16,
		      at<uint64_t>(r, mid, IN_CHILD + 16) + 8, true);
		p.run("a child twice", mid, IN_CHILD + 16,
		      at<uint64_t>(r, mid, IN_CHILD + 8));
		p.run("a broken prev link", leaf, LEAF_PREV, (uint64_t)0);
		p.run("a broken next link", first, LEAF_NEXT, (uint64_t)leaf);
		p.run("the header's height one more", h, HDR_HEIGHT,
		      (uint32_t)4, true);
		p.run("the header's height beyond the greatest", h, HDR_HEIGHT,
		      (uint32_t)1000, true);
		p.run("the header's last not the last leaf", h, HDR_LAST,
		      (uint64_t)first);
		p.run("a leaf as the root", h, HDR_ROOT, (uint64_t)leaf, true);
		p.run("a reserved byte set", leaf, LEAF_RESERVED, (uint8_t)1);
		p.run("a fingerprint that is not its key's", leaf, LEAF_FP + o0,
		      (uint8_t)(at<uint8_t>(r, leaf, LEAF_FP + o0) ^ 1));
		if (kind == PMTX_MAP_BYTES) {
			unsigned s0 = at<uint8_t>(r, leaf, LEAF_ORDER);
			p.run("a key item outside the region", leaf,
			      LEAF_E + 16 * s0,
			      (uint64_t)pmtx_region_size(r) + 4096, true);
			p.run("a key item that is no heap block", leaf,
			      LEAF_E + 16 * s0, (uint64_t)h + 16);
			pmtx_off it = at<uint64_t>(r, leaf, LEAF_E + 16 * s0);
			p.run("a key item longer than its block", it, 0,
			      (uint32_t)5000);
			p.run("a separator item twice", root, IN_KEY + 8,
			      at<uint64_t>(r, root, IN_KEY));
		}
		/* A leaf under a quarter (L5): the leaf keeps its first 5
		 * entries, and the counts above say so. */
		uint64_t rc1 = at<uint64_t>(r, root, IN_CNT + 8);
		uint64_t mc1 = at<uint64_t>(r, mid, IN_CNT + 8);
		uint64_t used0 = at<uint64_t>(r, leaf, LEAF_USED), used = 0;
		for (unsigned i = 0; i < 5; i++)
			used |= 1ull << at<uint8_t>(r, leaf, LEAF_ORDER + i);
		plant(r, root, IN_CNT + 8, rc1 - (count - 5));
		plant(r, mid, IN_CNT + 8, mc1 - (count - 5));
		plant(r, leaf, LEAF_USED, used);
		plant(r, leaf, LEAF_COUNT, (uint8_t)5);
		char msg[256];
		assert_int_equal(map_check(e.m, msg, sizeof(msg)), PMTX_E_CORRUPT);
		assert_non_null(strstr(msg, "holds 5 entries"));
		read_all(e, model, g);
		plant(r, root, IN_CNT + 8, rc1);
		plant(r, mid, IN_CNT + 8, mc1);
		plant(r, leaf, LEAF_USED, used0);
		plant(r, leaf, LEAF_COUNT, count);
		check(e, model);
		printf("%s: %u violations reported, %u met by reads\n",
		       kind == PMTX_MAP_U64 ? "u64" : "bytes", p.reported,
		       p.read_corrupt);
		env_gone(e);
	}
}

/* ---- the block walk (map_walk) ---- */

int push_off(pmtx_off off, void *arg)
{
	tu_offs_push(static_cast<tu_offs *>(arg), off);
	return 0;
}

/* Stops the walk with 7 at its arg'th block. */
int stop_at(pmtx_off, void *arg)
{
	return --*static_cast<int *>(arg) == 0 ? 7 : 0;
}

/* A word of the map set to bad: map_walk refuses the map before it
 * reports any block; then the word is put back. */
template <typename T>
void walk_refuses(MapEnv &e, const char *what, pmtx_off off, size_t field,
                  T bad)
{
	T good = at<T>(e.r, off, field);
	plant(e.r, off, field, bad);
	tu_offs used = {nullptr, 0, 0};
	int rc = map_walk(e.m, push_off, &used);
	if (rc != PMTX_E_CORRUPT || used.n)
		fail_msg("planted %s: map_walk said %d after %zu blocks", what,
		         rc, used.n);
	plant(e.r, off, field, good);
}

/* Plant what the walk must refuse in a map of height 3 (undo: the bytes
 * in place are the map). */
void walk_refuses_planted(MapEnv &e, unsigned flags)
{
	pmtx_region *r = e.r;
	pmtx_off h = e.off;
	pmtx_off root = at<uint64_t>(r, h, HDR_ROOT);
	pmtx_off mid = at<uint64_t>(r, root, IN_CHILD + 8);
	pmtx_off leaf = at<uint64_t>(r, mid, IN_CHILD + 8);
	walk_refuses(e, "a child twice", mid, IN_CHILD + 16,
	             at<uint64_t>(r, mid, IN_CHILD + 8));
	walk_refuses(e, "a child outside the region", mid, IN_CHILD + 16,
	             (uint64_t)pmtx_region_size(r) + 4096);
	walk_refuses(e, "a leaf as the root", h, HDR_ROOT, (uint64_t)leaf);
	walk_refuses(e, "a height beyond the greatest", h, HDR_HEIGHT,
	             (uint32_t)1000);
	walk_refuses(e, "a leaf count over its slots", leaf, LEAF_COUNT,
	             (uint8_t)200);
	unsigned s0 = at<uint8_t>(r, leaf, LEAF_ORDER);
	if (e.kind == PMTX_MAP_BYTES || e.kind == PMTX_MAP_SCORE) {
		walk_refuses(e, "a key item outside the region", leaf,
		             LEAF_E + 16 * s0,
		             (uint64_t)pmtx_region_size(r) + 4096);
		walk_refuses(e, "a separator item twice", root, IN_KEY + 8,
		             at<uint64_t>(r, root, IN_KEY));
	} else if (!(flags & PMTX_MAP_VAL_U64)) {
		uint8_t count = at<uint8_t>(r, leaf, LEAF_COUNT);
		pmtx_off val = 0;
		for (unsigned i = 0; !val && i < count; i++)
			val = at<uint64_t>(r, leaf, LEAF_E + 8 + 16 *
			                   at<uint8_t>(r, leaf, LEAF_ORDER + i));
		assert_true(val != 0);
		walk_refuses(e, "a value item that holds a key", val, 0,
		             (uint32_t)1);
		walk_refuses(e, "a value item outside the region", leaf,
		             LEAF_E + 8 + 16 * s0,
		             (uint64_t)pmtx_region_size(r) + 4096);
	}
}

/* map_walk reports every block of a map of three levels once (header,
 * inner nodes, leaves, key items, value items, separators): they are
 * exactly the heap's blocks, as many as the checker counts, under every
 * runtime and key kind, with byte values and with VAL_U64. It stops at
 * fn's first nonzero value, refuses a tree that does not check, and
 * once the map is destroyed the heap is empty. */
void walk_reports_every_block_of_the_map_once(void **)
{
	const struct {
		pmtx_runtime rt;
		unsigned flags;
	} cases[] = {
		{PMTX_RT_UNDO, PMTX_MAP_BYTES},
		{PMTX_RT_UNDO, PMTX_MAP_U64},
		{PMTX_RT_UNDO, PMTX_MAP_I64 | PMTX_MAP_VAL_U64},
		{PMTX_RT_UNDO, PMTX_MAP_SCORE},
		{PMTX_RT_REDO, PMTX_MAP_I64},
		{PMTX_RT_REDO_ASYNC, PMTX_MAP_SCORE},
		{PMTX_RT_TWIN, PMTX_MAP_BYTES},
		{PMTX_RT_AUTO, PMTX_MAP_U64},
	};
	for (const auto &c : cases) {
		MapEnv e = env_new(c.rt, c.flags);
		Model model(KeyLess{e.kind});
		rng g(c.flags + 17 * c.rt);
		Ops o{e, model, g, 100000, (c.flags & PMTX_MAP_VAL_U64) != 0};
		while (model.size() < 3000)
			o.put(nullptr);
		for (unsigned i = 0; i < 500; i++)
			o.del(nullptr);
		assert_int_equal(pmtx_drain(e.r), 0); /* redo-async applies */
		struct map_stats st = check(e, model);
		assert_int_equal(st.height, 3);
		tu_offs used = {nullptr, 0, 0};
		assert_int_equal(map_walk(e.m, push_off, &used), 0);
		assert_int_equal(used.n, st.blocks);
		assert_true(st.items > 0 || (c.flags & PMTX_MAP_VAL_U64));
		tu_assert_heap_blocks(e.r, &used, "the map walked");
		free(used.v);

		int left = 5;
		assert_int_equal(map_walk(e.m, stop_at, &left), 7);
		assert_int_equal(left, 0);
		if (c.rt == PMTX_RT_UNDO)
			walk_refuses_planted(e, c.flags);
		check(e, model);

		map_gone(e);
		assert_int_equal(pmtx_drain(e.r), 0);
		tu_offs none = {nullptr, 0, 0};
		tu_assert_heap_blocks(e.r, &none, "the map destroyed");
		env_gone(e);
	}
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_kind_agrees_with_std_map_under_every_runtime),
		cmocka_unit_test(splits_and_merges_reach_every_level),
		cmocka_unit_test(bulk_load_builds_checked_trees_and_refuses_bad_input),
		cmocka_unit_test(two_maps_change_together_or_not_at_all),
		cmocka_unit_test(bad_input_changes_nothing),
		cmocka_unit_test(only_a_map_opens_and_cow_is_refused),
		cmocka_unit_test(reopened_region_holds_the_same_map),
		cmocka_unit_test(an_insert_writes_back_its_lines_and_one_per_level),
		cmocka_unit_test(checker_catches_each_planted_violation),
		cmocka_unit_test(walk_reports_every_block_of_the_map_once),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
