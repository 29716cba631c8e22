/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cltx_cpp.cpp - the C++ wrapper pmtx::cltx<T> (include/pmtx_cltx.hpp)
 * on the seed's Figure 2 bounded buffer, written as an ordinary class:
 * const calls read the valid half, every call through tx() is one
 * transaction with one commit, update() runs several calls as one, and an
 * exception aborts. The protocol itself is tested in test_cltx.c.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdexcept>
#include <unistd.h>

extern "C" {
#include <cmocka.h>

#include "testutil.h"
}

#include "pmtx_cltx.hpp"

namespace {

/* Figure 2, unchanged but for the 29-slot positions of examples/bbuf.c. */
class BoundedBuffer {
	static constexpr int S = 29;
	char buf[S];
	uint8_t in, out; /* modulo 2 * S */

    public:
	unsigned size() const { return (unsigned)(in + 2 * S - out) % (2 * S); }
	bool addByte(char data)
	{
		if (size() == S)
			return false;
		buf[in % S] = data;
		in = (uint8_t)((in + 1) % (2 * S));
		return true;
	}
	char getByte()
	{
		if (size() == 0)
			return 0;
		char r = buf[out % S];
		out = (uint8_t)((out + 1) % (2 * S));
		return r;
	}
	void addOrThrow(char data)
	{
		addByte(data); /* modified, then fails half way */
		throw std::runtime_error("after the store");
	}
};

typedef pmtx::cltx<BoundedBuffer> Line;

struct fixture {
	const char *path;
	pmtx_region *r;
	Line *b;
};

fixture make()
{
	fixture f;
	f.r = tu_create(&f.path, 8 << 20, PMTX_CLTX_ROOM(1), PMTX_PDOM1,
	                PMTX_BACKEND_HARDWARE, PMTX_RT_UNDO);
	f.b = static_cast<Line *>(pmtx_cltx_align(pmtx_root(f.r, nullptr)));
	return f;
}

void reopen(fixture &f)
{
	assert_int_equal(pmtx_close(f.r), 0);
	f.r = tu_open(f.path);
	f.b = static_cast<Line *>(pmtx_cltx_align(pmtx_root(f.r, nullptr)));
}

void drop(fixture &f)
{
	assert_int_equal(pmtx_close(f.r), 0);
	unlink(f.path);
}

void wrapper_is_one_trivial_line(void **)
{
	static_assert(sizeof(Line) == 64 && alignof(Line) == 64, "one line");
	static_assert(std::is_trivially_copyable<Line>::value, "trivial");
	static_assert(std::is_standard_layout<Line>::value, "C layout");
}

void each_call_through_tx_is_one_transaction(void **)
{
	fixture f = make();
	const unsigned char *bytes = reinterpret_cast<unsigned char *>(f.b);
	for (int i = 0; i < 29; i++) {
		unsigned idx = bytes[32 + sizeof(BoundedBuffer)] & 1u;
		tu_count_start();
		int st = -1;
		assert_true(f.b->tx(f.r, &st)->addByte((char)('a' + i)));
		pmtx_counters c = tu_count();
		assert_int_equal(st, 0);
		assert_int_equal(c.barriers, PMTX_CLTX_BARRIERS);
		assert_int_equal(c.flushes, PMTX_CLTX_BARRIERS);
		assert_int_equal(bytes[32 + sizeof(BoundedBuffer)] & 1u,
		                 idx ^ 1u);
		assert_int_equal((*f.b)->size(), (unsigned)i + 1);
	}
	assert_false(f.b->tx(f.r)->addByte('!')); /* full: committed as is */
	reopen(f);
	assert_int_equal(f.b->get().size(), 29u);
	for (int i = 0; i < 29; i++)
		assert_int_equal(f.b->tx(f.r)->getByte(), 'a' + i);
	assert_int_equal((*f.b)->size(), 0u);
	drop(f);
}

void const_calls_read_the_valid_half(void **)
{
	fixture f = make();
	f.b->tx(f.r)->addByte('x');
	BoundedBuffer *w = f.b->begin();
	w->addByte('y');
	w->addByte('z');
	assert_int_equal(w->size(), 3u);
	assert_int_equal((*f.b)->size(), 1u); /* working half not visible */
	f.b->abort();
	assert_int_equal(f.b->get().size(), 1u);
	drop(f);
}

void update_runs_several_calls_as_one_transaction(void **)
{
	fixture f = make();
	tu_count_start();
	int rc = f.b->update(f.r, [](BoundedBuffer &x) {
		for (char c = 'a'; c <= 'j'; c++)
			x.addByte(c);
		x.getByte();
	});
	assert_int_equal(rc, 0);
	assert_int_equal(tu_count().barriers, PMTX_CLTX_BARRIERS);
	reopen(f);
	assert_int_equal((*f.b)->size(), 9u);
	assert_int_equal(f.b->tx(f.r)->getByte(), 'b');
	drop(f);
}

void an_exception_aborts(void **)
{
	fixture f = make();
	f.b->tx(f.r)->addByte('x');
	tu_count_start();
	bool thrown = false;
	try {
		f.b->tx(f.r)->addOrThrow('y');
	} catch (const std::runtime_error &) {
		thrown = true;
	}
	assert_true(thrown);
	thrown = false;
	try {
		f.b->update(f.r, [](BoundedBuffer &x) { x.addOrThrow('z'); });
	} catch (const std::runtime_error &) {
		thrown = true;
	}
	assert_true(thrown);
	assert_int_equal(tu_count().barriers, 0);
	assert_int_equal((*f.b)->size(), 1u);
	drop(f);
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wrapper_is_one_trivial_line),
		cmocka_unit_test(each_call_through_tx_is_one_transaction),
		cmocka_unit_test(const_calls_read_the_valid_half),
		cmocka_unit_test(update_runs_several_calls_as_one_transaction),
		cmocka_unit_test(an_exception_aborts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
