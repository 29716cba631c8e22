/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cpp.cpp - the C++ header (include/pmtx.hpp): RAII transactions
 * (commit at the end of a scope, abort when an exception leaves it,
 * nested scopes), typed pointers, each typed container against a model of
 * the standard library under several runtimes (operations standalone and
 * in transactions, some aborted by an exception), and C statuses turned
 * into pmtx::error.
 */
#include <math.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <iterator>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "conttest.hpp"
#include "pmtx.hpp"

using conttest::rng;

namespace {

/* The runtimes the models run under: every one the containers support. */
const pmtx_runtime *const rts = conttest::runtimes;
const size_t nrts = conttest::nruntimes;

struct node {
	pmtx::p<uint64_t> value;
	pmtx::p<pmtx::ptr<node>> next;
	node(uint64_t v, pmtx::ptr<node> n) : value(v), next(n) {}
};

struct rec { /* a trivially copyable value with padding */
	uint32_t a;
	uint16_t b;
	char c[9];
	bool operator==(const rec &o) const
	{
		return a == o.a && b == o.b && memcmp(c, o.c, sizeof c) == 0;
	}
};

struct root {
	pmtx::p<uint64_t> counter;
	pmtx::p<double> ratio;
	pmtx::p<pmtx::ptr<node>> head; /* a pointer field: written in tx */
	uint64_t plain;
	pmtx::persistent<pmtx::hash_map<std::string, std::string>> hs;
	pmtx::persistent<pmtx::hash_map<uint64_t, rec>> hu;
	pmtx::persistent<pmtx::map<uint64_t, double>> mu;
	pmtx::persistent<pmtx::map<int64_t, std::string>> mi;
	pmtx::persistent<pmtx::map<std::string, rec>> ms;
	pmtx::persistent<pmtx::map<pmtx::score_key, uint64_t>> mz;
	pmtx::persistent<pmtx::list<std::string>> ls;
	pmtx::persistent<pmtx::list<uint64_t>> lu;
	pmtx::persistent<pmtx::string> str;
};

static_assert(sizeof(pmtx::ptr<node>) == 8 &&
                      std::is_trivially_copyable_v<pmtx::ptr<node>>,
              "a ptr is an offset");
static_assert(sizeof(pmtx::persistent<pmtx::map<uint64_t, double>>) == 8 &&
                      std::is_trivial_v<
                              pmtx::persistent<pmtx::map<uint64_t, double>>>,
              "a persistent container is its offset, zero when null");
static_assert(sizeof(pmtx::persistent<pmtx::string>) == sizeof(pmtx_str),
              "a persistent string is the pmtx_str");
static_assert(pmtx::map<uint64_t, double>::kind ==
                      (PMTX_MAP_U64 | PMTX_MAP_VAL_U64) &&
                      pmtx::map<int64_t, std::string>::kind == PMTX_MAP_I64 &&
                      pmtx::map<std::string, rec>::kind == PMTX_MAP_BYTES &&
                      pmtx::map<pmtx::score_key, uint64_t>::kind ==
                              (PMTX_MAP_SCORE | PMTX_MAP_VAL_U64),
              "the key type chooses the kind; 8-byte values stay in leaves");

struct fixture {
	const char *path = nullptr;
	pmtx::region r;
	root *rt = nullptr;
	explicit fixture(pmtx_runtime rt_, size_t size = 64 << 20)
	{
		r = pmtx::region(conttest::region_for(rt_, size, sizeof(root),
		                                      &path));
		rt = r.root<root>();
	}
	void reopen()
	{
		r.close();
		r = pmtx::region::open(path);
		rt = r.root<root>();
	}
	~fixture()
	{
		r = pmtx::region();
		unlink(path);
	}
};

uint64_t heap_blocks(pmtx::region &r)
{
	pmtx_heap_stats st;
	assert_int_equal(pmtx_heap_check(r.get(), &st), 0);
	return st.allocated_blocks;
}

struct planned_abort {}; /* thrown to abort a transaction on purpose */

/* ---------------------------------------------------------------------
 * Transactions.
 * ------------------------------------------------------------------- */

void scope_commits_at_its_end(void **)
{
	for (size_t i = 0; i < nrts; i++) {
		fixture f(rts[i]);
		auto hs = f.rt->hs.open_or_create(f.r);
		{
			pmtx::transaction tx(f.r);
			f.rt->counter = 7;
			f.rt->ratio = 0.5;
			tx.set(f.rt->plain, uint64_t(99));
			hs.insert_or_assign("k", "v");
			/* reads in the scope see its writes, whatever the
			 * runtime */
			assert_int_equal(f.rt->counter.get(), 7);
			assert_int_equal(tx.read(f.rt->plain), 99);
			assert_true(hs.get("k") == std::string("v"));
		}
		assert_null(pmtx_tx_current());
		hs = {};
		f.reopen();
		assert_int_equal(f.rt->counter, 7);
		assert_true(f.rt->ratio == 0.5);
		assert_int_equal(f.rt->plain, 99);
		assert_true(f.rt->hs.open(f.r).at("k") == "v");
	}
}

/* Everything a scope did is rolled back when an exception leaves it:
 * fields, every kind of container, allocations. */
void exception_leaving_a_scope_leaves_nothing(void **)
{
	for (size_t i = 0; i < nrts; i++) {
		fixture f(rts[i]);
		auto hs = f.rt->hs.open_or_create(f.r);
		auto mz = f.rt->mz.open_or_create(f.r);
		auto ls = f.rt->ls.open_or_create(f.r);
		auto s = f.rt->str.open(f.r);
		pmtx::transaction::run(f.r, [&] {
			f.rt->counter = 1;
			hs.insert("old", "1");
			mz.insert({1.0, "old"}, 1);
			ls.push_back("old");
			s = "old";
		});
		uint64_t blocks = heap_blocks(f.r);
		bool caught = false;
		try {
			pmtx::transaction tx(f.r);
			f.rt->counter = 2;
			tx.set(f.rt->plain, uint64_t(77));
			hs.insert_or_assign("old", "2");
			hs.insert("new", std::string(100, 'x'));
			mz.erase({1.0, "old"});
			mz.insert({2.0, "new"}, 2);
			ls.push_front(std::string(3000, 'y'));
			ls.pop_back();
			s = std::string(500, 'z');
			f.rt->head = pmtx::make<node>(5, pmtx::ptr<node>());
			throw planned_abort();
		} catch (planned_abort &) {
			caught = true;
		}
		assert_true(caught);
		assert_null(pmtx_tx_current());
		for (int pass = 0; pass < 2; pass++) { /* now and reopened */
			assert_int_equal(f.rt->counter, 1);
			assert_int_equal(f.rt->plain, 0);
			assert_false(bool(f.rt->head.get()));
			assert_int_equal(hs.size(), 1);
			assert_true(hs.at("old") == "1");
			assert_int_equal(mz.size(), 1);
			assert_true(mz.get({1.0, "old"}) == uint64_t(1));
			assert_true(ls.range() == std::vector<std::string>{"old"});
			assert_true(s.str() == "old");
			assert_int_equal(heap_blocks(f.r), blocks);
			if (pass == 0) {
				hs = {};
				mz = {};
				ls = {};
				f.reopen();
				hs = f.rt->hs.open(f.r);
				mz = f.rt->mz.open(f.r);
				ls = f.rt->ls.open(f.r);
				s = f.rt->str.open(f.r);
			}
		}
	}
}

void nested_scopes_are_one_transaction(void **)
{
	fixture f(PMTX_RT_REDO);
	auto lu = f.rt->lu.open_or_create(f.r);
	/* An inner scope that ends normally commits nothing yet: the outer
	 * one's exception takes it back too. */
	try {
		pmtx::transaction outer(f.r);
		pmtx_tx *t = outer.get();
		{
			pmtx::transaction inner(f.r);
			assert_ptr_equal(inner.get(), t);
			lu.push_back(1);
			f.rt->counter = 1;
		}
		assert_ptr_equal(pmtx_tx_current(), t);
		lu.push_back(2);
		throw planned_abort();
	} catch (planned_abort &) {
	}
	assert_int_equal(lu.size(), 0);
	assert_int_equal(f.rt->counter, 0);

	/* An inner scope left by an exception aborts the whole: an outer
	 * scope that catches it and ends normally throws ABORTED. */
	int status = 0;
	try {
		pmtx::transaction outer(f.r);
		lu.push_back(3);
		try {
			pmtx::transaction inner(f.r);
			lu.push_back(4);
			throw planned_abort();
		} catch (planned_abort &) {
		}
	} catch (pmtx::error &e) {
		status = e.status();
	}
	assert_int_equal(status, PMTX_E_ABORTED);
	assert_null(pmtx_tx_current());
	assert_int_equal(lu.size(), 0);

	/* Both commit: the whole is there. */
	pmtx::transaction::run(f.r, [&] {
		lu.push_back(5);
		pmtx::transaction::run(f.r, [&] { lu.push_back(6); });
	});
	assert_true(lu.range() == (std::vector<uint64_t>{5, 6}));

	/* An explicit abort of an inner level, then the outer commit. */
	status = 0;
	try {
		pmtx::transaction outer(f.r);
		lu.push_back(7);
		pmtx::transaction inner(f.r);
		inner.abort();
		outer.commit();
	} catch (pmtx::error &e) {
		status = e.status();
	}
	assert_int_equal(status, PMTX_E_ABORTED);
	assert_true(lu.range() == (std::vector<uint64_t>{5, 6}));
}

/* A container made inside a transaction is that transaction's: usable
 * in it, gone (offset null again, blocks freed) if it aborts, there
 * after a reopen if it commits. */
void containers_made_in_a_transaction_are_its_own(void **)
{
	for (size_t i = 0; i < nrts; i++) {
		fixture f(rts[i]);
		uint64_t blocks = heap_blocks(f.r);
		for (int commit = 0; commit < 2; commit++) {
			try {
				pmtx::transaction::run(f.r, [&] {
					auto mu = f.rt->mu.open_or_create(f.r);
					auto hs = f.rt->hs.open_or_create(f.r);
					auto lu = f.rt->lu.open_or_create(f.r);
					mu.insert(1, 0.25);
					hs.insert("a", "b");
					lu.push_back(3);
					assert_true(mu.at(1) == 0.25);
					if (!commit)
						throw planned_abort();
				});
			} catch (planned_abort &) {
			}
			if (!commit) {
				assert_false(bool(f.rt->mu) || bool(f.rt->hs) ||
				             bool(f.rt->lu));
				assert_int_equal(heap_blocks(f.r), blocks);
			}
		}
		f.reopen();
		assert_true(f.rt->mu.open(f.r).at(1) == 0.25);
		assert_true(f.rt->hs.open(f.r).at("a") == "b");
		assert_int_equal(f.rt->lu.open(f.r).at(0), 3);
		f.rt->mu.destroy(f.r);
		assert_false(bool(f.rt->mu));
	}
}

void run_returns_values_and_passes_exceptions_on(void **)
{
	fixture f(PMTX_RT_UNDO);
	uint64_t v = pmtx::transaction::run(f.r, [&] {
		f.rt->counter = 41;
		return f.rt->counter + 1;
	});
	assert_int_equal(v, 42);
	pmtx::transaction::run(f.r, [&](pmtx::transaction &tx) {
		tx.set(f.rt->plain, uint64_t(5));
		assert_ptr_equal(tx.get(), pmtx_tx_current());
	});
	assert_int_equal(f.rt->plain, 5);
	bool caught = false;
	try {
		pmtx::transaction::run(f.r, [&] {
			f.rt->counter = 0;
			throw std::runtime_error("user's own");
		});
	} catch (std::runtime_error &e) {
		caught = strcmp(e.what(), "user's own") == 0;
	}
	assert_true(caught);
	assert_int_equal(f.rt->counter, 41);
	/* Under another runtime than the region's. */
	pmtx::transaction::run(f.r, [&] { f.rt->counter += 1; }, PMTX_RT_REDO);
	assert_int_equal(f.rt->counter, 42);
}

/* ---------------------------------------------------------------------
 * Typed pointers.
 * ------------------------------------------------------------------- */

void typed_pointers_are_offsets(void **)
{
	for (size_t i = 0; i < nrts; i++) {
		fixture f(rts[i]);
		uint64_t blocks = heap_blocks(f.r);
		pmtx::transaction::run(f.r, [&] {
			for (uint64_t v = 1; v <= 10; v++)
				f.rt->head = pmtx::make<node>(v, f.rt->head);
			/* -> and * resolve in the transaction's region */
			f.rt->head->value = f.rt->head->value + 100;
			assert_int_equal((*f.rt->head.get()).value, 110);
		});
		assert_int_equal(heap_blocks(f.r), blocks + 10);
		f.reopen();
		std::vector<uint64_t> got;
		for (pmtx::ptr<node> n = f.rt->head; n; n = n.get(f.r)->next) {
			node *np = n.get(f.r);
			assert_ptr_equal(pmtx::ptr<node>::of(f.r, np).get(f.r), np);
			assert_int_equal(f.r.off_of(np), n.off());
			got.push_back(np->value);
		}
		assert_true(got == (std::vector<uint64_t>{110, 9, 8, 7, 6, 5, 4,
		                                          3, 2, 1}));
		/* outside a transaction, -> has no region */
		int status = 0;
		try {
			(void)f.rt->head->value.get();
		} catch (pmtx::error &e) {
			status = e.status();
		}
		assert_int_equal(status, PMTX_E_NO_TX);
		/* a null pointer */
		pmtx::ptr<node> null = nullptr;
		assert_false(bool(null));
		assert_null(null.get(f.r));
		assert_true(null == pmtx::ptr<node>());
		status = 0;
		try {
			pmtx::transaction::run(f.r, [&] { (void)null->value.get(); });
		} catch (pmtx::error &e) {
			status = e.status();
		}
		assert_int_equal(status, PMTX_E_RANGE);
		/* allocate (zeroed) and destroy: freed at commit */
		pmtx::transaction::run(f.r, [&] {
			pmtx::ptr<uint64_t> a = pmtx::allocate<uint64_t>(16);
			for (int k = 0; k < 16; k++)
				assert_int_equal(a.get(f.r)[k], 0);
			pmtx::destroy(a);
			pmtx::ptr<node> n = f.rt->head;
			while (n) {
				pmtx::ptr<node> next = n->next;
				pmtx::destroy(n);
				n = next;
			}
			f.rt->head = nullptr;
		});
		assert_int_equal(heap_blocks(f.r), blocks);
	}
}

/* ---------------------------------------------------------------------
 * Containers against models. Each round: some operations standalone,
 * then transactions of several, one in four aborted by an exception (the
 * model goes back to its copy).
 * ------------------------------------------------------------------- */

/* ops(model, in_tx) runs one random operation on the container and the
 * model; check() compares the whole. */
template <class Model, class Op, class Check>
void against_model(pmtx::region &r, Model &model, rng &g, unsigned nops,
                   Op op, Check check)
{
	for (unsigned i = 0; i < nops / 2; i++)
		op(model);
	check(model);
	for (unsigned done = 0; done < nops / 2;) {
		Model before = model;
		bool abort = g.below(4) == 0;
		unsigned n = 1 + (unsigned)g.below(12);
		try {
			pmtx::transaction::run(r, [&] {
				for (unsigned k = 0; k < n; k++)
					op(model);
				if (abort)
					throw planned_abort();
			});
		} catch (planned_abort &) {
			model = before;
		}
		done += n;
		if (g.below(8) == 0)
			check(model);
	}
	check(model);
}

std::string small_key(rng &g) { return g.bytes(6); }

std::string value_of(rng &g)
{
	return g.bytes(g.below(10) ? 30 : 2000, false);
}

rec rec_of(rng &g)
{
	rec v;
	memset(&v, 0, sizeof v);
	v.a = (uint32_t)g.next();
	v.b = (uint16_t)g.next();
	for (char &c : v.c)
		c = (char)('a' + g.below(26));
	return v;
}

void hash_maps_match_unordered_map(void **)
{
	for (size_t i = 0; i < nrts; i++) {
		fixture f(rts[i]);
		rng g(0xc0ffee + i);
		auto hs = f.rt->hs.open_or_create(f.r);
		std::unordered_map<std::string, std::string> ms;
		auto op = [&](auto &m) {
			std::string k = small_key(g), v = value_of(g);
			switch (g.below(7)) {
			case 0:
				assert_int_equal(hs.insert(k, v), m.emplace(k, v).second);
				break;
			case 1:
				assert_int_equal(hs.assign(k, v), m.count(k) != 0);
				if (m.count(k))
					m[k] = v;
				break;
			case 2:
			case 3:
				assert_int_equal(hs.insert_or_assign(k, v),
				                 m.count(k) == 0);
				m[k] = v;
				break;
			case 4:
				assert_int_equal(hs.erase(k), m.erase(k) != 0);
				break;
			default: {
				auto got = hs.get(k);
				auto it = m.find(k);
				assert_int_equal(got.has_value(), it != m.end());
				if (got)
					assert_true(*got == it->second);
			}
			}
		};
		auto check = [&](const auto &m) {
			assert_int_equal(hs.size(), m.size());
			std::unordered_map<std::string, std::string> seen;
			hs.for_each([&](const std::string &k, const std::string &v) {
				assert_true(seen.emplace(k, v).second);
			});
			assert_true(seen == m);
		};
		against_model(f.r, ms, g, 3000, op, check);

		/* uint64_t keys, a struct of 15 bytes with padding as value */
		auto hu = f.rt->hu.open_or_create(f.r);
		std::unordered_map<uint64_t, rec> mu;
		auto opu = [&](auto &m) {
			uint64_t k = g.below(300);
			rec v = rec_of(g);
			if (g.below(3) == 0) {
				assert_int_equal(hu.erase(k), m.erase(k) != 0);
			} else if (g.below(2)) {
				assert_int_equal(hu.insert_or_assign(k, v),
				                 m.count(k) == 0);
				m[k] = v;
			} else {
				auto got = hu.get(k);
				assert_int_equal(got.has_value(), m.count(k) != 0);
				if (got)
					assert_true(*got == m[k]);
			}
		};
		auto checku = [&](const auto &m) {
			assert_int_equal(hu.size(), m.size());
			for (auto &kv : m)
				assert_true(hu.at(kv.first) == kv.second);
		};
		against_model(f.r, mu, g, 2000, opu, checku);
		hu.clear();
		assert_true(hu.empty());
	}
}

template <class A, class B> bool same_entries(const A &a, const B &b)
{
	return a.size() == b.size() &&
	       std::equal(a.begin(), a.end(), b.begin(),
	                  [](const auto &x, const auto &y) {
		                  return x.first == y.first &&
		                         x.second == y.second;
	                  });
}

/* One ordered map against std::map: K, V and how to draw them. */
template <class K, class V, class KeyOf, class ValOf>
void ordered_against_model(pmtx::region &r, pmtx::map<K, V> &pm, rng &g,
                           unsigned nops, KeyOf key_of, ValOf val_of)
{
	using model = std::map<K, V>;
	auto rank_in = [](const model &m, const K &k, bool incl) {
		auto it = incl ? m.upper_bound(k) : m.lower_bound(k);
		return (uint64_t)std::distance(m.begin(), it);
	};
	auto op = [&](model &m) {
		K k = key_of(g);
		V v = val_of(g);
		switch (g.below(10)) {
		case 0:
			assert_int_equal(pm.insert(k, v), m.emplace(k, v).second);
			break;
		case 1:
		case 2:
			assert_int_equal(pm.insert_or_assign(k, v), m.count(k) == 0);
			m[k] = v;
			break;
		case 3:
			assert_int_equal(pm.erase(k), m.erase(k) != 0);
			break;
		case 4: {
			auto got = pm.get(k);
			auto it = m.find(k);
			assert_int_equal(got.has_value(), it != m.end());
			if (got)
				assert_true(*got == it->second);
			break;
		}
		case 5: {
			bool incl = g.below(2);
			assert_int_equal(pm.rank(k, incl), rank_in(m, k, incl));
			break;
		}
		case 6: {
			K k2 = key_of(g);
			if (k2 < k)
				std::swap(k, k2);
			unsigned fl = (unsigned)g.below(4) * 2; /* LO/HI_EXCL */
			uint64_t want = 0;
			for (auto &kv : m)
				if (!(kv.first < k) && !(k2 < kv.first) &&
				    !((fl & PMTX_MAP_LO_EXCL) && kv.first == k) &&
				    !((fl & PMTX_MAP_HI_EXCL) && kv.first == k2))
					want++;
			assert_int_equal(pm.count(k, k2, fl), want);
			break;
		}
		case 7: { /* lower and upper bound */
			auto it = g.below(2) ? pm.lower_bound(k) : pm.upper_bound(k);
			bool upper = false;
			(void)upper;
			auto lo = m.lower_bound(k), up = m.upper_bound(k);
			if (it == pm.end()) {
				assert_true(up == m.end());
			} else {
				K got = it.key();
				assert_true((lo != m.end() && got == lo->first) ||
				            (up != m.end() && got == up->first));
				assert_int_equal(it.rank(),
				                 rank_in(m, got, false));
			}
			break;
		}
		case 8: {
			auto it = pm.find(k);
			assert_int_equal(it != pm.end(), m.count(k) != 0);
			if (it != pm.end())
				assert_true(it->second == m[k]);
			break;
		}
		default:
			if (!m.empty()) {
				uint64_t rk = g.below(m.size());
				auto it = pm.at_rank(rk);
				auto mit = std::next(m.begin(), (long)rk);
				assert_true(it.key() == mit->first);
				assert_true(it.value() == mit->second);
				assert_int_equal(it.rank(), rk);
			}
			assert_true(pm.at_rank(m.size()) == pm.end());
		}
	};
	auto check = [&](const model &m) {
		assert_int_equal(pm.size(), m.size());
		assert_int_equal(pm.count(std::nullopt, std::nullopt), m.size());
		std::vector<std::pair<K, V>> fwd(pm.begin(), pm.end());
		assert_true(same_entries(fwd, m));
		uint64_t i = m.size();
		auto mit = m.rbegin();
		for (auto it = pm.last(); it != pm.end(); --it, ++mit) {
			assert_int_equal(it.rank(), --i);
			assert_true(it.key() == mit->first);
		}
		assert_true(mit == m.rend());
		if (!m.empty()) { /* -- from end() is the last */
			auto e = pm.end();
			--e;
			assert_true(e.key() == m.rbegin()->first);
		}
	};
	model m;
	against_model(r, m, g, nops, op, check);
}

double score_of(rng &g)
{
	static const double s[] = {-1e300, -2.5, -0.0, 0.0, 1.0, 1.5, 3.0, 1e300,
	                           INFINITY, -INFINITY};
	return s[g.below(sizeof s / sizeof s[0])];
}

void ordered_maps_match_std_map(void **)
{
	for (size_t i = 0; i < nrts; i++) {
		fixture f(rts[i]);
		rng g(0xfeed + i);
		auto mu = f.rt->mu.open_or_create(f.r);
		ordered_against_model(f.r, mu, g, 2500,
		                      [](rng &x) { return x.below(400); },
		                      [](rng &x) { return (double)x.below(1000) / 8; });
		auto mi = f.rt->mi.open_or_create(f.r);
		ordered_against_model(f.r, mi, g, 1500,
		                      [](rng &x) { return (int64_t)x.below(400) - 200; },
		                      [](rng &x) { return value_of(x); });
		auto ms = f.rt->ms.open_or_create(f.r);
		ordered_against_model(f.r, ms, g, 1500,
		                      [](rng &x) { return x.bytes(5); },
		                      [](rng &x) { return rec_of(x); });
		auto mz = f.rt->mz.open_or_create(f.r);
		ordered_against_model(f.r, mz, g, 2000,
		                      [](rng &x) {
			                      return pmtx::score_key{score_of(x),
			                                             x.bytes(3)};
		                      },
		                      [](rng &x) { return x.next(); });
	}
}

void a_map_loads_sorted_input(void **)
{
	fixture f(PMTX_RT_UNDO);
	auto mi = f.rt->mi.open_or_create(f.r);
	std::map<int64_t, std::string> m;
	for (int64_t k = -500; k < 500; k += 3)
		m[k] = std::to_string(k);
	mi.load(m.begin(), m.end(), 70);
	std::vector<std::pair<int64_t, std::string>> got(mi.begin(), mi.end());
	assert_true(same_entries(got, m));
	assert_int_equal(mi.rank(1), m.size() / 2);
}

void lists_match_deque(void **)
{
	for (size_t ri = 0; ri < nrts; ri++) {
		fixture f(rts[ri]);
		rng g(0xdec + ri);
		auto ls = f.rt->ls.open_or_create(f.r);
		using model = std::deque<std::string>;
		auto idx = [&](const model &m) -> int64_t {
			int64_t n = (int64_t)m.size() + 2;
			return (int64_t)g.below((uint64_t)(2 * n)) - n;
		};
		auto norm = [](const model &m, int64_t i) -> int64_t {
			return i < 0 ? i + (int64_t)m.size() : i;
		};
		auto inside = [&](const model &m, int64_t i) {
			int64_t j = norm(m, i);
			return j >= 0 && j < (int64_t)m.size();
		};
		auto op = [&](model &m) {
			std::string v = g.bytes(g.below(10) ? 3 : 1500);
			uint64_t kind = g.below(11);
			switch (kind) {
			case 0:
			case 1:
				ls.push_back(v);
				m.push_back(v);
				break;
			case 2:
				ls.push_front(v);
				m.push_front(v);
				break;
			case 3:
			case 4: { /* a pop: at the front (3), at the back (4) */
				bool back = kind == 4;
				auto got = back ? ls.pop_back() : ls.pop_front();
				assert_int_equal(got.has_value(), !m.empty());
				if (!got)
					break;
				assert_true(*got == (back ? m.back() : m.front()));
				if (back)
					m.pop_back();
				else
					m.pop_front();
				break;
			}
			case 5: {
				int64_t i = idx(m);
				auto got = ls.get(i);
				assert_int_equal(got.has_value(), inside(m, i));
				if (got)
					assert_true(*got == m[(size_t)norm(m, i)]);
				break;
			}
			case 6: {
				int64_t i = idx(m);
				if (inside(m, i)) {
					ls.set(i, v);
					m[(size_t)norm(m, i)] = v;
				}
				break;
			}
			case 7: {
				std::string pivot = g.bytes(3);
				bool after = g.below(2);
				auto it = std::find(m.begin(), m.end(), pivot);
				bool ok = after ? ls.insert_after(pivot, v)
				                : ls.insert_before(pivot, v);
				assert_int_equal(ok, it != m.end());
				if (ok)
					m.insert(after ? it + 1 : it, v);
				break;
			}
			case 8: {
				std::string x = g.bytes(2);
				int64_t count = (int64_t)g.below(5) - 2;
				uint64_t removed = 0;
				if (count >= 0) {
					for (auto it = m.begin(); it != m.end();)
						if (*it == x && (count == 0 ||
						                 removed < (uint64_t)count)) {
							it = m.erase(it);
							removed++;
						} else {
							++it;
						}
				} else {
					for (size_t j = m.size(); j-- > 0;)
						if (m[j] == x && removed < (uint64_t)-count) {
							m.erase(m.begin() + (long)j);
							removed++;
						}
				}
				assert_int_equal(ls.remove(x, count), removed);
				break;
			}
			case 9:
				if (g.below(8) == 0) {
					int64_t a = idx(m), b = idx(m);
					int64_t n = (int64_t)m.size();
					int64_t s = std::max<int64_t>(norm(m, a), 0);
					int64_t e = std::min<int64_t>(norm(m, b), n - 1);
					ls.trim(a, b);
					if (s > e || s >= n)
						m.clear();
					else
						m = model(m.begin() + s, m.begin() + e + 1);
				}
				break;
			default:
				assert_int_equal(ls.size(), m.size());
			}
		};
		auto check = [&](const model &m) {
			assert_int_equal(ls.size(), m.size());
			std::vector<std::string> all = ls.range();
			assert_true(all.size() == m.size() &&
			            std::equal(all.begin(), all.end(), m.begin()));
			if (m.size() > 2)
				assert_true(ls.range(1, -2) ==
				            std::vector<std::string>(m.begin() + 1,
				                                     m.end() - 1));
		};
		model m;
		against_model(f.r, m, g, 3000, op, check);

		/* a list of uint64_t */
		auto lu = f.rt->lu.open_or_create(f.r);
		for (uint64_t v = 0; v < 100; v++)
			lu.push_back(v);
		assert_int_equal(lu.front(), 0);
		assert_int_equal(lu.back(), 99);
		assert_int_equal(*lu.pop_back(), 99);
		assert_int_equal(lu.at(-1), 98);
	}
}

void strings_match_std_string(void **)
{
	for (size_t i = 0; i < nrts; i++) {
		fixture f(rts[i]);
		rng g(0x5791 + i);
		pmtx::string s = f.rt->str.open(f.r);
		auto op = [&](std::string &m) {
			std::string v = g.bytes(g.below(4) ? 10 : 300);
			switch (g.below(6)) {
			case 0:
				s = v;
				m = v;
				break;
			case 1:
				s += v;
				m += v;
				break;
			case 2: {
				size_t at = (size_t)g.below(m.size() + 20);
				s.setrange(at, v);
				if (!v.empty()) {
					if (m.size() < at + v.size())
						m.resize(at + v.size(), '\0');
					m.replace(at, v.size(), v);
				}
				break;
			}
			case 3: {
				size_t at = (size_t)g.below(m.size() + 3),
				       n = (size_t)g.below(40);
				std::string want = at < m.size() ? m.substr(at, n) : "";
				assert_true(s.substr(at, n) == want);
				break;
			}
			case 4:
				if (g.below(10) == 0) {
					s.clear();
					m.clear();
				}
				break;
			default:
				assert_int_equal(s.size(), m.size());
			}
		};
		auto check = [&](const std::string &m) {
			assert_int_equal(s.size(), m.size());
			assert_true(s.str() == m);
			assert_int_equal(s.empty(), m.empty());
		};
		std::string m;
		against_model(f.r, m, g, 2000, op, check);
	}
}

/* ---------------------------------------------------------------------
 * Errors.
 * ------------------------------------------------------------------- */

template <class F> int status_of(F f)
{
	try {
		f();
	} catch (pmtx::error &e) {
		assert_true(strstr(e.what(), pmtx_strerror(e.status())) != nullptr);
		return e.status();
	}
	return 0;
}

void c_statuses_become_exceptions(void **)
{
	fixture f(PMTX_RT_UNDO);
	std::string missing = std::string(f.path) + ".none";
	assert_int_equal(status_of([&] { pmtx::region::open(missing); }),
	                 ENOENT);
	pmtx::options o;
	o.root_size = 64;
	assert_int_equal(status_of([&] { pmtx::region::create(f.path, 8 << 20, o); }),
	                 EEXIST);
	/* the detail of pmtx_errmsg is in what() */
	f.r.close();
	o.layout = "another";
	std::string what;
	int st = 0;
	try {
		pmtx::region::open(f.path, o);
	} catch (pmtx::error &e) {
		st = e.status();
		what = e.what();
	}
	assert_int_equal(st, PMTX_E_BAD_LAYOUT);
	assert_true(what.find(pmtx_strerror(PMTX_E_BAD_LAYOUT)) !=
	            std::string::npos);
	assert_true(what.find(f.path) != std::string::npos);
	f.reopen();
	assert_int_equal(status_of([&] { f.r.root<char[1 << 20]>(); }),
	                 PMTX_E_TOO_SMALL);

	/* p<T> and make outside a transaction */
	assert_int_equal(status_of([&] { f.rt->counter = 1; }), PMTX_E_NO_TX);
	assert_int_equal(status_of([&] { pmtx::make<node>(1, nullptr); }),
	                 PMTX_E_NO_TX);
	/* a container's bad input, and an offset that names another kind */
	auto mz = f.rt->mz.open_or_create(f.r);
	assert_int_equal(status_of([&] { mz.insert({NAN, "x"}, 1); }),
	                 PMTX_E_INVAL);
	auto ls = f.rt->ls.open_or_create(f.r);
	assert_int_equal(status_of([&] {
		                 pmtx::hash_map<uint64_t, uint64_t> h(f.r, ls.off());
	                 }),
	                 PMTX_E_NOT_CONTAINER);
	assert_int_equal(status_of([&] { ls.at(3); }), PMTX_E_NOT_FOUND);
	assert_int_equal(status_of([&] { ls.set(3, "x"); }), PMTX_E_NOT_FOUND);
	/* a stored value whose size is not the type's */
	auto hs = f.rt->hs.open_or_create(f.r);
	hs.insert("k", "three");
	pmtx::hash_map<std::string, uint64_t> wrong(f.r, hs.off());
	assert_int_equal(status_of([&] { wrong.get("k"); }), PMTX_E_CORRUPT);

	/* A failing operation inside a scope: the exception leaves it, and
	 * nothing of the transaction stays. */
	assert_int_equal(status_of([&] {
		                 pmtx::transaction tx(f.r);
		                 hs.insert("in-tx", "1");
		                 ls.push_back("in-tx");
		                 mz.insert({NAN, "y"}, 2);
	                 }),
	                 PMTX_E_INVAL);
	assert_false(hs.contains("in-tx"));
	assert_int_equal(ls.size(), 0);

	/* a transaction of another region is running in this thread */
	fixture g(PMTX_RT_UNDO);
	assert_int_equal(status_of([&] {
		                 pmtx::transaction tx(g.r);
		                 hs.insert("other", "region");
	                 }),
	                 PMTX_E_TX_STATE);
	assert_false(hs.contains("other"));
	/* closing a region while its transaction runs */
	assert_int_equal(status_of([&] {
		                 pmtx::transaction tx(g.r);
		                 g.r.close();
	                 }),
	                 PMTX_E_TX_STATE);
	/* a transaction used after its end */
	assert_int_equal(status_of([&] {
		                 pmtx::transaction tx(f.r);
		                 tx.commit();
		                 tx.set(f.rt->plain, uint64_t(1));
	                 }),
	                 PMTX_E_NO_TX);
	/* a user's exception goes through a callback of the C API */
	hs.insert("a", "b");
	bool caught = false;
	try {
		hs.for_each([](const std::string &, const std::string &) {
			throw planned_abort();
		});
	} catch (planned_abort &) {
		caught = true;
	}
	assert_true(caught);
	hs = {};
	mz = {};
	ls = {};
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(scope_commits_at_its_end),
		cmocka_unit_test(exception_leaving_a_scope_leaves_nothing),
		cmocka_unit_test(nested_scopes_are_one_transaction),
		cmocka_unit_test(containers_made_in_a_transaction_are_its_own),
		cmocka_unit_test(run_returns_values_and_passes_exceptions_on),
		cmocka_unit_test(typed_pointers_are_offsets),
		cmocka_unit_test(hash_maps_match_unordered_map),
		cmocka_unit_test(ordered_maps_match_std_map),
		cmocka_unit_test(a_map_loads_sorted_input),
		cmocka_unit_test(lists_match_deque),
		cmocka_unit_test(strings_match_std_string),
		cmocka_unit_test(c_statuses_become_exceptions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
