/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hmap.h - the hash map's internal interface, for tests and the
 * explorer's workloads (the public one is pmtx_containers.h).
 */
#ifndef PMTX_HMAP_H
#define PMTX_HMAP_H

#include <stdio.h>

#include "pmtx_containers.h"

/* Walk the whole map against hmap_layout.h's invariants: every entry a
 * heap block of its size, in the bucket and with the tag of its hash,
 * the counts equal to the entries. 0, or PMTX_E_CORRUPT with the first
 * fault in msg. Call with no writer running. */
int hmap_check(pmtx_hmap *m, char *msg, size_t len);
/* Live buckets (nbase + split). */
uint64_t hmap_buckets(pmtx_hmap *m);
/* Maps created from now on in this process take seed as their hash seed
 * instead of one drawn from the clock (0: the clock again): the crash
 * explorer replays a workload, whose buckets must split alike in every
 * run (tools/crashtest/wl_containers.c WC6). */
void hmap_fix_seed(uint64_t seed);
/* fn(off, arg) for every heap block of the map (its header, segment
 * table, segments and entries): fn's first nonzero value, or
 * PMTX_E_CORRUPT where a link or the geometry cannot be followed, or the
 * entries differ from the counts. Call with no writer running. */
int hmap_walk(pmtx_hmap *m, int (*fn)(pmtx_off off, void *arg), void *arg);

#endif
