/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmtx_cltx.h - cache-line transactions (seed 003: Köppen et al., "Cache-Line
 * Transactions", PLOS '19). Header only; needs pmtx.h for flush and barrier.
 *
 * An object whose data fits in half a cache line minus one byte (at most
 * PMTX_CLTX_MAX = 31 bytes) lives in one 64-byte-aligned line, used as a
 * double buffer:
 *
 *   byte 0                     32                          63
 *        | half 0 (T) ... pad  | half 1 (T) | index | pad  |
 *
 * The index byte sits right after half 1 (offset 32 + sizeof(T) <= 63).
 * Half (index & 1) is the VALID half, the other one the WORKING half.
 *
 *   begin   copy the valid half to the working half; return the working half
 *   write   plain stores to the working half, nothing else
 *   commit  compiler barrier; index ^= 1; flush the line; barrier
 *           -> exactly 1 persist barrier and 1 flushed line
 *   abort   nothing: the working half is ignored (no store, no barrier)
 *
 * There is no log and no recovery: whatever a crash leaves in the line, the
 * half the persisted index names is a committed value. Cache-line
 * transactions are an object kind of their own; they use no descriptor and
 * no log, work in any region, and can be run inside or outside a pmtx
 * transaction (they are not part of it: an enclosing pmtx_abort() does not
 * undo a committed cache-line transaction).
 *
 * Declare a type with PMTX_CLTX_DECLARE(name, T); it gives struct name and
 * name_init/_valid/_get/_begin/_commit/_abort. A T of more than 31 bytes is
 * a compile-time error (_Static_assert). include/pmtx_cltx.hpp wraps the
 * same layout for C++ (pmtx::cltx<T>). examples/bbuf.c is the seed's
 * 29-byte bounded buffer.
 *
 * Invariants
 *  C1. Between two commits, no store touches the valid half or the index:
 *      begin and the caller write only the working half.
 *  C2. The index flip is a single one-byte store, the last store of the
 *      transaction in program order (compiler barrier before it).
 *  C3. Every persisted image of the line is a program-order prefix of the
 *      stores made to it (see "Same-line ordering" for where this holds).
 *      With C1 and C2: an image whose index is not yet flipped has the old
 *      valid half intact; an image whose index is flipped holds every
 *      store of the working half. Either way the valid half is whole.
 *  C4. The barrier of commit makes the flip durable before commit returns,
 *      so the next begin, which overwrites the then-working (old) half,
 *      can never destroy the only durable committed value.
 *  C5. An all-zero line is a valid line holding an all-zero T (index 0),
 *      so a line in a freshly created root or a pmtx_zalloc'd block needs
 *      no initialisation.
 *
 * Same-line ordering (C3)
 * -----------------------
 * x86-64 (and i386): TSO. Ordinary write-back stores become globally
 *   visible in program order, a line is written back as a unit, and stores
 *   to one line persist in that same order: the seed (section 3) relies on
 *   it, and the Px86 model (Raad et al., POPL 2020) formalises it. This
 *   holds for ADR (PDOM-0/1: eviction or clwb writes back a snapshot of the
 *   line) and for eADR (PDOM-2: the caches are in the persistence domain,
 *   so the crash image is the visible state, itself a TSO prefix). It does
 *   not hold for non-temporal or write-combining stores: write the working
 *   half with ordinary stores only.
 * File backend: a process kill keeps the page cache, so the image is the
 *   visible state (a prefix, as above). On power loss the file holds what
 *   msync or background writeback copied from the page, which is a snapshot
 *   of each line; a 64-byte-aligned line lies inside one 512-byte sector,
 *   and pmtx assumes the device writes a sector atomically (NVMe promises
 *   at least one logical block, AWUPF; a device that tears sectors breaks
 *   this, as it breaks every log-based scheme too).
 * Weakly ordered CPUs (ARM, POWER, RISC-V): stores to one line may become
 *   visible and persist out of program order, so C3 fails. There pmtx
 *   commits in two steps: flush the working half, barrier; then flip the
 *   index, flush, barrier: 2 barriers and 2 flushed lines. The choice is
 *   made at compile time: the two-step commit is used on every target that
 *   is not x86, and wherever PMTX_CLTX_STRICT_ORDER is defined before this
 *   header is included (the tests build both variants).
 *
 * Isolation is the caller's job, as everywhere in pmtx. name_valid() reads
 * only the valid half, so a reader that overlaps ONE running transaction
 * sees the last committed value; but the next begin overwrites the half
 * such a reader may still be reading. Readers and writers of one line must
 * therefore hold a common lock, and at most one transaction may run on a
 * line at a time.
 *
 * Alignment: the line must be 64-byte aligned. pmtx_alloc returns 16-byte
 * aligned blocks, and the root is not 64-byte aligned either, so allocate
 * PMTX_CLTX_ROOM(n) bytes and align up with pmtx_cltx_align() (pointers) or
 * pmtx_cltx_align_off() (offsets; a region is mapped page aligned, so the
 * two agree). pmtx_cltx_zalloc() does this for one line in a transaction.
 */
#ifndef PMTX_CLTX_H
#define PMTX_CLTX_H
/* The library is built with -fvisibility=hidden: what is declared here,
 * and only that, is exported from libpmtx.so. */
#pragma GCC visibility push(default)

#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "pmtx.h"

#define PMTX_CLTX_LINE 64
#define PMTX_CLTX_HALF 32
/* Largest payload: half a line minus the index byte. */
#define PMTX_CLTX_MAX (PMTX_CLTX_HALF - 1)
/* Bytes to allocate so that n lines fit from any 16-byte-aligned start. */
#define PMTX_CLTX_ROOM(n) ((size_t)(n) * PMTX_CLTX_LINE + 48)

#if defined(PMTX_CLTX_STRICT_ORDER) ||                                       \
	(!defined(__x86_64__) && !defined(__i386__))
#define PMTX_CLTX_BARRIERS 2 /* two-step commit, see "Same-line ordering" */
#else
#define PMTX_CLTX_BARRIERS 1
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The persistence trace and the crash simulator see a cache-line
 * transaction's stores through this (one predictable branch when off). */
extern int pmtx__trace_on;
void pmtx__note_store(pmtx_region *r, const void *p, size_t n);
#define PMTX__CLTX_NOTE(r, p, n)                                             \
	do {                                                                 \
		if (__builtin_expect(pmtx__trace_on, 0))                     \
			pmtx__note_store((r), (p), (n));                     \
	} while (0)

/* Round p up to the next 64-byte boundary. */
static inline void *pmtx_cltx_align(void *p)
{
	uintptr_t a = ((uintptr_t)p + PMTX_CLTX_LINE - 1) &
	              ~(uintptr_t)(PMTX_CLTX_LINE - 1);
	return (void *)a;
}

static inline pmtx_off pmtx_cltx_align_off(pmtx_off off)
{
	return (off + PMTX_CLTX_LINE - 1) & ~(pmtx_off)(PMTX_CLTX_LINE - 1);
}

/* Allocate a zeroed block holding one line inside transaction tx. *line is
 * the line (a valid all-zero line, C5, durable when tx commits); *block is
 * what to pass to pmtx_free. On failure *line is 0. */
static inline int pmtx_cltx_zalloc(pmtx_tx *tx, pmtx_off *block,
                                   pmtx_off *line)
{
	int rc = pmtx_zalloc(tx, PMTX_CLTX_ROOM(1), block);
	*line = rc ? 0 : pmtx_cltx_align_off(*block);
	return rc;
}

/* The generic part, on a line given as bytes. hoff is the offset of half 1
 * (32), ioff that of the index byte. Not for direct use. */
static inline unsigned pmtx__cltx_valid_idx(const unsigned char *line,
                                            size_t ioff)
{
	assert(((uintptr_t)line & (PMTX_CLTX_LINE - 1)) == 0);
	return __atomic_load_n(line + ioff, __ATOMIC_ACQUIRE) & 1u;
}

static inline int pmtx__cltx_commit(pmtx_region *r, unsigned char *line,
                                    size_t ioff, size_t tsize)
{
	unsigned v = __atomic_load_n(line + ioff, __ATOMIC_RELAXED);
	/* The working half's stores were made by the caller: report them. */
	PMTX__CLTX_NOTE(r, line + ((v & 1u) ^ 1u) * PMTX_CLTX_HALF, tsize);
#if PMTX_CLTX_BARRIERS == 2
	pmtx_flush(r, line + ((v & 1u) ^ 1u) * PMTX_CLTX_HALF, tsize);
	int rc = pmtx_order(r); /* the half before the flip */
	if (rc)
		return rc; /* not flipped: the transaction did not commit */
#else
	(void)tsize;
#endif
	/* C2: every store to the working half comes first in program order.
	 * The release store is a plain byte store on x86 (and orders the
	 * data before the flip for a reader on another core). */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(line + ioff, (unsigned char)(v ^ 1u),
	                 __ATOMIC_RELEASE);
	PMTX__CLTX_NOTE(r, line + ioff, 1);
	pmtx_flush(r, line, PMTX_CLTX_LINE);
	return pmtx_barrier(r);
}

/* Fresh line: half 0 := *initial, index := 0, flushed. Inside a pmtx
 * transaction of r the flush is made durable by its commit; otherwise a
 * barrier is issued here. Not failure-atomic by itself: use it only on a
 * line nothing refers to yet (or that C5 already makes valid). */
static inline int pmtx__cltx_init(pmtx_region *r, unsigned char *line,
                                  size_t ioff, const void *initial,
                                  size_t tsize)
{
	assert(((uintptr_t)line & (PMTX_CLTX_LINE - 1)) == 0);
	memcpy(line, initial, tsize);
	line[ioff] = 0;
	PMTX__CLTX_NOTE(r, line, PMTX_CLTX_LINE);
	pmtx_flush(r, line, PMTX_CLTX_LINE);
	pmtx_tx *tx = pmtx_tx_current();
	if (tx && pmtx_tx_region(tx) == r)
		return 0;
	return pmtx_barrier(r);
}

#ifdef __cplusplus
}
#endif

/*
 * PMTX_CLTX_DECLARE(name, T) declares struct name, a cache-line
 * transactional T, and these functions (l must be 64-byte aligned):
 *
 *   int name_init(pmtx_region *r, struct name *l, const T *initial);
 *   const T *name_valid(const struct name *l);    the committed value
 *   void name_get(const struct name *l, T *out);  copy of it
 *   T *name_begin(struct name *l);                 working half, = valid
 *   int name_commit(pmtx_region *r, struct name *l);   0 or PMTX_E_IO
 *       (file backend: msync failed; the new value is visible but may
 *       not be durable; two-step commit: not flipped if the first
 *       barrier failed)
 *   void name_abort(struct name *l);
 *
 * T must be trivially copyable (no pointers into itself: the halves move),
 * at most 31 bytes. Use it at file scope. Example:
 *
 *   struct counter { uint64_t hits, misses; };
 *   PMTX_CLTX_DECLARE(counter_line, struct counter)
 *
 *   struct counter *c = counter_line_begin(l);
 *   c->hits++;
 *   counter_line_commit(r, l);
 */
#define PMTX_CLTX_DECLARE(name, T)                                           \
	_Static_assert(sizeof(T) <= PMTX_CLTX_MAX,                           \
	               #T " is too large for a cache-line transaction "       \
	               "(at most 31 bytes)");                                \
	struct name {                                                        \
		_Alignas(PMTX_CLTX_LINE) T pmtx_half0;                       \
		_Alignas(PMTX_CLTX_HALF) T pmtx_half1;                       \
		unsigned char pmtx_index; /* valid half = index & 1 */       \
	};                                                                   \
	_Static_assert(sizeof(struct name) == PMTX_CLTX_LINE &&              \
	                       _Alignof(struct name) == PMTX_CLTX_LINE,      \
	               "struct " #name " must be exactly one aligned line");  \
	_Static_assert(offsetof(struct name, pmtx_half1) == PMTX_CLTX_HALF,  \
	               "half 1 starts mid-line");                            \
	static inline int name##_init(pmtx_region *r, struct name *l,        \
	                              const T *initial)                      \
	{                                                                    \
		return pmtx__cltx_init(r, (unsigned char *)l,                \
		                       offsetof(struct name, pmtx_index),    \
		                       initial, sizeof(T));                  \
	}                                                                    \
	static inline const T *name##_valid(const struct name *l)            \
	{                                                                    \
		return pmtx__cltx_valid_idx((const unsigned char *)l,        \
		                            offsetof(struct name, pmtx_index)) \
		               ? &l->pmtx_half1                              \
		               : &l->pmtx_half0;                             \
	}                                                                    \
	static inline void name##_get(const struct name *l, T *out)          \
	{                                                                    \
		memcpy(out, name##_valid(l), sizeof(T));                     \
	}                                                                    \
	static inline T *name##_begin(struct name *l)                        \
	{                                                                    \
		const T *v = name##_valid(l);                                \
		T *w = v == &l->pmtx_half0 ? &l->pmtx_half1 : &l->pmtx_half0; \
		memcpy(w, v, sizeof(T));                                     \
		return w;                                                    \
	}                                                                    \
	static inline int name##_commit(pmtx_region *r, struct name *l)      \
	{                                                                    \
		return pmtx__cltx_commit(r, (unsigned char *)l,              \
		                         offsetof(struct name, pmtx_index),  \
		                         sizeof(T));                         \
	}                                                                    \
	static inline void name##_abort(struct name *l)                      \
	{                                                                    \
		(void)l; /* the working half is simply ignored */            \
	}

#pragma GCC visibility pop
#endif /* PMTX_CLTX_H */
