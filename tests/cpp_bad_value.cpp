/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpp_bad_value.cpp - a container of a type pmtx cannot copy as bytes
 * (std::vector: it owns heap memory) must not compile; with CPP_GOOD the
 * same program holds a trivially copyable struct and compiles.
 */
#include <vector>

#include "pmtx.hpp"

struct point {
	int x, y;
};

#ifdef CPP_GOOD
using value = point;
#else
using value = std::vector<int>;
#endif

int main()
{
	pmtx::list<value> *l = nullptr;
	if (l)
		l->push_back(value());
	return 0;
}
