/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cltx_too_big.c - must NOT compile: a cache-line transactional type of
 * 32 bytes (one more than fits) is a compile-time error, in C (the
 * PMTX_CLTX_DECLARE macro) and in C++ (pmtx::cltx<T>, when compiled with
 * -x c++). CTest compiles it four ways (tests/CMakeLists.txt): as is, C and
 * C++, expecting the "too large" diagnostic; and with -DCLTX_FITS (31
 * bytes), expecting success, which shows the failure comes from the size
 * check and not from anything else in this file.
 */
#include <stdint.h>

#ifdef CLTX_FITS
#define PAYLOAD 31
#else
#define PAYLOAD 32
#endif

struct payload {
	uint8_t bytes[PAYLOAD];
};

#ifdef __cplusplus
#include "pmtx_cltx.hpp"

int cltx_too_big_size(void);
int cltx_too_big_size(void)
{
	return (int)sizeof(pmtx::cltx<payload>);
}
#else
#include "pmtx_cltx.h"

PMTX_CLTX_DECLARE(payload_line, struct payload)

int cltx_too_big_size(void);
int cltx_too_big_size(void)
{
	return (int)sizeof(struct payload_line);
}
#endif
