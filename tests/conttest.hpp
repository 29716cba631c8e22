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

} // namespace conttest

#endif
