/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_zset.h - the sorted set's operations (store_zset.c), the store
 * layer under Redis 7.0's Z commands (cmd_zset.c). A sorted set is a
 * collection of two containers (layout.h): c[0] member -> score (8 bytes,
 * a double), c[1] (score, member) in Redis's order -> empty. Every
 * operation is one transaction (store.c S1) that keeps both holding the
 * same members, and finds the client's mistakes before it writes (S13).
 *
 * Scores: a stored score is never -0 (a -0 is stored as 0, as Redis's
 * listpack encoding, which every small sorted set has, stores it); a
 * score an operation computes and hands out (ZINCRBY's, ZUNION's) is the
 * double it computed.
 *
 * Errors as store.h; PMKV_E_WRONGTYPE for a key of another type,
 * PMKV_E_TOOBIG for a member longer than the store's values may be.
 */
#ifndef PMKV_STORE_ZSET_H
#define PMKV_STORE_ZSET_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* Where an operation's elements go: begin once, with how many follow
 * (key: which of the operation's keys they come from; 0 for one key),
 * then elem for each (a view: copy it). elem returns nonzero to stop a
 * read early (a write hands out every element it removes). */
struct pmkv_zsink {
	void (*begin)(void *arg, size_t key, uint64_t n);
	int (*elem)(void *arg, const void *m, size_t n, double score);
	void *arg;
};

/* ---- ZADD, ZINCRBY ---- */

enum { PMKV_ZADD_NX = 1, PMKV_ZADD_XX = 2, PMKV_ZADD_GT = 4,
       PMKV_ZADD_LT = 8, PMKV_ZADD_INCR = 16 };

struct pmkv_zpair {
	double score; /* not NaN */
	const void *m;
	size_t n;
};

/* What ZADD did: members added, members whose score changed, members
 * not skipped by NX/XX/GT/LT; with INCR the member's new score, or nan = 1
 * if the sum is not a number (nothing was then written). */
struct pmkv_zadd_res {
	uint64_t added, updated, processed;
	double score;
	int nan;
};

/* ZADD key [flags] score member ...: the n pairs in order, under Redis
 * 7.0's zsetAdd rules (flags PMKV_ZADD_*; INCR with one pair). */
int pmkv_zadd(struct pmkv_store *s, const void *k, size_t kn, unsigned flags,
              const struct pmkv_zpair *p, size_t n, struct pmkv_zadd_res *r);

/* ---- single members ---- */

/* ZSCORE, ZMSCORE: found[i] and score[i] of each of the n members (all
 * not found if the key is absent). */
int pmkv_zscore(struct pmkv_store *s, const void *k, size_t kn,
                const struct pmkv_key *m, size_t n, double *score,
                unsigned char *found);
/* ZCARD: 0 if absent. */
int pmkv_zcard(struct pmkv_store *s, const void *k, size_t kn, uint64_t *n);
/* ZRANK (rev 0), ZREVRANK (rev 1): *rank, or -1 if the member or the key
 * is absent. */
int pmkv_zrank(struct pmkv_store *s, const void *k, size_t kn, const void *m,
               size_t mn, int rev, int64_t *rank);
/* ZREM: the members removed (the key too once it is empty). */
int pmkv_zrem(struct pmkv_store *s, const void *k, size_t kn,
              const struct pmkv_key *m, size_t n, uint64_t *removed);

/* ---- ranges ---- */

enum { PMKV_ZBY_RANK, PMKV_ZBY_SCORE, PMKV_ZBY_LEX };
/* A lex bound: "[x" (INCL), "(x" (EXCL), "-" (MIN), "+" (MAX). */
enum { PMKV_ZLEX_INCL, PMKV_ZLEX_EXCL, PMKV_ZLEX_MIN, PMKV_ZLEX_MAX };
struct pmkv_zlex {
	int kind;
	const void *p;
	size_t n;
};

/* A range as Redis 7.0's ZRANGE reads it. RANK: indexes start..end
 * (negative from the end; with rev, counted from the highest). SCORE:
 * min..max, each bound exclusive if its flag says so. LEX: lmin..lmax
 * (bytes compared as members of one score; a set of mixed scores is
 * ranged as if all had its lowest's). SCORE and LEX take LIMIT: offset
 * (negative: nothing) and limit (negative: all); rev walks the range
 * from its high end. */
struct pmkv_zrange {
	int by, rev;
	long long start, end;
	double min, max;
	int minex, maxex;
	struct pmkv_zlex lmin, lmax;
	long long offset, limit;
};

/* ZRANGE and its variants: the range's elements to out (begin(0, 0) if
 * the key is absent). */
int pmkv_zrange(struct pmkv_store *s, const void *k, size_t kn,
                const struct pmkv_zrange *r, const struct pmkv_zsink *out);
/* ZRANGESTORE: dst holds the range of src as a sorted set (whatever it
 * held before; removed if the range is empty or src absent); *stored:
 * its size. */
int pmkv_zrangestore(struct pmkv_store *s, const void *dst, size_t dn,
                     const void *src, size_t sn, const struct pmkv_zrange *r,
                     uint64_t *stored);
/* ZREMRANGEBYRANK/SCORE/LEX (offset and limit unused). */
int pmkv_zremrange(struct pmkv_store *s, const void *k, size_t kn,
                   const struct pmkv_zrange *r, uint64_t *removed);
/* ZCOUNT, ZLEXCOUNT: the elements in the SCORE or LEX range. */
int pmkv_zcount(struct pmkv_store *s, const void *k, size_t kn,
                const struct pmkv_zrange *r, uint64_t *n);

/* ---- pops ---- */

/* ZPOPMIN/ZPOPMAX (one key), ZMPOP, and the blocking pops' attempt: the
 * first of the n keys that exists must be a sorted set (else
 * PMKV_E_WRONGTYPE); up to count of its lowest (max 0) or highest
 * elements are removed, handed to out (begin with the key's index, then
 * lowest or highest first) and the key removed once empty. *which: the
 * key's index, or n if none of the keys exists (out not called). */
int pmkv_zpop(struct pmkv_store *s, const struct pmkv_key *keys, size_t n,
              int max, uint64_t count, const struct pmkv_zsink *out,
              size_t *which);

/* ---- random members, scans ---- */

/* ZRANDMEMBER: count > 0, that many distinct members (all if fewer);
 * count < 0, -count members drawn with replacement; count 0, none. out
 * gets begin(0, n) first; *found: the key exists. */
int pmkv_zrandmember(struct pmkv_store *s, const void *k, size_t kn,
                     long long count, const struct pmkv_zsink *out,
                     int *found);
/* ZSCAN from cursor: the members (and scores) of some buckets of the
 * member map, at least count unless it ends (pmtx_hmap_scan's contract,
 * and SCAN's guarantee), to out (no begin); *next: 0 at the end, or if
 * the key is absent. */
int pmkv_zscan(struct pmkv_store *s, const void *k, size_t kn,
               uint64_t cursor, uint64_t count, const struct pmkv_zsink *out,
               uint64_t *next);

/* ---- ZUNION, ZINTER, ZDIFF and their STORE, ZINTERCARD ---- */

enum { PMKV_ZOP_UNION, PMKV_ZOP_INTER, PMKV_ZOP_DIFF };
enum { PMKV_ZAGG_SUM, PMKV_ZAGG_MIN, PMKV_ZAGG_MAX };

/* The inputs: n keys, each a sorted set or a set (its members of score
 * 1) or absent (empty); weights (NULL: all 1) and aggregate for UNION and
 * INTER, as Redis 7.0's zunionInterDiffGenericCommand computes them. */
struct pmkv_zsetop {
	int op, agg;
	const struct pmkv_key *keys;
	const double *weights;
	size_t n;
};

/* PMKV_E_WRONGTYPE if one of the n keys holds neither a sorted set nor a
 * set (the error Redis gives before any other of these commands'). */
int pmkv_zsetop_types(struct pmkv_store *s, const struct pmkv_key *keys,
                      size_t n);
/* ZUNION, ZINTER, ZDIFF: the result in order to out. */
int pmkv_zsetop(struct pmkv_store *s, const struct pmkv_zsetop *o,
                const struct pmkv_zsink *out);
/* ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE: dst holds the result (removed if
 * it is empty); *stored: its size. */
int pmkv_zsetop_store(struct pmkv_store *s, const void *dst, size_t dn,
                      const struct pmkv_zsetop *o, uint64_t *stored);
/* ZINTERCARD: the intersection's size, at most limit (0: no limit). */
int pmkv_zintercard(struct pmkv_store *s, const struct pmkv_key *keys,
                    size_t n, uint64_t limit, uint64_t *card);

#endif
