/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_list.cpp - the list (pmtx_containers.h, src/containers/list.c)
 * against std::deque<std::string>, under every runtime: random
 * operation sequences, standalone and inside the caller's transactions
 * (some aborted, the model rolled back with them); the lines a push
 * writes back; atomicity across two lists and a string, and after a
 * reopen; bad input, handles that name no list, copy-on-write, and
 * corrupt lists, which read as PMTX_E_CORRUPT and never crash; the
 * block walk (list_walk) against the heap's blocks.
 */
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "conttest.hpp"

extern "C" {
#include "containers/list.h"
}

namespace {

using conttest::rng;
using conttest::str;
typedef std::deque<std::string> model;

struct root {
	pmtx_off list[2];
	uint64_t word[8];
	pmtx_str s;
};

struct fixture {
	const char *path;
	pmtx_region *r;
	pmtx_runtime rt;
	root *rp;
	pmtx_list *l[2];
};

void open_lists(fixture &f)
{
	f.rp = static_cast<root *>(pmtx_root(f.r, nullptr));
	for (int i = 0; i < 2; i++)
		assert_int_equal(pmtx_list_open(f.r, f.rp->list[i], nullptr,
		                                &f.l[i]), 0);
}

fixture make(pmtx_runtime rt, size_t size = 64 << 20)
{
	fixture f;
	f.rt = rt;
	f.r = conttest::region_for(rt, size, sizeof(root), &f.path);
	f.rp = static_cast<root *>(pmtx_root(f.r, nullptr));
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
	for (int i = 0; i < 2; i++) {
		pmtx_off off;
		assert_int_equal(pmtx_list_create(tx, &off), 0);
		assert_int_equal(pmtx_write(tx, &f.rp->list[i], &off,
		                            sizeof(off)), 0);
	}
	assert_int_equal(pmtx_commit(tx), 0);
	open_lists(f);
	return f;
}

void close_lists(fixture &f)
{
	for (int i = 0; i < 2; i++)
		pmtx_list_close(f.l[i]);
}

void reopen(fixture &f)
{
	close_lists(f);
	assert_int_equal(pmtx_close(f.r), 0);
	f.r = tu_open(f.path);
	open_lists(f);
}

void drop(fixture &f)
{
	close_lists(f);
	assert_int_equal(pmtx_close(f.r), 0);
	unlink(f.path);
}

/* ---- reading the list whole ---- */

int collect(const pmtx_bytes *v, void *arg)
{
	static_cast<std::vector<std::string> *>(arg)->push_back(str(*v));
	return 0;
}

std::vector<std::string> range(pmtx_tx *tx, pmtx_list *l, int64_t a,
                               int64_t b)
{
	std::vector<std::string> out;
	assert_int_equal(pmtx_list_range(tx, l, a, b, collect, &out), 0);
	return out;
}

/* LRANGE on the model, from Redis's documentation: negative indexes
 * count from the end; out-of-range indexes are clamped; start past the
 * end or past stop gives nothing. */
std::vector<std::string> model_range(const model &m, int64_t a, int64_t b)
{
	int64_t n = (int64_t)m.size();
	int64_t from = a < 0 ? std::max<int64_t>(n + a, 0) : a;
	int64_t to = b < 0 ? n + b : std::min<int64_t>(b, n - 1);
	std::vector<std::string> out;
	for (int64_t i = from; i <= to && i < n; i++)
		out.push_back(m[(size_t)i]);
	return out;
}

void check_same(pmtx_tx *tx, pmtx_list *l, const model &m)
{
	char msg[256];
	assert_int_equal(list_check(l, msg, sizeof(msg)), 0);
	uint64_t n;
	assert_int_equal(pmtx_list_len(tx, l, &n), 0);
	assert_int_equal(n, m.size());
	std::vector<std::string> all = range(tx, l, 0, -1);
	assert_true(all == std::vector<std::string>(m.begin(), m.end()));
}

/* Push prefix0, prefix1... (n elements) at l's tail, and onto m if
 * there is one. */
void push_numbered(pmtx_list *l, const char *prefix, int n,
                   model *m = nullptr)
{
	for (int k = 0; k < n; k++) {
		std::string v = prefix + std::to_string(k);
		assert_int_equal(pmtx_list_push(nullptr, l, PMTX_LIST_TAIL,
		                                v.data(), v.size()), 0);
		if (m)
			m->push_back(v);
	}
}

/* ---- random operations ---- */

std::string element(rng &g)
{
	uint64_t k = g.below(1000);
	if (k < 650)
		return g.bytes(6); /* short, often equal */
	if (k < 900)
		return g.bytes(40, false);
	if (k < 975)
		return g.bytes(600, false);
	if (k < 999)
		return g.bytes(5000, false); /* several chunks */
	return std::string(40000 + g.below(1000), (char)('a' + g.below(4)));
}

/* An element of the list (or, one time in five, any string). */
std::string pick(rng &g, const model &m)
{
	if (m.empty() || g.below(5) == 0)
		return g.bytes(6);
	return m[(size_t)g.below(m.size())];
}

int64_t any_index(rng &g, const model &m)
{
	int64_t n = (int64_t)m.size();
	return (int64_t)g.below((uint64_t)(2 * n + 6)) - n - 3;
}

struct driver {
	rng &g;
	pmtx_list *l;
	model &m;
	pmtx_tx *tx;
	size_t target; /* the size the list hovers around */

	void push()
	{
		std::string v = element(g);
		int end = (int)g.below(2);
		assert_int_equal(pmtx_list_push(tx, l, end, v.data(), v.size()),
		                 0);
		if (end == PMTX_LIST_HEAD)
			m.push_front(v);
		else
			m.push_back(v);
	}

	void pop()
	{
		int end = (int)g.below(2);
		size_t cap = g.below(3) == 0 ? g.below(8) : 1 << 16;
		std::vector<char> buf(std::max<size_t>(cap, 1));
		size_t n = 12345;
		int rc = pmtx_list_pop(tx, l, end, cap ? buf.data() : nullptr,
		                       cap, &n);
		if (m.empty()) {
			assert_int_equal(rc, PMTX_E_NOT_FOUND);
			return;
		}
		assert_int_equal(rc, 0);
		std::string want = end == PMTX_LIST_HEAD ? m.front() : m.back();
		assert_int_equal(n, want.size());
		size_t k = std::min(cap, n);
		assert_true(std::string(buf.data(), k) == want.substr(0, k));
		if (end == PMTX_LIST_HEAD)
			m.pop_front();
		else
			m.pop_back();
	}

	void index()
	{
		int64_t i = any_index(g, m);
		pmtx_bytes v;
		int rc = pmtx_list_index(tx, l, i, &v);
		int64_t n = (int64_t)m.size(), j = i < 0 ? n + i : i;
		if (j < 0 || j >= n) {
			assert_int_equal(rc, PMTX_E_NOT_FOUND);
			return;
		}
		assert_int_equal(rc, 0);
		std::string want = m[(size_t)j];
		assert_true(str(v) == want);
		/* The view outlives reads of the list (pmtx_containers.h). */
		range(tx, l, 0, -1);
		assert_true(str(v) == want);
	}

	void set()
	{
		int64_t i = any_index(g, m);
		std::string v = element(g);
		int rc = pmtx_list_set(tx, l, i, v.data(), v.size());
		int64_t n = (int64_t)m.size(), j = i < 0 ? n + i : i;
		if (j < 0 || j >= n) {
			assert_int_equal(rc, PMTX_E_NOT_FOUND);
			return;
		}
		assert_int_equal(rc, 0);
		m[(size_t)j] = v;
	}

	void insert()
	{
		std::string p = pick(g, m), v = element(g);
		int after = (int)g.below(2);
		int rc = pmtx_list_insert(tx, l, p.data(), p.size(), after,
		                          v.data(), v.size());
		auto it = std::find(m.begin(), m.end(), p);
		if (it == m.end()) {
			assert_int_equal(rc, PMTX_E_NOT_FOUND);
			return;
		}
		assert_int_equal(rc, 0);
		m.insert(after ? it + 1 : it, v);
	}

	void remove()
	{
		std::string v = pick(g, m);
		int64_t count = (int64_t)g.below(7) - 3;
		uint64_t removed = 999;
		assert_int_equal(pmtx_list_remove(tx, l, v.data(), v.size(),
		                                  count, &removed), 0);
		uint64_t want = 0;
		uint64_t limit = count == 0 ? UINT64_MAX
		               : (uint64_t)(count < 0 ? -count : count);
		if (count >= 0) {
			for (auto it = m.begin(); it != m.end() && want < limit;)
				if (*it == v)
					it = m.erase(it), want++;
				else
					++it;
		} else {
			for (size_t i = m.size(); i-- > 0 && want < limit;)
				if (m[i] == v)
					m.erase(m.begin() + (ptrdiff_t)i), want++;
		}
		assert_int_equal(removed, want);
	}

	/* LTRIM's edge cases: negative, past either end, start > stop. */
	void trim()
	{
		int64_t n = (int64_t)m.size(), a, b;
		switch (g.below(6)) {
		case 0:
			a = any_index(g, m);
			b = any_index(g, m);
			break;
		case 1:
			a = (int64_t)g.below(4);
			b = n + (int64_t)g.below(4);
			break;
		case 2:
			a = -(int64_t)g.below(4) - n;
			b = -1 - (int64_t)g.below(3);
			break;
		default:
			a = (int64_t)g.below(3);
			b = -1 - (int64_t)g.below(3);
			break;
		}
		std::vector<std::string> keep = model_range(m, a, b);
		assert_int_equal(pmtx_list_trim(tx, l, a, b), 0);
		m.assign(keep.begin(), keep.end());
	}

	void lrange()
	{
		int64_t a = any_index(g, m), b = any_index(g, m);
		if (g.below(4) == 0)
			b = INT64_MAX - (int64_t)g.below(2);
		if (g.below(8) == 0)
			a = INT64_MIN + (int64_t)g.below(2);
		assert_true(range(tx, l, a, b) == model_range(m, a, b));
	}

	void len()
	{
		uint64_t n;
		assert_int_equal(pmtx_list_len(tx, l, &n), 0);
		assert_int_equal(n, m.size());
	}

	/* One operation, chosen by weight: each runs for a roll below its
	 * bound (out of 100). */
	void step()
	{
		static const std::pair<uint64_t, void (driver::*)()> ops[] = {
			{30, &driver::push},   {45, &driver::pop},
			{53, &driver::index},  {61, &driver::set},
			{69, &driver::insert}, {77, &driver::remove},
			{79, &driver::trim},   {90, &driver::lrange},
			{100, &driver::len}};
		uint64_t k = g.below(100);
		if (m.size() < target / 2 && k >= 50)
			k = 0; /* grow back: a push */
		if (m.size() > 2 * target && k >= 45 && k < 60)
			k = 30; /* shrink: a pop */
		for (const auto &[bound, op] : ops)
			if (k < bound)
				return (this->*op)();
	}
};

/* Batches of 1-8 operations, each batch standalone (tx NULL) or in one
 * transaction of the caller's, a quarter of those aborted; both lists
 * checked after every batch. */
void random_ops(pmtx_runtime rt, uint64_t seed, size_t ops)
{
	fixture f = make(rt);
	rng g(seed);
	model m[2];
	size_t done = 0;
	while (done < ops) {
		int w = (int)g.below(2);
		size_t k = 1 + g.below(8);
		if (g.below(2)) {
			driver d{g, f.l[w], m[w], nullptr, 300};
			for (size_t i = 0; i < k; i++)
				d.step();
		} else {
			model saved[2] = {m[0], m[1]};
			pmtx_tx *tx;
			assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
			for (size_t i = 0; i < k; i++) {
				int x = (int)g.below(2);
				driver d{g, f.l[x], m[x], tx, 300};
				d.step();
			}
			check_same(tx, f.l[0], m[0]);
			if (g.below(4) == 0) {
				assert_int_equal(pmtx_abort(tx), 0);
				m[0] = saved[0];
				m[1] = saved[1];
			} else {
				assert_int_equal(pmtx_commit(tx), 0);
			}
		}
		done += k;
		check_same(nullptr, f.l[0], m[0]);
		check_same(nullptr, f.l[1], m[1]);
	}
	reopen(f);
	check_same(nullptr, f.l[0], m[0]);
	check_same(nullptr, f.l[1], m[1]);
	drop(f);
}

void list_matches_deque_on_random_ops(void **state)
{
	(void)state;
	conttest::random_ops_everywhere(random_ops, 0x1157);
}

/* ---- lines written back ---- */

/* Cache lines written back (and barriers) by a push of a 1-byte element
 * into a chunk with room, and by a pop, beyond those of a transaction
 * that writes one word of the root (the commit's own, and one line of
 * data). A push writes three lines (the element's, the chunk header's,
 * the list header's), a pop two (no data); undo adds a log record for
 * each, redo packs them into its log. Exact: the element does not cross
 * a line. */
struct line_costs {
	pmtx_runtime rt;
	uint64_t push_lines, push_barriers, pop_lines, pop_barriers;
};

void push_writes_back_three_lines_pop_two(void **state)
{
	(void)state;
	static const line_costs want[] = {
		{PMTX_RT_UNDO, 4, 2, 2, 1},
		{PMTX_RT_REDO, 3, 0, 2, 0},
		{PMTX_RT_REDO_ASYNC, 3, 0, 2, 0},
		{PMTX_RT_TWIN, 2, 0, 1, 0},
	};
	for (const line_costs &w : want) {
		fixture f = make(w.rt);
		conttest::cost base, push, pop;
		assert_int_equal(pmtx_list_push(nullptr, f.l[0], PMTX_LIST_TAIL,
		                                "a", 1), 0);
		for (int rep = 0; rep < 3; rep++) { /* steady state */
			uint64_t v = (uint64_t)rep + 1;
			pmtx_tx *tx;
			tu_count_start();
			assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
			assert_int_equal(pmtx_write(tx, &f.rp->word[0], &v,
			                            sizeof(v)), 0);
			assert_int_equal(pmtx_commit(tx), 0);
			base = conttest::counted();
			push = conttest::cost_of([&] {
				assert_int_equal(pmtx_list_push(nullptr, f.l[0],
				                                PMTX_LIST_TAIL, "b",
				                                1), 0);
			});
			pop = conttest::cost_of([&] {
				assert_int_equal(pmtx_list_pop(nullptr, f.l[0],
				                               PMTX_LIST_TAIL,
				                               nullptr, 0, nullptr),
				                 0);
			});
		}
		print_message("%-10s one word: %s; push: %s; pop: %s\n",
		              pmtx_runtime_name(w.rt), base.text().c_str(),
		              push.text().c_str(), pop.text().c_str());
		assert_int_equal(push.lines, base.lines + w.push_lines);
		assert_int_equal(push.barriers, base.barriers + w.push_barriers);
		assert_int_equal(pop.lines, base.lines + w.pop_lines);
		assert_int_equal(pop.barriers, base.barriers + w.pop_barriers);
		drop(f);
	}
}

/* ---- atomicity across containers ---- */

void three_ops(fixture &f, pmtx_tx *tx)
{
	char buf[16];
	size_t n;
	assert_int_equal(pmtx_list_pop(tx, f.l[0], PMTX_LIST_HEAD, buf,
	                               sizeof(buf), &n), 0);
	assert_int_equal(pmtx_list_push(tx, f.l[1], PMTX_LIST_TAIL, buf, n),
	                 0);
	std::string s(100, 'z');
	assert_int_equal(pmtx_str_set(f.r, tx, &f.rp->s, s.data(), s.size()),
	                 0);
}

void check_state(fixture &f, const model &a, const model &b,
                 const std::string &s)
{
	check_same(nullptr, f.l[0], a);
	check_same(nullptr, f.l[1], b);
	pmtx_bytes v;
	assert_int_equal(pmtx_str_get(f.r, nullptr, &f.rp->s, &v), 0);
	assert_true(str(v) == s);
}

void one_transaction_moves_an_element_and_sets_a_string(void **state)
{
	(void)state;
	for (size_t i = 0; i < conttest::nruntimes; i++) {
		fixture f = make(conttest::runtimes[i]);
		model a, b;
		push_numbered(f.l[0], "e", 100, &a);
		assert_int_equal(pmtx_str_set(f.r, nullptr, &f.rp->s, "old", 3),
		                 0);
		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		three_ops(f, tx);
		assert_int_equal(pmtx_abort(tx), 0);
		check_state(f, a, b, "old");
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		three_ops(f, tx);
		assert_int_equal(pmtx_commit(tx), 0);
		b.push_back(a.front());
		a.pop_front();
		check_state(f, a, b, std::string(100, 'z'));
		reopen(f);
		check_state(f, a, b, std::string(100, 'z'));
		drop(f);
	}
}

/* ---- bad input ---- */

int never(const pmtx_bytes *, void *)
{
	fail_msg("called");
	return 1;
}

void bad_calls(fixture &f, pmtx_tx *tx)
{
	pmtx_list *l = f.l[0];
	pmtx_bytes v;
	uint64_t removed = 7;
	const size_t big = PMTX_CONT_BYTES_MAX + 1;
	assert_int_equal(pmtx_list_push(tx, l, 2, "x", 1), PMTX_E_INVAL);
	assert_int_equal(pmtx_list_push(tx, l, -1, "x", 1), PMTX_E_INVAL);
	assert_int_equal(pmtx_list_push(tx, l, 0, "x", big), PMTX_E_TOO_BIG);
	assert_int_equal(pmtx_list_push(tx, nullptr, 0, "x", 1), PMTX_E_INVAL);
	assert_int_equal(pmtx_list_pop(tx, l, 7, nullptr, 0, nullptr),
	                 PMTX_E_INVAL);
	assert_int_equal(pmtx_list_pop(tx, f.l[1], PMTX_LIST_HEAD, nullptr, 0,
	                               nullptr), PMTX_E_NOT_FOUND);
	assert_int_equal(pmtx_list_index(tx, l, 11, &v), PMTX_E_NOT_FOUND);
	assert_int_equal(pmtx_list_index(tx, l, -12, &v), PMTX_E_NOT_FOUND);
	assert_int_equal(pmtx_list_index(tx, l, INT64_MIN, &v),
	                 PMTX_E_NOT_FOUND);
	assert_int_equal(pmtx_list_set(tx, l, 11, "y", 1), PMTX_E_NOT_FOUND);
	assert_int_equal(pmtx_list_set(tx, l, 0, "y", big), PMTX_E_TOO_BIG);
	assert_int_equal(pmtx_list_insert(tx, l, "nope", 4, 0, "y", 1),
	                 PMTX_E_NOT_FOUND);
	assert_int_equal(pmtx_list_insert(tx, l, "e1", 2, 0, "y", big),
	                 PMTX_E_TOO_BIG);
	assert_int_equal(pmtx_list_remove(tx, l, "nope", 4, 0, &removed), 0);
	assert_int_equal(removed, 0);
	assert_int_equal(pmtx_list_trim(tx, l, 0, -1), 0);
	assert_int_equal(pmtx_list_trim(tx, l, -100, 100), 0);
	assert_int_equal(pmtx_list_range(tx, l, 0, -1, nullptr, nullptr),
	                 PMTX_E_INVAL);
	assert_int_equal(pmtx_list_range(tx, l, 5, 4, never, nullptr), 0);
	assert_int_equal(pmtx_list_range(tx, l, 11, 20, never, nullptr), 0);
	assert_int_equal(pmtx_list_range(tx, f.l[1], 0, -1, never, nullptr),
	                 0);
}

void bad_input_changes_nothing(void **state)
{
	(void)state;
	for (size_t i = 0; i < conttest::nruntimes; i++) {
		fixture f = make(conttest::runtimes[i]);
		model m;
		push_numbered(f.l[0], "e", 10, &m);
		conttest::writes_nothing(f.r, f.path,
		                         [&] { bad_calls(f, nullptr); });
		check_same(nullptr, f.l[0], m);
		/* In a transaction: it goes on, and its writes commit. */
		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		assert_int_equal(pmtx_list_push(tx, f.l[0], PMTX_LIST_HEAD, "h",
		                                1), 0);
		m.push_front("h");
		bad_calls(f, tx);
		check_same(tx, f.l[0], m);
		assert_int_equal(pmtx_commit(tx), 0);
		check_same(nullptr, f.l[0], m);
		drop(f);
	}
}

void an_offset_that_names_no_list_is_refused(void **state)
{
	(void)state;
	fixture f = make(PMTX_RT_UNDO);
	pmtx_list *l;
	pmtx_off bad[5];
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
	void *p;
	assert_int_equal(pmtx_zalloc(tx, 64, &bad[0]), 0); /* zeros */
	assert_int_equal(pmtx_alloc(tx, 64, &bad[1]), 0);
	p = pmtx_ptr(f.r, bad[1]);
	memset(p, 0x5a, 64);
	pmtx_flush(f.r, p, 64);
	assert_int_equal(pmtx_commit(tx), 0);
	bad[2] = f.rp->list[0] + 16;      /* inside a list's header */
	bad[3] = 0;
	bad[4] = pmtx_region_size(f.r) + 4096;
	for (pmtx_off off : bad) {
		assert_int_equal(pmtx_list_open(f.r, off, nullptr, &l),
		                 PMTX_E_NOT_CONTAINER);
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		assert_int_equal(pmtx_list_destroy(tx, off),
		                 PMTX_E_NOT_CONTAINER);
		assert_int_equal(pmtx_commit(tx), 0);
	}
	/* destroy frees every block of the list, and only those */
	pmtx_heap_stats st0, st1;
	assert_int_equal(pmtx_heap_check(f.r, &st0), 0);
	for (int k = 0; k < 500; k++)
		assert_int_equal(pmtx_list_push(nullptr, f.l[1], k & 1,
		                                "0123456789abcdef", 16), 0);
	pmtx_list_close(f.l[1]);
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_list_destroy(tx, f.rp->list[1]), 0);
	pmtx_off zero = 0;
	assert_int_equal(pmtx_write(tx, &f.rp->list[1], &zero, sizeof(zero)),
	                 0);
	assert_int_equal(pmtx_commit(tx), 0);
	assert_int_equal(pmtx_heap_check(f.r, &st1), 0);
	assert_int_equal(st1.allocated_blocks + 1, st0.allocated_blocks);
	assert_int_equal(pmtx_list_create(nullptr, &zero), PMTX_E_NO_TX);
	pmtx_list_close(f.l[0]);
	assert_int_equal(pmtx_close(f.r), 0);
	unlink(f.path);
}

void copy_on_write_is_refused(void **state)
{
	(void)state;
	fixture f = make(PMTX_RT_UNDO);
	pmtx_list *l;
	pmtx_cont_options o;
	pmtx_cont_options_init(&o);
	o.runtime = PMTX_RT_COW;
	assert_int_equal(pmtx_list_open(f.r, f.rp->list[0], &o, &l),
	                 PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_list_push(nullptr, f.l[0], 0, "a", 1), 0);
	pmtx_tx *tx;
	pmtx_bytes v;
	uint64_t n;
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_COW, &tx), 0);
	assert_int_equal(pmtx_list_push(tx, f.l[0], 0, "b", 1),
	                 PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_list_push(nullptr, f.l[0], 0, "b", 1),
	                 PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_list_pop(tx, f.l[0], 0, nullptr, 0, nullptr),
	                 PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_list_index(tx, f.l[0], 0, &v),
	                 PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_list_len(nullptr, f.l[0], &n),
	                 PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_list_range(tx, f.l[0], 0, -1, never, nullptr),
	                 PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_list_trim(tx, f.l[0], 1, 0), PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_commit(tx), 0);
	check_same(nullptr, f.l[0], model{"a"});
	drop(f);
}

/* ---- corrupt lists ---- */

/* Offsets of the format (src/containers/list_layout.h), spelled out
 * here so that the test does not read the format through the code it
 * tests. */
enum { H_HEAD = 16, H_TAIL = 24, H_NCHUNKS = 32, H_COUNT = 40 };
enum { C_MAGIC = 0, C_CAP = 4, C_COUNT = 8, C_LO = 12, C_HI = 16,
       C_NEXT = 32, C_DATA = 40 };

/* The region's first byte (pmtx_ptr refuses offset 0). */
char *base(fixture &f)
{
	return (char *)f.rp - pmtx_off_of(f.r, f.rp);
}

uint64_t word_at(fixture &f, pmtx_off off)
{
	uint64_t v;
	memcpy(&v, base(f) + off, sizeof(v));
	return v;
}

/* Store n bytes at off in a transaction of its own. */
void poke(fixture &f, pmtx_off off, const void *p, size_t n)
{
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_write(tx, base(f) + off, p, n), 0);
	assert_int_equal(pmtx_commit(tx), 0);
}

int count_calls(const pmtx_bytes *, void *arg)
{
	++*static_cast<int *>(arg);
	return 0;
}

/* The checker finds the damage; range meets it (or, for a cycle past
 * the tail, which it never follows, reads the 200 elements right). */
void expect_corrupt(fixture &f, bool range_meets_it)
{
	char msg[256];
	pmtx_bytes v;
	int calls = 0;
	assert_int_equal(list_check(f.l[0], msg, sizeof(msg)), PMTX_E_CORRUPT);
	assert_true(msg[0] != 0);
	int rc = pmtx_list_range(nullptr, f.l[0], 0, -1, count_calls, &calls);
	if (range_meets_it) {
		assert_int_equal(rc, PMTX_E_CORRUPT);
	} else {
		assert_int_equal(rc, 0);
		assert_int_equal(calls, 200);
	}
	/* every operation answers, none crashes (most say CORRUPT) */
	for (int64_t i : {0, 1, 5, 40, -1, -2})
		(void)pmtx_list_index(nullptr, f.l[0], i, &v);
	for (int end : {0, 1}) {
		char buf[64];
		size_t n;
		(void)pmtx_list_push(nullptr, f.l[0], end, "zz", 2);
		(void)pmtx_list_pop(nullptr, f.l[0], end, buf, sizeof(buf), &n);
	}
	uint64_t removed;
	(void)pmtx_list_insert(nullptr, f.l[0], "nope", 4, 1, "q", 1);
	(void)pmtx_list_remove(nullptr, f.l[0], "nope", 4, 0, &removed);
	(void)pmtx_list_set(nullptr, f.l[0], 30, "q", 1);
	(void)pmtx_list_trim(nullptr, f.l[0], 1, -2);
}

/* A word of a list's blocks made wrong: a field of its second chunk (4
 * bytes) set to value, or a count of its header (8 bytes) moved by it. */
struct bad_word {
	bool chunk;
	unsigned field;
	int64_t value;
};

const bad_word bad_words[] = {
	{true, C_MAGIC, 0x12345678}, /* a chunk's magic */
	{true, C_HI, 5000},          /* hi past the data area */
	{true, C_COUNT, 4000},       /* count larger than the bytes can hold */
	{true, C_CAP, 2000},         /* cap larger than the block */
	{false, H_COUNT, 1},         /* the header counts an element too many */
	{false, H_NCHUNKS, -1},      /* the header counts a chunk too few */
};
const int nbad_words = sizeof(bad_words) / sizeof(bad_words[0]);

void a_corrupt_list_reads_as_corrupt(void **state)
{
	(void)state;
	enum { LINK_OUT = nbad_words, LONG_LENGTH, CYCLE, FREE_BLOCK, CASES };
	for (int which = 0; which < CASES; which++) {
		fixture f = make(PMTX_RT_UNDO);
		push_numbered(f.l[0], "element-", 200);
		char msg[256];
		assert_int_equal(list_check(f.l[0], msg, sizeof(msg)), 0);
		pmtx_off h = f.rp->list[0], head = word_at(f, h + H_HEAD);
		pmtx_off second = word_at(f, head + C_NEXT);
		if (which < nbad_words) {
			const bad_word &b = bad_words[which];
			if (b.chunk) {
				uint32_t w = (uint32_t)b.value;
				poke(f, second + b.field, &w, 4);
			} else {
				uint64_t v = word_at(f, h + b.field) + b.value;
				poke(f, h + b.field, &v, 8);
			}
		}
		switch (which) {
		case LINK_OUT: { /* a link out of the region */
			uint64_t v = pmtx_region_size(f.r) + 64;
			poke(f, head + C_NEXT, &v, 8);
			break;
		}
		case LONG_LENGTH: /* a length that is not the shortest form */
			poke(f, second + C_DATA + (uint32_t)word_at(f, second + C_LO),
			     "\x80\x00", 2);
			break;
		case CYCLE: /* the tail links back to the head */
			poke(f, word_at(f, h + H_TAIL) + C_NEXT, &head, 8);
			break;
		case FREE_BLOCK: { /* a free block that looks like a chunk */
			pmtx_tx *tx;
			pmtx_off fb;
			assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
			assert_int_equal(pmtx_alloc(tx, 1008, &fb), 0);
			char *p = (char *)pmtx_ptr(f.r, fb);
			memcpy(p, pmtx_ptr(f.r, second), 1008);
			pmtx_flush(f.r, p, 1008);
			assert_int_equal(pmtx_commit(tx), 0);
			assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
			assert_int_equal(pmtx_free(tx, fb), 0);
			assert_int_equal(pmtx_commit(tx), 0);
			poke(f, head + C_NEXT, &fb, 8);
			break;
		}
		}
		expect_corrupt(f, which != CYCLE);
		drop(f);
	}
}

/* ---- space ---- */

int add_block(pmtx_off, size_t usable, void *arg)
{
	*static_cast<uint64_t *>(arg) += usable + 16; /* + block header */
	return 0;
}

/* Bytes of the blocks the application holds (pmtx's logs left out). */
uint64_t user_bytes(pmtx_region *r)
{
	uint64_t n = 0;
	assert_int_equal(pmtx_heap_walk(r, add_block, &n), 0);
	return n;
}

/* A short element costs its bytes, its length's byte and its share of
 * the chunk's header and block. */
void short_elements_cost_little_more_than_their_bytes(void **state)
{
	(void)state;
	const size_t n = tu_long_mode() ? 1000000 : 200000, batch = 1000;
	fixture f = make(PMTX_RT_REDO, 256 << 20);
	uint64_t b0 = user_bytes(f.r);
	char v[16];
	for (size_t i = 0; i < n; i += batch) {
		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		for (size_t k = 0; k < batch; k++) {
			snprintf(v, sizeof(v), "%015zu", i + k);
			assert_int_equal(pmtx_list_push(tx, f.l[0],
			                                PMTX_LIST_TAIL, v, 16), 0);
		}
		assert_int_equal(pmtx_commit(tx), 0);
	}
	double per = (double)(user_bytes(f.r) - b0) / (double)n;
	print_message("%zu elements of 16 bytes: %.2f bytes each (heap "
	              "blocks, headers included)\n", n, per);
	assert_true(per < 18.5);
	pmtx_bytes b;
	assert_int_equal(pmtx_list_index(nullptr, f.l[0], (int64_t)n / 2, &b),
	                 0);
	snprintf(v, sizeof(v), "%015zu", n / 2);
	assert_true(str(b) == std::string(v, 16));
	drop(f);
}

/* ---- the block walk (list_walk) ---- */

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

/* The blocks list_walk reports for both lists of f. */
tu_offs walked(fixture &f)
{
	tu_offs used = {nullptr, 0, 0};
	for (int i = 0; i < 2; i++)
		assert_int_equal(list_walk(f.l[i], push_off, &used), 0);
	return used;
}

/* A word of the list at off set to v, and list_walk refuses the list
 * before it reports any block; then the word is put back. */
void walk_refuses(fixture &f, pmtx_off off, uint64_t v, size_t n)
{
	uint64_t keep = word_at(f, off);
	poke(f, off, &v, n);
	assert_int_equal(pmtx_drain(f.r), 0); /* redo-async applies */
	tu_offs used = {nullptr, 0, 0};
	assert_int_equal(list_walk(f.l[0], push_off, &used), PMTX_E_CORRUPT);
	assert_int_equal(used.n, 0);
	poke(f, off, &keep, n);
	assert_int_equal(pmtx_drain(f.r), 0);
}

/* list_walk reports every block of a list of many chunks once (its
 * header, its chunks, a chunk of its own for an element larger than a
 * standard one): they are exactly the heap's blocks, under every
 * runtime. It stops at fn's first nonzero value, refuses a chain that
 * does not check, and once both lists are destroyed the heap is
 * empty. */
void walk_reports_every_block_of_the_list_once(void **state)
{
	(void)state;
	for (pmtx_runtime rt : conttest::runtimes) {
		fixture f = make(rt);
		push_numbered(f.l[0], "element-", 3000);
		push_numbered(f.l[1], "other-", 100);
		std::string big(3000, 'b');
		assert_int_equal(pmtx_list_push(nullptr, f.l[0], PMTX_LIST_HEAD,
		                                big.data(), big.size()), 0);
		assert_int_equal(pmtx_drain(f.r), 0); /* redo-async applies */
		pmtx_off h = f.rp->list[0];
		uint64_t nchunks = word_at(f, h + H_NCHUNKS);
		assert_true(nchunks > 20);
		tu_offs used = walked(f);
		assert_int_equal(used.n, 1 + nchunks + 1 +
		                         word_at(f, f.rp->list[1] + H_NCHUNKS));
		tu_assert_heap_blocks(f.r, &used, "two lists walked");
		free(used.v);

		int left = 5;
		assert_int_equal(list_walk(f.l[0], stop_at, &left), 7);
		assert_int_equal(left, 0);

		pmtx_off head = word_at(f, h + H_HEAD);
		pmtx_off tail = word_at(f, h + H_TAIL);
		walk_refuses(f, tail + C_NEXT, head, 8); /* a cycle */
		walk_refuses(f, h + H_NCHUNKS, nchunks - 1, 8);
		walk_refuses(f, head + C_NEXT, pmtx_region_size(f.r) + 64, 8);
		walk_refuses(f, word_at(f, head + C_NEXT) + C_MAGIC, 0x1234, 4);
		used = walked(f);
		tu_assert_heap_blocks(f.r, &used, "put back");
		free(used.v);

		close_lists(f);
		pmtx_tx *tx;
		const pmtx_off zero[2] = {0, 0};
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		for (int i = 0; i < 2; i++)
			assert_int_equal(pmtx_list_destroy(tx, f.rp->list[i]), 0);
		assert_int_equal(pmtx_write(tx, f.rp->list, zero, sizeof(zero)),
		                 0);
		assert_int_equal(pmtx_commit(tx), 0);
		assert_int_equal(pmtx_drain(f.r), 0);
		tu_offs none = {nullptr, 0, 0};
		tu_assert_heap_blocks(f.r, &none, "both lists destroyed");
		assert_int_equal(pmtx_close(f.r), 0);
		unlink(f.path);
	}
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(list_matches_deque_on_random_ops),
		cmocka_unit_test(push_writes_back_three_lines_pop_two),
		cmocka_unit_test(one_transaction_moves_an_element_and_sets_a_string),
		cmocka_unit_test(bad_input_changes_nothing),
		cmocka_unit_test(an_offset_that_names_no_list_is_refused),
		cmocka_unit_test(copy_on_write_is_refused),
		cmocka_unit_test(a_corrupt_list_reads_as_corrupt),
		cmocka_unit_test(short_elements_cost_little_more_than_their_bytes),
		cmocka_unit_test(walk_reports_every_block_of_the_list_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
