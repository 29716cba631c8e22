/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sim.h - the simulated-persistence ("sim") backend: a durable image kept
 * beside the working mapping, and the crash images a power failure could
 * leave, per the x86 persistency model. See sim.c for the model.
 *
 * Use: sim_new() for a region length, persist_override_ops(&sim_ops, sim)
 * before pmtx_open()/pmtx_create() (the region attaches at persist_init),
 * and trace_set_sink(sim_trace_sink, sim) so that the library's tracked
 * stores reach it. At each barrier, before the barrier takes effect, the
 * sim calls its point callback: the moment a crash is simulated. There,
 * sim_snapshot() describes every crash image; sim_image() builds one.
 */
#ifndef PMTX_SIM_H
#define PMTX_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "persist.h"

struct sim;

/* One store to one line: the 8-byte words it set (bit i = word i) and
 * their values just after it. A store is atomic per word only. */
struct sim_store {
	uint64_t v[8];
	uint8_t mask;
	uint8_t naked; /* found by diffing, not reported by the library: 1;
	                * 2 persists only whole (sim.c S9) */
	uint8_t pad[6];
};

/* A serialised model of the crash state (all of it position independent):
 *   struct sim_snap
 *   PDOM-0/1: nlines x { uint32_t line, nstores } then nstores stores
 *   PDOM-2:   nstores x struct sim_gstore (global store order)
 * The durable image itself is the sim's durable buffer. */
struct sim_snap {
	uint64_t len;      /* region bytes */
	uint32_t domain;   /* pmtx_domain */
	uint32_t nlines;   /* lines with pending stores (PDOM-0/1) */
	uint64_t nstores;  /* pending stores in all */
	uint64_t bytes;    /* size of the snapshot, this header included */
	uint64_t point;    /* barrier number (1-based) of the crash point */
};

struct sim_gstore {
	uint32_t line;
	uint32_t word;
	uint64_t v;
};

struct sim_line_hdr {
	uint32_t line;
	uint32_t nstores;
};

/* Called with the sim locked, just before barrier number `point` (1-based)
 * takes effect; also by sim_final(). */
typedef void (*sim_point_fn)(struct sim *s, uint64_t point, void *arg);

/* durable: len bytes for the durable image (e.g. shared memory), or NULL
 * to allocate. Returns NULL on allocation failure. */
struct sim *sim_new(size_t len, void *durable);
void sim_free(struct sim *s);
void sim_set_point_fn(struct sim *s, sim_point_fn fn, void *arg);
/* pmemcheck-like checking (sim.c "Checks"): reports on stderr. */
void sim_set_checks(struct sim *s, int on);
/* The durable buffer given to sim_new already holds the durable image:
 * attach keeps it, and every word where the region's mapping differs
 * from it is a store not yet durable, pending from the start (a process
 * that died left it in the cache, explore.c E9). Call before attach. */
void sim_preset_durable(struct sim *s);
/* Barriers seen so far. */
uint64_t sim_barriers(const struct sim *s);
/* Snapshot the current crash state into buf (cap bytes): returns the size
 * needed; if that exceeds cap nothing useful was written. Call from the
 * point callback (sim locked) or with no thread running. */
size_t sim_snapshot(struct sim *s, void *buf, size_t cap, uint64_t point);
/* The simulated end of the run: a crash point after the last barrier. */
void sim_final(struct sim *s);

/* Checker statistics (sim_set_checks). */
struct sim_check_stats {
	uint64_t unflushed_at_commit; /* tracked stores not flushed at commit */
	uint64_t dirty_at_commit;     /* naked dirty lines at commit */
	uint64_t redundant_flushes;   /* flushes of lines with nothing new */
	uint64_t flushes;             /* lines flushed */
};
void sim_check_stats(const struct sim *s, struct sim_check_stats *out);

extern const persist_ops sim_ops;
/* Trace sink (trace_set_sink) that feeds tracked stores and transaction
 * events to the sim given as arg. */
void sim_trace_sink(void *arg, unsigned type, const char *base,
                    const void *a, uint64_t n, uint32_t aux, int32_t status);

/* ---- crash images of a snapshot (no sim needed) ---- */
/* Number of distinct crash images, saturated at UINT64_MAX. */
uint64_t sim_image_count(const struct sim_snap *snap);
/* Build image id: out (snap->len bytes) := durable + the choice of each
 * line. If sample is 0, id < sim_image_count() picks the image in mixed
 * radix; else id seeds a random choice (biased: half the samples vary one
 * line and keep every other line all-or-nothing). */
void sim_image(const struct sim_snap *snap, const uint8_t *durable,
               uint64_t id, int sample, uint64_t seed, uint8_t *out);
/* The image every pending store reaches: what a process saw when it
 * died (out: snap->len bytes). */
void sim_image_visible(const struct sim_snap *snap, const uint8_t *durable,
                       uint8_t *out);

#endif
