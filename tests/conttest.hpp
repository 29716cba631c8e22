/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conttest.hpp - what the containers' tests share: the runtimes every
 * container must work under, a region made for each, and random byte
 * strings. The tests are C++ so that their models are the standard
 * library's (std::map, std::unordered_map, std::deque, std::string): a
 * model the containers are compared with must not share their code.
 */
#ifndef PMTX_CONTTEST_HPP
#define PMTX_CONTTEST_HPP

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <string>
#include <utility>

extern "C" {
#include <cmocka.h>

#include "testutil.h"
}

#include "pmtx_containers.h"

namespace conttest {

/* Every runtime a container must work under (undo, redo, redo-async,
 * twin, auto), in that order. */
static const pmtx_runtime runtimes[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
                                        PMTX_RT_REDO_ASYNC, PMTX_RT_TWIN,
                                        PMTX_RT_AUTO};
static const size_t nruntimes = sizeof(runtimes) / sizeof(runtimes[0]);

/* A region of size bytes whose default runtime is rt (a twin region for
 * twin), PDOM-1 on the emulated backend; root: root_size bytes. */
static inline pmtx_region *region_for(pmtx_runtime rt, size_t size,
                                      size_t root_size, const char **path)
{
	return tu_create(path, size, root_size, PMTX_PDOM1,
	                 PMTX_BACKEND_EMULATED, rt);
}

/* Random numbers, deterministic from the seed. */
struct rng {
	uint64_t s;
	explicit rng(uint64_t seed) : s(seed) {}
	uint64_t next() { return tu_rand(&s); }
	uint64_t below(uint64_t n) { return n ? next() % n : 0; }
	/* A string of a length drawn from [0, max], bytes from a small
	 * alphabet (so that prefixes and equal keys happen) or any byte. */
	std::string bytes(size_t max, bool small_alphabet = true)
	{
		size_t n = below(max + 1);
		std::string out(n, '\0');
		for (size_t i = 0; i < n; i++)
			out[i] = (char)(small_alphabet ? 'a' + below(4) : below(256));
		return out;
	}
};

static inline std::string str(const pmtx_bytes &b)
{
	return std::string((const char *)b.p, b.n);
}

/* run(rt, seed + i, ops) under runtime i of runtimes: ops random
 * operations, 20,000, or a million in long mode (PMTX_LONG_TESTS=1). */
static inline void random_ops_everywhere(void (*run)(pmtx_runtime rt,
                                                     uint64_t seed,
                                                     size_t ops),
                                         uint64_t seed)
{
	size_t ops = tu_long_mode() ? 1000000 : 20000;
	for (size_t i = 0; i < nruntimes; i++)
		run(runtimes[i], seed + i, ops);
}

/* Cache lines written back and barriers: of what ran between
 * tu_count_start and tu_count, or of one operation (cost_of). */
struct cost {
	uint64_t lines, barriers;
	bool operator==(const cost &o) const
	{
		return lines == o.lines && barriers == o.barriers;
	}
	/* "L lines B barriers", as the tests print it */
	std::string text() const
	{
		return std::to_string(lines) + " lines " +
		       std::to_string(barriers) + " barriers";
	}
};

static inline cost counted()
{
	pmtx_counters c = tu_count();
	return cost{c.flushes, c.barriers};
}

template <typename F> cost cost_of(F op)
{
	tu_count_start();
	op();
	return counted();
}

/* Run bad(), calls that must be refused, and check that they wrote
 * nothing: no line written back, no barrier, the file's bytes as they
 * were. */
template <typename F>
void writes_nothing(pmtx_region *r, const char *path, F bad)
{
	/* redo-async retires earlier commits in the background */
	assert_int_equal(pmtx_drain(r), 0);
	uint64_t h = tu_file_hash(path);
	cost c = cost_of(bad);
	assert_int_equal(c.lines, 0);
	assert_int_equal(c.barriers, 0);
	assert_int_equal(tu_file_hash(path), h);
}

} // namespace conttest

#endif
