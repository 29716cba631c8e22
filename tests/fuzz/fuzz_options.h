/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_options.h - the region options the containers' fuzz harnesses
 * share: the emulated backend with no barrier delay and lazy truncation,
 * so that an execution is fast and deterministic.
 */
#ifndef PMTX_FUZZ_OPTIONS_H
#define PMTX_FUZZ_OPTIONS_H

#include "pmtx.h"

/* Those options, with a root of root_size bytes and ndesc descriptors. */
static inline pmtx_options fuzz_options(size_t root_size, unsigned ndesc)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.backend = PMTX_BACKEND_EMULATED;
	o.barrier_ns = 0;
	o.truncation = PMTX_TRUNC_LAZY;
	o.root_size = root_size;
	o.ndesc = ndesc;
	return o;
}

#endif
