/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * explore.h - the parts of the crash-state explorer (include/pmtx_explore.h)
 * that its files share: explore.c runs the exploration, check.c checks one
 * crash image, cmdline.c is pmtx_explore_main.
 */
#ifndef PMTX_EXPLORE_INT_H
#define PMTX_EXPLORE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "pmtx_explore.h"

#define EXPLORE_REGION_SIZE (1u << 20) /* workload.region_size 0 */
#define EXPLORE_MAX_WORDS 8192u        /* workload.max_words 0 */
#define EXPLORE_LAYOUT "crashtest"     /* workload.layout NULL */

/* Operations of each thread done and begun before a crash point: the
 * bounds of the atomicity check. */
struct explore_bounds {
	uint64_t done[PMTX_EXPLORE_MAX_THREADS];
	uint64_t started[PMTX_EXPLORE_MAX_THREADS];
};

/* A growable set of heap offsets (the leak check). */
struct explore_offsets {
	pmtx_off *v;
	size_t n, cap;
	int failed; /* out of memory */
};

/* Working memory of the checks, allocated once per exploration. */
struct explore_scratch {
	uint64_t *got, *want; /* words each */
	size_t words;
	struct explore_offsets heap, reach;
};

int explore_scratch_init(struct explore_scratch *s, size_t words);
void explore_scratch_free(struct explore_scratch *s);

/* Every region of an exploration is created and opened with these (its
 * layout, root and sizes from the workload, a twin region under
 * PMTX_RT_TWIN: explore.c E8); the caller sets domain, backend and
 * truncation. */
void explore_region_options(const pmtx_explore_workload *w, pmtx_runtime rt,
                            pmtx_options *o);
size_t explore_region_size(const pmtx_explore_workload *w, pmtx_runtime rt);

/* Check the crash image in the file at path (check.c): 0 if it passes
 * every check, else 1 with the reason in msg. */
int explore_check_image(const pmtx_explore_env *e,
                        const struct explore_bounds *b, const char *path,
                        struct explore_scratch *s, char *msg, size_t len);

/* pmtx_open of a crash image, which waits up to 2 s for a lock that
 * no process of the explorer should hold (check.c K5). */
int explore_open_image(const char *path, const pmtx_options *o,
                       pmtx_region **r);

/* The validated workload fields the engine relies on. */
unsigned explore_nthreads(const pmtx_explore_workload *w);
unsigned explore_runtimes(const pmtx_explore_workload *w);

#endif
