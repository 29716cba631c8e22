/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_str.cpp - strings (pmtx_containers.h, src/containers/str.c)
 * against std::string, under every runtime: random sequences of set,
 * append, setrange, read, len, get and clear across the inline/heap
 * boundary and through growth, standalone and inside the caller's
 * transactions (some aborted); no block leaked or shared; appends move
 * a string O(log n) times; bad input, corrupt values and copy-on-write
 * change nothing.
 */
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "conttest.hpp"

namespace {

using conttest::rng;
using conttest::str;

const size_t NSTR = 8;

struct root {
	pmtx_str s[NSTR];
	uint64_t word;
};

struct fixture {
	const char *path;
	pmtx_region *r;
	root *rp;
};

fixture make(pmtx_runtime rt)
{
	fixture f;
	f.r = conttest::region_for(rt, 32 << 20, sizeof(root), &f.path);
	f.rp = static_cast<root *>(pmtx_root(f.r, nullptr));
	return f;
}

void drop(fixture &f)
{
	assert_int_equal(pmtx_close(f.r), 0);
	unlink(f.path);
}

uint64_t blocks(pmtx_region *r)
{
	pmtx_heap_stats st;
	assert_int_equal(pmtx_heap_check(r, &st), 0);
	return st.allocated_blocks;
}

/* Bytes [at, at + n) of the string, read in one call. */
std::string read(fixture &f, pmtx_tx *tx, const pmtx_str *s, size_t at,
                 size_t n)
{
	std::vector<char> buf(n + 1);
	size_t got = 99999;
	assert_int_equal(pmtx_str_read(f.r, tx, s, at, buf.data(), n, &got),
	                 0);
	assert_true(got <= n);
	return std::string(buf.data(), got);
}

std::string get(fixture &f, pmtx_tx *tx, const pmtx_str *s)
{
	pmtx_bytes v;
	assert_int_equal(pmtx_str_get(f.r, tx, s, &v), 0);
	return str(v);
}

void check_same(fixture &f, pmtx_tx *tx, const pmtx_str *s,
                const std::string &m)
{
	size_t n = 12345;
	assert_int_equal(pmtx_str_len(f.r, tx, s, &n), 0);
	assert_int_equal(n, m.size());
	assert_true(get(f, tx, s) == m);
	assert_true(read(f, tx, s, 0, m.size() + 3) == m);
}

std::string value(rng &g)
{
	uint64_t k = g.below(100);
	if (k < 60)
		return g.bytes(20, false); /* around the inline limit */
	if (k < 95)
		return g.bytes(300, false);
	return g.bytes(6000, false);
}

struct driver {
	fixture &f;
	rng &g;
	pmtx_tx *tx;
	std::string *m;

	void step()
	{
		size_t i = g.below(NSTR);
		pmtx_str *s = &f.rp->s[i];
		std::string &x = m[i];
		std::string v;
		size_t at, n;
		switch (g.below(8)) {
		case 0:
			v = value(g);
			assert_int_equal(pmtx_str_set(f.r, tx, s, v.data(),
			                              v.size()), 0);
			x = v;
			break;
		case 1:
		case 2:
			v = g.below(10) ? g.bytes(12, false) : value(g);
			assert_int_equal(pmtx_str_append(f.r, tx, s, v.data(),
			                                 v.size()), 0);
			x += v;
			break;
		case 3:
			at = g.below(8) ? g.below(x.size() + 40) : g.below(4000);
			v = g.bytes(20, false);
			assert_int_equal(pmtx_str_setrange(f.r, tx, s, at,
			                                   v.data(), v.size()), 0);
			if (!v.empty()) { /* SETRANGE: zeros fill a gap */
				if (x.size() < at + v.size())
					x.resize(at + v.size(), '\0');
				x.replace(at, v.size(), v);
			}
			break;
		case 4:
			at = g.below(x.size() + 5);
			n = g.below(30);
			assert_true(read(f, tx, s, at, n) ==
			            (at < x.size() ? x.substr(at, n) : ""));
			break;
		case 5: {
			pmtx_bytes view;
			assert_int_equal(pmtx_str_get(f.r, tx, s, &view), 0);
			assert_true(str(view) == x);
			/* a view outlives reads (of any string) */
			for (size_t j = 0; j < NSTR; j++)
				check_same(f, tx, &f.rp->s[j], m[j]);
			assert_true(str(view) == x);
			break;
		}
		case 6:
			if (g.below(3) == 0) {
				assert_int_equal(pmtx_str_clear(f.r, tx, s), 0);
				x.clear();
				break;
			}
			/* fall through */
		default:
			check_same(f, tx, s, x);
			break;
		}
	}
};

void random_ops(pmtx_runtime rt, uint64_t seed, size_t ops)
{
	fixture f = make(rt);
	uint64_t b0 = blocks(f.r);
	rng g(seed);
	std::string m[NSTR];
	for (size_t done = 0; done < ops;) {
		size_t k = 1 + g.below(8);
		if (g.below(2)) {
			driver d{f, g, nullptr, m};
			for (size_t i = 0; i < k; i++)
				d.step();
		} else {
			std::string saved[NSTR];
			std::copy(m, m + NSTR, saved);
			pmtx_tx *tx;
			assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
			driver d{f, g, tx, m};
			for (size_t i = 0; i < k; i++)
				d.step();
			if (g.below(4) == 0) {
				assert_int_equal(pmtx_abort(tx), 0);
				std::copy(saved, saved + NSTR, m);
			} else {
				assert_int_equal(pmtx_commit(tx), 0);
			}
		}
		done += k;
		for (size_t j = 0; j < NSTR; j++)
			check_same(f, nullptr, &f.rp->s[j], m[j]);
		if (done % 64 < k) { /* one block per heap string, no more */
			uint64_t heap = 0;
			for (size_t j = 0; j < NSTR; j++)
				heap += m[j].size() > PMTX_STR_INLINE_MAX;
			assert_int_equal(blocks(f.r), b0 + heap);
		}
	}
	assert_int_equal(pmtx_close(f.r), 0);
	f.r = tu_open(f.path);
	f.rp = static_cast<root *>(pmtx_root(f.r, nullptr));
	for (size_t j = 0; j < NSTR; j++)
		check_same(f, nullptr, &f.rp->s[j], m[j]);
	drop(f);
}

void strings_match_std_string_on_random_ops(void **state)
{
	(void)state;
	conttest::random_ops_everywhere(random_ops, 0x5731);
}

/* Fifteen bytes stay in the value; sixteen take a block, which goes
 * when the string is short again or cleared. */
void fifteen_bytes_inline_sixteen_in_a_block(void **state)
{
	(void)state;
	for (size_t i = 0; i < conttest::nruntimes; i++) {
		fixture f = make(conttest::runtimes[i]);
		pmtx_str *s = &f.rp->s[0];
		uint64_t b0 = blocks(f.r);
		const std::string a(15, 'a'), b(16, 'b');
		assert_int_equal(pmtx_str_set(f.r, nullptr, s, a.data(), 15), 0);
		assert_int_equal(s->b[15], 15);
		assert_int_equal(blocks(f.r), b0);
		check_same(f, nullptr, s, a);
		assert_int_equal(pmtx_str_append(f.r, nullptr, s, "c", 1), 0);
		assert_int_equal(blocks(f.r), b0 + 1);
		check_same(f, nullptr, s, a + "c");
		assert_int_equal(pmtx_str_set(f.r, nullptr, s, a.data(), 15), 0);
		assert_int_equal(blocks(f.r), b0);
		check_same(f, nullptr, s, a);
		assert_int_equal(pmtx_str_set(f.r, nullptr, s, b.data(), 16), 0);
		assert_int_equal(blocks(f.r), b0 + 1);
		assert_int_equal(pmtx_str_clear(f.r, nullptr, s), 0);
		assert_int_equal(blocks(f.r), b0);
		static const unsigned char zero[16] = {0};
		assert_memory_equal(s->b, zero, 16);
		drop(f);
	}
}

/* n one-byte appends move the string to a new block O(log n) times. */
void appends_move_a_string_log_n_times(void **state)
{
	(void)state;
	fixture f = make(PMTX_RT_REDO);
	pmtx_str *s = &f.rp->s[0];
	uint64_t last = 0, moves = 0;
	std::string m;
	for (int i = 0; i < 20000; i++) {
		char c = (char)('a' + i % 26);
		assert_int_equal(pmtx_str_append(f.r, nullptr, s, &c, 1), 0);
		m += c;
		uint64_t off;
		memcpy(&off, s->b, sizeof(off));
		if (s->b[15] == 0x80 && off != last) {
			moves++;
			last = off;
		}
	}
	check_same(f, nullptr, s, m);
	print_message("20000 appends: %llu moves\n", (unsigned long long)moves);
	assert_true(moves <= 12); /* 15 * 2^11 > 20000 */
	drop(f);
}

/* A view taken after the transaction wrote the string shows what the
 * transaction sees, under every runtime (redo keeps it in DRAM). */
void a_view_in_a_transaction_sees_its_writes(void **state)
{
	(void)state;
	for (size_t i = 0; i < conttest::nruntimes; i++) {
		fixture f = make(conttest::runtimes[i]);
		pmtx_str *s = &f.rp->s[0], *t = &f.rp->s[1];
		const std::string a(100, 'a'), b(12, 'b');
		assert_int_equal(pmtx_str_set(f.r, nullptr, s, a.data(), 100), 0);
		assert_int_equal(pmtx_str_set(f.r, nullptr, t, "x", 1), 0);
		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		assert_int_equal(pmtx_str_setrange(f.r, tx, s, 10, "XYZ", 3), 0);
		assert_int_equal(pmtx_str_set(f.r, tx, t, b.data(), 12), 0);
		pmtx_bytes vs, vt;
		assert_int_equal(pmtx_str_get(f.r, tx, s, &vs), 0);
		assert_int_equal(pmtx_str_get(f.r, tx, t, &vt), 0);
		std::string want = a;
		want.replace(10, 3, "XYZ");
		assert_true(str(vs) == want);
		assert_true(str(vt) == b);
		assert_int_equal(pmtx_commit(tx), 0);
		check_same(f, nullptr, s, want);
		check_same(f, nullptr, t, b);
		drop(f);
	}
}

void bad_calls(fixture &f, pmtx_tx *tx)
{
	pmtx_str *s = &f.rp->s[0];
	pmtx_str dram = {};
	const size_t big = PMTX_CONT_BYTES_MAX + 1;
	size_t n;
	assert_int_equal(pmtx_str_set(f.r, tx, s, "x", big), PMTX_E_TOO_BIG);
	assert_int_equal(pmtx_str_append(f.r, tx, s, "x", big),
	                 PMTX_E_TOO_BIG);
	assert_int_equal(pmtx_str_setrange(f.r, tx, s, PMTX_CONT_BYTES_MAX, "x",
	                                   1), PMTX_E_TOO_BIG);
	assert_int_equal(pmtx_str_setrange(f.r, tx, s, SIZE_MAX, "x", 1),
	                 PMTX_E_TOO_BIG);
	assert_int_equal(pmtx_str_set(f.r, tx, s, nullptr, 3), PMTX_E_INVAL);
	assert_int_equal(pmtx_str_set(nullptr, tx, s, "x", 1), PMTX_E_INVAL);
	assert_int_equal(pmtx_str_set(f.r, tx, &dram, "x", 1), PMTX_E_RANGE);
	assert_int_equal(pmtx_str_len(f.r, tx, &dram, &n), 0);
	assert_int_equal(n, 0);
	/* an empty SETRANGE changes nothing, however far */
	assert_int_equal(pmtx_str_setrange(f.r, tx, s, 1000, "", 0), 0);
	assert_int_equal(pmtx_str_append(f.r, tx, s, "", 0), 0);
	/* a corrupt value: every call says so and writes nothing */
	for (int k = 2; k < (int)NSTR; k++) {
		pmtx_str *bad = &f.rp->s[k];
		pmtx_bytes v;
		char buf[4];
		assert_int_equal(pmtx_str_len(f.r, tx, bad, &n), PMTX_E_CORRUPT);
		assert_int_equal(n, 0);
		assert_int_equal(pmtx_str_get(f.r, tx, bad, &v), PMTX_E_CORRUPT);
		assert_int_equal(pmtx_str_read(f.r, tx, bad, 0, buf, 4, &n),
		                 PMTX_E_CORRUPT);
		assert_int_equal(pmtx_str_set(f.r, tx, bad, "x", 1),
		                 PMTX_E_CORRUPT);
		assert_int_equal(pmtx_str_append(f.r, tx, bad, "x", 1),
		                 PMTX_E_CORRUPT);
		assert_int_equal(pmtx_str_setrange(f.r, tx, bad, 3, "x", 1),
		                 PMTX_E_CORRUPT);
		assert_int_equal(pmtx_str_clear(f.r, tx, bad), PMTX_E_CORRUPT);
	}
}

/* Corrupt values in s[2..7]: an unknown tag, a heap value whose offset
 * is no block, one whose block is shorter than the length, one whose
 * length would fit inline, a misaligned offset, an offset past the
 * region. */
void corrupt_values(fixture &f)
{
	pmtx_tx *tx;
	pmtx_off blk;
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_zalloc(tx, 32, &blk), 0);
	struct { uint64_t off, w1; } v[6] = {
		{0, (uint64_t)0x81 << 56},
		{pmtx_off_of(f.r, f.rp) + 4096 * 16, 100 | (uint64_t)0x80 << 56},
		{blk, 5000 | (uint64_t)0x80 << 56},
		{blk, 10 | (uint64_t)0x80 << 56},
		{blk + 8, 20 | (uint64_t)0x80 << 56},
		{pmtx_region_size(f.r) + 64, 20 | (uint64_t)0x80 << 56},
	};
	for (int k = 0; k < 6; k++)
		assert_int_equal(pmtx_write(tx, &f.rp->s[2 + k], &v[k], 16), 0);
	assert_int_equal(pmtx_commit(tx), 0);
}

void bad_input_changes_nothing(void **state)
{
	(void)state;
	for (size_t i = 0; i < conttest::nruntimes; i++) {
		fixture f = make(conttest::runtimes[i]);
		const std::string a(40, 'a');
		assert_int_equal(pmtx_str_set(f.r, nullptr, &f.rp->s[0],
		                              a.data(), a.size()), 0);
		corrupt_values(f);
		conttest::writes_nothing(f.r, f.path,
		                         [&] { bad_calls(f, nullptr); });
		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
		assert_int_equal(pmtx_str_append(f.r, tx, &f.rp->s[0], "b", 1),
		                 0);
		bad_calls(f, tx);
		assert_int_equal(pmtx_commit(tx), 0);
		check_same(f, nullptr, &f.rp->s[0], a + "b");
		drop(f);
	}
}

void copy_on_write_is_refused(void **state)
{
	(void)state;
	fixture f = make(PMTX_RT_UNDO);
	pmtx_str *s = &f.rp->s[0];
	assert_int_equal(pmtx_str_set(f.r, nullptr, s, "abc", 3), 0);
	pmtx_tx *tx;
	pmtx_bytes v;
	size_t n;
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_COW, &tx), 0);
	assert_int_equal(pmtx_str_set(f.r, tx, s, "x", 1), PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_str_append(f.r, nullptr, s, "x", 1),
	                 PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_str_clear(f.r, tx, s), PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_str_get(f.r, tx, s, &v), PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_str_len(f.r, nullptr, s, &n), PMTX_E_UNSUPPORTED);
	assert_int_equal(pmtx_commit(tx), 0);
	check_same(f, nullptr, s, "abc");
	drop(f);
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(strings_match_std_string_on_random_ops),
		cmocka_unit_test(fifteen_bytes_inline_sixteen_in_a_block),
		cmocka_unit_test(appends_move_a_string_log_n_times),
		cmocka_unit_test(a_view_in_a_transaction_sees_its_writes),
		cmocka_unit_test(bad_input_changes_nothing),
		cmocka_unit_test(copy_on_write_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
