/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * workloads.h - the built-in workloads of `pmtx crashtest` (workloads.c)
 * and the subcommand itself (cmd.c), over the public explorer API
 * (pmtx_explore.h).
 */
#ifndef PMTX_CT_WORKLOADS_H
#define PMTX_CT_WORKLOADS_H

#include <stddef.h>

#include <pmtx_explore.h>

/* sps, bank, list, abort, mt, big, handoff. */
extern const pmtx_explore_workload *const ct_workloads[];
extern const size_t ct_nworkloads;
/* The containers' workloads (wl_containers.c): hmap, map, clist, str,
 * cross.
 * `pmtx crashtest --containers` runs them all; --workload names one. */
extern const pmtx_explore_workload *const ct_cont_workloads[];
extern const size_t ct_ncont_workloads;

/* What the workload files share (workloads.c): the end of a workload's
 * transaction (commit it, or, after a failure rc, abort it and return
 * rc), and splitmix64's finaliser, a well-mixed 64-bit hash of x from
 * which the workloads derive every choice. */
int ct_tx_end(pmtx_tx *tx, int rc);
uint64_t ct_mix64(uint64_t x);

/* `pmtx crashtest ARGS`: argv holds the arguments after "crashtest". */
int ct_main(int argc, char **argv);

#endif
