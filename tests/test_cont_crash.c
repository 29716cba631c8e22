/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cont_crash.c - kill -9 under load, on the containers.
 *
 * A child process opens a region holding a hash map created with
 * PMTX_HMAP_LOCKED (opened with STRIPES stripes), a list and NSTR strings,
 * and runs NT threads forever, each op of each thread one transaction:
 *   - NW writers on the hash map: puts and deletes of keys of their own,
 *     increments of NCTR counters every thread shares (a get and a put
 *     under the counter's stripe, which the transaction holds to its
 *     end), and transactions over two own keys and a counter that lock
 *     their stripes first (pmtx_hmap_lock_keys);
 *   - one more thread (MIXED) on the list (pushes and pops at both ends,
 *     inserts, removes, sets, trims), the strings (set, append,
 *     setrange), an ordered map (u64 keys, byte values: puts, deletes,
 *     runs of deletes), and several at once: an element popped from the
 *     list put under one of its own hash-map keys with a counter
 *     incremented, put into the ordered map, or appended to a string.
 * Some ops are preceded by a transaction that does the same kind of work
 * and aborts. Every transaction also stores the thread's count of
 * committed ops (seq[t], a line of its own in the root), and after each
 * commit returns the thread writes (t, count) to a pipe: the
 * acknowledgement.
 *
 * The parent kills the child with SIGKILL after a random delay, drains
 * the pipe, reopens the region (recovery) and checks, for each thread,
 * that seq[t] is the acknowledged count or one more (the op in flight
 * may have become durable, whole, without its acknowledgement), and
 * that every container equals the model after exactly those ops: each
 * thread's own keys, the counters (the increments of every thread's
 * committed ops: a lost update shows), the list element by element, the
 * strings, the ordered map entry by entry; then the checkers
 * (hmap_check, map_check, list_check), pmtx_heap_check,
 * and that the heap's blocks are exactly the containers' (no leak).
 *
 * Ops are planned from (seed, thread, op number) and, for MIXED, the
 * list's length, which the child reads in the transaction and the model
 * knows: so the model replays any prefix. Each runtime (undo, redo,
 * redo-async, auto, twin) gets a region and its share of the kills:
 * 200 in all, 5,000 with PMTX_LONG_TESTS=1. PMTX_CRASH_SEED overrides
 * the seed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#include "containers/hmap.h"
#include "containers/list.h"
#include "containers/list_layout.h"
#include "containers/map.h"
#include "containers/map_layout.h"
#include "containers/str_layout.h"
#include "pmtx_containers.h"

#define NW 3           /* hash-map writer threads: 0 .. NW-1 */
#define MIXED NW       /* the list, strings and cross-container thread */
#define NT (NW + 1)
#define NOWN 16        /* keys of each thread's own */
#define NCTR 4         /* counters shared by every thread */
#define NSTR 3
#define STRIPES 4
#define LMAX 160       /* the list stays below (pops when it is long) */
#define SMAX 4096      /* strings are cleared before they pass it */
#define MAXB 700       /* longest element or value */
#define OKEYS 512      /* the ordered map's keys */
#define REGION_SIZE (16u << 20)
#define DEFAULT_SEED 0xc0a7a1115eed0001ull

static const pmtx_runtime runtimes[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
                                        PMTX_RT_REDO_ASYNC, PMTX_RT_AUTO,
                                        PMTX_RT_TWIN};
#define NRT (sizeof(runtimes) / sizeof(runtimes[0]))

struct troot {
	pmtx_off hmap, list, map;
	uint64_t reserved[5];
	struct {
		uint64_t n;    /* ops of thread t committed */
		uint64_t pad[7];
	} seq[NT];
	pmtx_str s[NSTR];
};

/* A message on the pipe: thread t has committed n ops (t == NT: the
 * child has opened the region). */
struct ack {
	uint32_t t, pad;
	uint64_t n;
};

enum { CHILD_OPEN = 10, CHILD_OP, CHILD_PIPE };

/* ---- byte strings: an id and a length (the model keeps those) ---- */

static uint64_t mix(uint64_t x)
{
	return tu_rand(&x);
}

static uint64_t rng(uint64_t seed, unsigned t, uint64_t k, unsigned s)
{
	return mix(seed ^ mix(k * 0x9e3779b97f4a7c15ull ^ (uint64_t)t << 56 ^
	                      (uint64_t)s << 48));
}

struct el {
	uint64_t id;
	uint32_t n;
};

static void gen(struct el x, unsigned char *out)
{
	for (size_t j = 0; j < x.n; j += 8) {
		uint64_t w = mix(x.id * 0x100000001b3ull + j);
		memcpy(out + j, &w, x.n - j < 8 ? x.n - j : 8);
	}
}

static int el_eq(struct el a, struct el b)
{
	unsigned char x[MAXB], y[MAXB];
	if (a.n != b.n)
		return 0;
	if (a.id == b.id)
		return 1;
	gen(a, x);
	gen(b, y);
	return !memcmp(x, y, a.n);
}

static struct el new_el(uint64_t r, uint64_t id)
{
	uint32_t n = (uint32_t)((r >> 32) % 48);
	if ((r >> 40) % 16 == 0)
		n = 300 + (uint32_t)((r >> 44) % 300);
	return (struct el){id, n};
}

/* ---- keys ---- */

static size_t own_key(unsigned t, unsigned key, unsigned char *b)
{
	b[0] = 'o', b[1] = (unsigned char)t, b[2] = (unsigned char)key;
	return 3;
}

static size_t ctr_key(unsigned c, unsigned char *b)
{
	b[0] = 'c', b[1] = (unsigned char)c;
	return 2;
}

/* ---- plans ---- */

enum {
	OP_PUT, OP_DEL, OP_INCR, OP_PAIR,                 /* hash map */
	OP_PUSH, OP_POP, OP_INSERT, OP_REMOVE, OP_SET,    /* list */
	OP_TRIM, OP_SSET, OP_SAPPEND, OP_SRANGE,          /* strings */
	OP_MOVE, OP_TOSTR, OP_OMOVE,                      /* cross */
	OP_OPUT, OP_ODEL, OP_ODELRUN,                     /* ordered map */
};

struct op {
	int kind;
	unsigned key, key2, ctr, s, okey;
	struct el v;
	int end, after;
	int64_t a, b;      /* list index or count; trim bounds */
	size_t at;         /* setrange */
	int abort_first;   /* a transaction of the same kind aborts first */
};

/* Op k of a hash-map writer t. */
static void plan_writer(uint64_t seed, unsigned t, uint64_t k, struct op *o)
{
	uint64_t r = rng(seed, t, k, 0);
	unsigned roll = (unsigned)(r % 20);
	memset(o, 0, sizeof(*o));
	o->kind = roll < 9 ? OP_PUT : roll < 12 ? OP_DEL
	        : roll < 17 ? OP_INCR : OP_PAIR;
	o->key = (unsigned)((r >> 8) % NOWN);
	o->key2 = (o->key + 1 + (unsigned)((r >> 16) % (NOWN - 1))) % NOWN;
	o->ctr = (unsigned)((r >> 24) % NCTR);
	o->v = new_el(r, (uint64_t)t << 48 | k);
	o->abort_first = (r >> 56) % 10 == 0;
}

/* Op k of MIXED, on a list of len elements. */
static void plan_mixed(uint64_t seed, uint64_t k, unsigned len, struct op *o)
{
	static const int kinds[24] = {
		OP_PUSH, OP_PUSH, OP_PUSH, OP_POP, OP_POP, OP_INSERT,
		OP_INSERT, OP_REMOVE, OP_SET, OP_TRIM, OP_SSET, OP_SAPPEND,
		OP_SRANGE, OP_MOVE, OP_MOVE, OP_TOSTR, OP_OPUT, OP_OPUT,
		OP_OPUT, OP_OPUT, OP_ODEL, OP_ODELRUN, OP_OMOVE, OP_OMOVE};
	uint64_t r = rng(seed, MIXED, k, 0);
	memset(o, 0, sizeof(*o));
	o->kind = kinds[r % 24];
	/* about 32 elements, a few chunks: splits and merges happen */
	if (len < 32 && (o->kind == OP_POP || o->kind == OP_REMOVE ||
	                 o->kind == OP_TRIM))
		o->kind = OP_PUSH;
	if (len >= LMAX - 2 && (o->kind == OP_PUSH || o->kind == OP_INSERT))
		o->kind = OP_POP;
	if (!len && (o->kind == OP_INSERT || o->kind == OP_REMOVE ||
	             o->kind == OP_SET))
		o->kind = OP_PUSH;
	o->key = (unsigned)((r >> 8) % NOWN);
	o->ctr = (unsigned)((r >> 12) % NCTR);
	o->s = (unsigned)((r >> 16) % NSTR);
	o->end = (r >> 20) & 1 ? PMTX_LIST_TAIL : PMTX_LIST_HEAD;
	o->after = (r >> 21) & 1;
	o->a = len ? (int64_t)((r >> 24) % len) : 0;
	if (o->kind == OP_REMOVE)
		o->b = (int64_t)((r >> 40) % 4) - 1; /* count: -1, 0, 1, 2 */
	if (o->kind == OP_TRIM) {
		o->a = (int64_t)((r >> 40) % 3);
		o->b = -1 - (int64_t)((r >> 44) % 3);
	}
	o->at = (size_t)((r >> 32) % 64);
	o->okey = (unsigned)(rng(seed, MIXED, k, 1) % OKEYS);
	o->v = new_el(r, (uint64_t)MIXED << 48 | k);
	o->abort_first = (r >> 56) % 10 == 0;
}

/* ---- the model ---- */

struct model {
	uint64_t seq[NT];
	uint8_t present[NT][NOWN];
	struct el own[NT][NOWN];
	uint64_t ctr[NCTR];
	unsigned ln;
	struct el l[LMAX];
	size_t sn[NSTR];
	unsigned char s[NSTR][SMAX];
	uint8_t op[OKEYS];
	struct el ov[OKEYS];
};

static void m_put(struct model *m, unsigned t, unsigned key, struct el v)
{
	m->present[t][key] = 1;
	m->own[t][key] = v;
}

static void m_insert(struct model *m, unsigned at, struct el x)
{
	memmove(&m->l[at + 1], &m->l[at], (m->ln - at) * sizeof(x));
	m->l[at] = x;
	m->ln++;
}

static struct el m_erase(struct model *m, unsigned at)
{
	struct el x = m->l[at];
	memmove(&m->l[at], &m->l[at + 1], (m->ln - at - 1) * sizeof(x));
	m->ln--;
	return x;
}

static void m_remove(struct model *m, struct el v, int64_t count)
{
	uint64_t left = count == 0 ? UINT64_MAX
	              : count < 0 ? (uint64_t)-count : (uint64_t)count;
	if (count >= 0) {
		for (unsigned j = 0; j < m->ln && left;)
			if (el_eq(m->l[j], v))
				m_erase(m, j), left--;
			else
				j++;
		return;
	}
	for (unsigned j = m->ln; j-- > 0 && left;)
		if (el_eq(m->l[j], v))
			m_erase(m, j), left--;
}

/* Redis's LTRIM, as its documentation puts it: the elements outside
 * [start, stop] (negative: from the tail) are removed. */
static void m_trim(struct model *m, int64_t start, int64_t stop)
{
	int64_t n = m->ln;
	int64_t first = start < 0 ? start + n : start;
	int64_t last = stop < 0 ? stop + n : stop;
	for (int64_t j = n - 1; j >= 0; j--)
		if (j < first || j > last)
			m_erase(m, (unsigned)j);
}

static void m_str(struct model *m, unsigned s, size_t at, struct el v,
                  int append)
{
	unsigned char b[MAXB];
	gen(v, b);
	if (append)
		at = m->sn[s];
	if (at + v.n > SMAX) { /* the child clears it instead */
		m->sn[s] = 0;
		return;
	}
	if (at > m->sn[s])
		memset(m->s[s] + m->sn[s], 0, at - m->sn[s]);
	memcpy(m->s[s] + at, b, v.n);
	if (at + v.n > m->sn[s])
		m->sn[s] = at + v.n;
}

static void m_apply_list(struct model *m, const struct op *o)
{
	unsigned j = (unsigned)o->a;
	switch (o->kind) {
	case OP_PUSH:
		m_insert(m, o->end == PMTX_LIST_TAIL ? m->ln : 0, o->v);
		break;
	case OP_POP:
		if (m->ln)
			m_erase(m, o->end == PMTX_LIST_TAIL ? m->ln - 1 : 0);
		break;
	case OP_INSERT: {
		unsigned f = 0;
		while (!el_eq(m->l[f], m->l[j])) /* the first equal to it */
			f++;
		m_insert(m, f + (o->after != 0), o->v);
		break;
	}
	case OP_REMOVE:
		m_remove(m, m->l[j], o->b);
		break;
	case OP_SET:
		m->l[j] = o->v;
		break;
	case OP_TRIM:
		m_trim(m, o->a, o->b);
		break;
	}
}

/* Apply op k of thread t (the model holds thread t's first k). */
static void m_apply(struct model *m, uint64_t seed, unsigned t, uint64_t k)
{
	struct op o;
	if (t == MIXED)
		plan_mixed(seed, k, m->ln, &o);
	else
		plan_writer(seed, t, k, &o);
	switch (o.kind) {
	case OP_PUT:
		m_put(m, t, o.key, o.v);
		break;
	case OP_DEL:
		m->present[t][o.key] = 0;
		break;
	case OP_INCR:
		m->ctr[o.ctr]++;
		break;
	case OP_PAIR:
		m_put(m, t, o.key, o.v);
		m->present[t][o.key2] = 0;
		m->ctr[o.ctr]++;
		break;
	case OP_SSET:
		m->sn[o.s] = 0;
		m_str(m, o.s, 0, o.v, 0);
		break;
	case OP_SAPPEND:
		m_str(m, o.s, 0, o.v, 1);
		break;
	case OP_SRANGE:
		if (o.v.n)
			m_str(m, o.s, o.at, o.v, 0);
		break;
	case OP_MOVE:
		if (m->ln) {
			m_put(m, t, o.key, m_erase(m, m->ln - 1));
			m->ctr[o.ctr]++;
		}
		break;
	case OP_TOSTR:
		if (m->ln)
			m_str(m, o.s, 0, m_erase(m, 0), 1);
		break;
	case OP_OMOVE:
		if (m->ln) {
			m->op[o.okey] = 1;
			m->ov[o.okey] = m_erase(m, 0);
		}
		break;
	case OP_OPUT:
		m->op[o.okey] = 1;
		m->ov[o.okey] = o.v;
		break;
	case OP_ODEL:
		m->op[o.okey] = 0;
		break;
	case OP_ODELRUN: /* 16 keys from okey on */
		for (unsigned j = o.okey; j < o.okey + 16 && j < OKEYS; j++)
			m->op[j] = 0;
		break;
	default:
		m_apply_list(m, &o);
		break;
	}
	m->seq[t] = k + 1;
}

/* ---- the child: the ops on the region ---- */

struct child {
	pmtx_region *r;
	pmtx_hmap *h;
	pmtx_map *m;
	pmtx_list *l;
	uint64_t seed;
	int fd;
};

static struct troot *root_of(pmtx_region *r)
{
	return pmtx_root(r, NULL);
}

static int incr(pmtx_tx *tx, pmtx_hmap *h, unsigned c)
{
	unsigned char kb[2];
	size_t kn = ctr_key(c, kb);
	pmtx_bytes v;
	uint64_t n = 0;
	int rc = pmtx_hmap_get(tx, h, kb, kn, &v);
	if (!rc && v.n == sizeof(n))
		memcpy(&n, v.p, sizeof(n));
	else if (rc != PMTX_E_NOT_FOUND && rc)
		return rc;
	n++;
	return pmtx_hmap_put(tx, h, kb, kn, &n, sizeof(n), 0, NULL);
}

static int put_own(pmtx_tx *tx, pmtx_hmap *h, unsigned t, unsigned key,
                   const void *p, size_t n)
{
	unsigned char kb[3];
	size_t kn = own_key(t, key, kb);
	return pmtx_hmap_put(tx, h, kb, kn, p, n, 0, NULL);
}

/* Lock the stripes of own key key, counter ctr and (n == 3) own key
 * key2, in increasing order: the rule for a transaction over several
 * keys, which another thread's may share stripes with. */
static int lock_keys(pmtx_tx *tx, pmtx_hmap *h, unsigned t,
                     const struct op *o, size_t n)
{
	unsigned char k[3][3];
	const void *keys[3] = {k[0], k[1], k[2]};
	size_t lens[3] = {own_key(t, o->key, k[0]), ctr_key(o->ctr, k[1]),
	                  own_key(t, o->key2, k[2])};
	return pmtx_hmap_lock_keys(tx, h, n, keys, lens);
}

static int run_writer(struct child *c, pmtx_tx *tx, unsigned t,
                      const struct op *o)
{
	unsigned char b[MAXB], kb[3];
	int rc;
	gen(o->v, b);
	switch (o->kind) {
	case OP_PUT:
		return put_own(tx, c->h, t, o->key, b, o->v.n);
	case OP_DEL:
		rc = pmtx_hmap_del(tx, c->h, kb, own_key(t, o->key, kb));
		return rc == PMTX_E_NOT_FOUND ? 0 : rc;
	case OP_INCR:
		return incr(tx, c->h, o->ctr);
	default: /* OP_PAIR */
		if ((rc = lock_keys(tx, c->h, t, o, 3)) ||
		    (rc = put_own(tx, c->h, t, o->key, b, o->v.n)))
			return rc;
		rc = pmtx_hmap_del(tx, c->h, kb, own_key(t, o->key2, kb));
		return rc && rc != PMTX_E_NOT_FOUND ? rc : incr(tx, c->h, o->ctr);
	}
}

static int run_str(struct child *c, pmtx_tx *tx, const struct op *o,
                   const void *p, size_t n, int append)
{
	pmtx_str *s = &root_of(c->r)->s[o->s];
	size_t len, at = o->kind == OP_SRANGE ? o->at : 0;
	int rc = pmtx_str_len(c->r, tx, s, &len);
	if (rc)
		return rc;
	if (append)
		at = len;
	if (at + n > SMAX) /* the model's bound: start again */
		return pmtx_str_clear(c->r, tx, s);
	if (o->kind == OP_SSET)
		return pmtx_str_set(c->r, tx, s, p, n);
	return append ? pmtx_str_append(c->r, tx, s, p, n)
	              : pmtx_str_setrange(c->r, tx, s, at, p, n);
}

/* The element at index i of the list, copied into b. */
static int list_at(pmtx_tx *tx, pmtx_list *l, int64_t i, unsigned char *b,
                   size_t *n)
{
	pmtx_bytes v;
	int rc = pmtx_list_index(tx, l, i, &v);
	if (!rc) {
		*n = v.n;
		memcpy(b, v.p, v.n);
	}
	return rc;
}

static int run_list(struct child *c, pmtx_tx *tx, const struct op *o,
                    const unsigned char *b)
{
	unsigned char p[MAXB];
	size_t pn;
	int rc;
	switch (o->kind) {
	case OP_PUSH:
		return pmtx_list_push(tx, c->l, o->end, b, o->v.n);
	case OP_POP:
		rc = pmtx_list_pop(tx, c->l, o->end, NULL, 0, NULL);
		return rc == PMTX_E_NOT_FOUND ? 0 : rc;
	case OP_INSERT:
		return (rc = list_at(tx, c->l, o->a, p, &pn))
		               ? rc
		               : pmtx_list_insert(tx, c->l, p, pn, o->after, b,
		                                  o->v.n);
	case OP_REMOVE:
		return (rc = list_at(tx, c->l, o->a, p, &pn))
		               ? rc
		               : pmtx_list_remove(tx, c->l, p, pn, o->b, NULL);
	case OP_SET:
		return pmtx_list_set(tx, c->l, o->a, b, o->v.n);
	default: /* OP_TRIM */
		return pmtx_list_trim(tx, c->l, o->a, o->b);
	}
}

static int run_omap(struct child *c, pmtx_tx *tx, const struct op *o,
                    const unsigned char *b)
{
	unsigned char p[MAXB];
	uint64_t key = o->okey;
	size_t n;
	int rc;
	switch (o->kind) {
	case OP_OPUT:
		return pmtx_map_put(tx, c->m, &key, 8, b, o->v.n, 0, NULL);
	case OP_ODEL:
		rc = pmtx_map_del(tx, c->m, &key, 8);
		return rc == PMTX_E_NOT_FOUND ? 0 : rc;
	case OP_ODELRUN:
		for (rc = 0; !rc && key < o->okey + 16 && key < OKEYS; key++)
			if ((rc = pmtx_map_del(tx, c->m, &key, 8)) ==
			    PMTX_E_NOT_FOUND)
				rc = 0;
		return rc;
	default: /* OP_OMOVE */
		rc = pmtx_list_pop(tx, c->l, PMTX_LIST_HEAD, p, sizeof(p), &n);
		if (rc)
			return rc == PMTX_E_NOT_FOUND ? 0 : rc;
		return pmtx_map_put(tx, c->m, &key, 8, p, n, 0, NULL);
	}
}

static int run_mixed(struct child *c, pmtx_tx *tx, const struct op *o)
{
	unsigned char b[MAXB], p[MAXB];
	size_t n;
	int rc;
	gen(o->v, b);
	switch (o->kind) {
	case OP_OPUT:
	case OP_ODEL:
	case OP_ODELRUN:
	case OP_OMOVE:
		return run_omap(c, tx, o, b);
	case OP_SSET:
	case OP_SAPPEND:
	case OP_SRANGE:
		return run_str(c, tx, o, b, o->v.n, o->kind == OP_SAPPEND);
	case OP_MOVE:
	case OP_TOSTR:
		rc = pmtx_list_pop(tx, c->l, o->kind == OP_MOVE ? PMTX_LIST_TAIL
		                                                : PMTX_LIST_HEAD,
		                   p, sizeof(p), &n);
		if (rc)
			return rc == PMTX_E_NOT_FOUND ? 0 : rc;
		if (o->kind == OP_TOSTR)
			return run_str(c, tx, o, p, n, 1);
		if ((rc = lock_keys(tx, c->h, MIXED, o, 2)) ||
		    (rc = put_own(tx, c->h, MIXED, o->key, p, n)))
			return rc;
		return incr(tx, c->h, o->ctr);
	default:
		return run_list(c, tx, o, b);
	}
}

static int run_op(struct child *c, pmtx_tx *tx, unsigned t, const struct op *o)
{
	return t == MIXED ? run_mixed(c, tx, o) : run_writer(c, tx, t, o);
}

/* Op k of thread t in one transaction, with the count of committed ops;
 * after a transaction of the same plan that aborts, if the plan says.
 * A failure is the child's end (child_fail): the transaction is left as
 * it is. */
static int one_op(struct child *c, unsigned t, uint64_t k)
{
	struct troot *root = root_of(c->r);
	struct op o;
	pmtx_tx *tx;
	int rc;
	for (int pass = 0;; pass++) {
		uint64_t len = 0;
		if ((rc = pmtx_begin(c->r, PMTX_RT_DEFAULT, &tx)) ||
		    (t == MIXED && (rc = pmtx_list_len(tx, c->l, &len))))
			return rc;
		if (t == MIXED)
			plan_mixed(c->seed, k, (unsigned)len, &o);
		else
			plan_writer(c->seed, t, k, &o);
		if ((rc = run_op(c, tx, t, &o)))
			return rc;
		if (pass == 0 && o.abort_first) {
			if ((rc = pmtx_abort(tx)))
				return rc;
			continue;
		}
		if ((rc = PMTX_SET(tx, root->seq[t].n, k + 1)))
			return rc;
		return pmtx_commit(tx);
	}
}

static void child_fail(int code, unsigned t, uint64_t k, int rc)
{
	fprintf(stderr, "child: thread %u op %llu: %s (%s)\n", t,
	        (unsigned long long)k, pmtx_strerror(rc), pmtx_errmsg());
	_exit(code);
}

struct thread_arg {
	struct child *c;
	unsigned t;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	struct child *c = a->c;
	uint64_t k = root_of(c->r)->seq[a->t].n;
	for (;; k++) {
		int rc = one_op(c, a->t, k);
		if (rc)
			child_fail(CHILD_OP, a->t, k, rc);
		struct ack m = {a->t, 0, k + 1};
		if (write(c->fd, &m, sizeof(m)) != sizeof(m))
			_exit(CHILD_PIPE);
	}
	return NULL;
}

static void child_main(const char *path, const pmtx_options *o,
                       uint64_t seed, int fd)
{
	struct child c = {NULL, NULL, NULL, NULL, seed, fd};
	pmtx_cont_options ho;
	pmtx_cont_options_init(&ho);
	ho.stripes = STRIPES;
	int rc = pmtx_open(path, o, &c.r);
	if (!rc)
		rc = pmtx_hmap_open(c.r, root_of(c.r)->hmap, &ho, &c.h);
	if (!rc)
		rc = pmtx_list_open(c.r, root_of(c.r)->list, NULL, &c.l);
	if (!rc)
		rc = pmtx_map_open(c.r, root_of(c.r)->map, NULL, &c.m);
	if (rc)
		child_fail(CHILD_OPEN, NT, 0, rc);
	struct ack m = {NT, 0, 0};
	if (write(fd, &m, sizeof(m)) != sizeof(m))
		_exit(CHILD_PIPE);
	struct thread_arg args[NT];
	pthread_t th[NT];
	for (unsigned t = 0; t < NT; t++) {
		args[t] = (struct thread_arg){&c, t};
		if (pthread_create(&th[t], NULL, thread_main, &args[t]))
			_exit(CHILD_OPEN);
	}
	for (;;)
		pause();
}

/* ---- the parent: checks ---- */

struct ctx {
	const char *what;
	uint64_t seed;
	unsigned kill;
};

#define FAIL(c, ...)                                                       \
	fail_msg("%s seed %#llx kill %u: %s", (c)->what,                    \
	         (unsigned long long)(c)->seed, (c)->kill,                   \
	         (snprintf(failbuf, sizeof(failbuf), __VA_ARGS__), failbuf))
static char failbuf[512];

static void check_value(const struct ctx *c, pmtx_hmap *h, const void *k,
                        size_t kn, int present, const void *want,
                        size_t wn, const char *name)
{
	pmtx_bytes v;
	int rc = pmtx_hmap_get(NULL, h, k, kn, &v);
	if (!present && rc != PMTX_E_NOT_FOUND)
		FAIL(c, "%s: present (status %d), the model has none", name, rc);
	if (present && rc)
		FAIL(c, "%s: %s, the model has %zu bytes", name,
		     pmtx_strerror(rc), wn);
	if (present && (v.n != wn || memcmp(v.p, want, wn)))
		FAIL(c, "%s: %zu bytes that differ from the model's %zu", name,
		     v.n, wn);
}

static void check_hmap(const struct ctx *c, pmtx_region *r,
                       const struct model *m)
{
	pmtx_hmap *h;
	char why[200];
	uint64_t len, want = 0;
	assert_int_equal(pmtx_hmap_open(r, root_of(r)->hmap, NULL, &h), 0);
	if (hmap_check(h, why, sizeof(why)))
		FAIL(c, "hmap_check: %s", why);
	for (unsigned t = 0; t < NT; t++)
		for (unsigned key = 0; key < NOWN; key++) {
			unsigned char kb[3], b[MAXB];
			char name[32];
			gen(m->own[t][key], b);
			snprintf(name, sizeof(name), "key %u of thread %u", key,
			         t);
			check_value(c, h, kb, own_key(t, key, kb),
			            m->present[t][key], b, m->own[t][key].n,
			            name);
			want += m->present[t][key];
		}
	for (unsigned k = 0; k < NCTR; k++) {
		unsigned char kb[2];
		char name[32];
		snprintf(name, sizeof(name), "counter %u", k);
		check_value(c, h, kb, ctr_key(k, kb), m->ctr[k] != 0,
		            &m->ctr[k], sizeof(m->ctr[k]), name);
		want += m->ctr[k] != 0;
	}
	assert_int_equal(pmtx_hmap_len(NULL, h, &len), 0);
	if (len != want)
		FAIL(c, "hash map of %llu entries, the model %llu",
		     (unsigned long long)len, (unsigned long long)want);
	pmtx_hmap_close(h);
}

struct lcheck {
	const struct ctx *c;
	const struct model *m;
	unsigned i;
};

static int check_elem(const pmtx_bytes *v, void *arg)
{
	struct lcheck *lc = arg;
	unsigned char b[MAXB];
	if (lc->i >= lc->m->ln)
		FAIL(lc->c, "list longer than the model's %u", lc->m->ln);
	struct el x = lc->m->l[lc->i];
	gen(x, b);
	if (v->n != x.n || memcmp(v->p, b, x.n))
		FAIL(lc->c, "list element %u differs from the model's", lc->i);
	lc->i++;
	return 0;
}

static void check_list(const struct ctx *c, pmtx_region *r,
                       const struct model *m)
{
	pmtx_list *l;
	char why[200];
	struct lcheck lc = {c, m, 0};
	assert_int_equal(pmtx_list_open(r, root_of(r)->list, NULL, &l), 0);
	if (list_check(l, why, sizeof(why)))
		FAIL(c, "list_check: %s", why);
	assert_int_equal(pmtx_list_range(NULL, l, 0, -1, check_elem, &lc), 0);
	if (lc.i != m->ln)
		FAIL(c, "list of %u elements, the model's %u", lc.i, m->ln);
	pmtx_list_close(l);
}

static void check_strings(const struct ctx *c, pmtx_region *r,
                          const struct model *m)
{
	for (unsigned s = 0; s < NSTR; s++) {
		pmtx_bytes v;
		int rc = pmtx_str_get(r, NULL, &root_of(r)->s[s], &v);
		if (rc)
			FAIL(c, "string %u: %s", s, pmtx_strerror(rc));
		if (v.n != m->sn[s] || (v.n && memcmp(v.p, m->s[s], v.n)))
			FAIL(c, "string %u: %zu bytes, the model %zu (or they "
			     "differ)", s, v.n, m->sn[s]);
	}
}

/* The ordered map: the checker, and every entry against the model. */
static void check_omap(const struct ctx *c, pmtx_region *r,
                       const struct model *m)
{
	pmtx_map *om;
	pmtx_map_cursor cur;
	char why[200];
	unsigned key = 0;
	int rc;
	assert_int_equal(pmtx_map_open(r, root_of(r)->map, NULL, &om), 0);
	if (map_check(om, why, sizeof(why)))
		FAIL(c, "map_check: %s", why);
	rc = pmtx_map_seek(NULL, om, PMTX_SEEK_FIRST, NULL, 0, &cur);
	for (; !rc; rc = pmtx_map_next(&cur), key++) {
		pmtx_bytes k, v;
		unsigned char b[MAXB];
		uint64_t kw;
		while (key < OKEYS && !m->op[key])
			key++;
		assert_int_equal(pmtx_map_cursor_get(&cur, &k, &v), 0);
		memcpy(&kw, k.p, sizeof(kw));
		if (key == OKEYS || kw != key)
			FAIL(c, "ordered map: key %llu, the model's next is %u",
			     (unsigned long long)kw, key);
		gen(m->ov[key], b);
		if (v.n != m->ov[key].n || memcmp(v.p, b, v.n))
			FAIL(c, "ordered map: key %u's value differs", key);
	}
	while (key < OKEYS && !m->op[key])
		key++;
	if (rc != PMTX_E_NOT_FOUND || key != OKEYS)
		FAIL(c, "ordered map: ends before key %u (%s)", key,
		     pmtx_strerror(rc));
	pmtx_map_close(om);
}

/* The blocks of the ordered map (u64 keys, byte values: map_layout.h):
 * header, nodes, value items. */
static void push_map_node(pmtx_region *r, pmtx_off off, unsigned level,
                          struct tu_offs *used)
{
	tu_offs_push(used, off);
	if (level == 1) {
		const struct map_leaf *lf = pmtx_ptr(r, off);
		for (unsigned j = 0; j < lf->hd.count; j++) {
			uint64_t val = lf->e[lf->hd.order[j]].val;
			if (val)
				tu_offs_push(used, val);
		}
		return;
	}
	const struct map_inner *in = pmtx_ptr(r, off);
	for (unsigned j = 0; j < in->n; j++)
		push_map_node(r, in->child[j], level - 1, used);
}

/* The heap's blocks are the containers': the hash map's (hmap_walk),
 * the ordered map's, the list's header and chunks, the strings'
 * blocks. */
static int push_off(pmtx_off off, void *arg)
{
	tu_offs_push(arg, off);
	return 0;
}

static void check_blocks(const struct ctx *c, pmtx_region *r)
{
	struct tu_offs used = {0};
	struct troot *root = root_of(r);
	pmtx_hmap *h;
	char ctx[128];
	assert_int_equal(pmtx_hmap_open(r, root->hmap, NULL, &h), 0);
	if (hmap_walk(h, push_off, &used))
		FAIL(c, "hmap_walk failed");
	pmtx_hmap_close(h);
	const struct map_hdr *mh = pmtx_ptr(r, root->map);
	tu_offs_push(&used, root->map);
	push_map_node(r, mh->root, mh->height, &used);
	const struct list_hdr *lh = pmtx_ptr(r, root->list);
	tu_offs_push(&used, root->list);
	pmtx_off ch = lh->head;
	for (uint64_t k = 0; k < lh->nchunks; k++) {
		tu_offs_push(&used, ch);
		ch = ((const struct list_chunk *)pmtx_ptr(r, ch))->next;
	}
	for (unsigned s = 0; s < NSTR; s++) {
		const pmtx_str *v = &root->s[s];
		pmtx_off off;
		memcpy(&off, v->b, sizeof(off));
		if (v->b[15] == STR_TAG_HEAP)
			tu_offs_push(&used, off);
	}
	snprintf(ctx, sizeof(ctx), "%s seed %#llx kill %u", c->what,
	         (unsigned long long)c->seed, c->kill);
	tu_assert_heap_blocks(r, &used, ctx);
	free(used.v);
}

static void verify(pmtx_region *r, struct model *m, const uint64_t *acked,
                   const struct ctx *c)
{
	const struct troot *root = root_of(r);
	for (unsigned t = 0; t < NT; t++) {
		uint64_t n = root->seq[t].n;
		if (n != acked[t] && n != acked[t] + 1)
			FAIL(c, "thread %u: %llu ops committed, %llu "
			     "acknowledged", t, (unsigned long long)n,
			     (unsigned long long)acked[t]);
		if (n < m->seq[t])
			FAIL(c, "thread %u: %llu ops committed, %llu before", t,
			     (unsigned long long)n,
			     (unsigned long long)m->seq[t]);
		for (uint64_t k = m->seq[t]; k < n; k++)
			m_apply(m, c->seed, t, k);
	}
	check_hmap(c, r, m);
	check_list(c, r, m);
	check_strings(c, r, m);
	check_omap(c, r, m);
	pmtx_heap_stats hs;
	if (pmtx_heap_check(r, &hs))
		FAIL(c, "heap check: %s", hs.first_error);
	check_blocks(c, r);
}

/* ---- the kill loop ---- */

static void init_region(const char *path, const pmtx_options *o,
                        pmtx_runtime rt)
{
	size_t size = rt == PMTX_RT_TWIN ? 2 * REGION_SIZE : REGION_SIZE;
	pmtx_region *r = tu_create_at(path, size, o);
	struct troot *root = root_of(r);
	pmtx_off h, l, om;
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_hmap_create(tx, PMTX_HMAP_LOCKED, &h), 0);
	assert_int_equal(pmtx_list_create(tx, &l), 0);
	assert_int_equal(pmtx_map_create(tx, PMTX_MAP_U64, &om), 0);
	assert_int_equal(PMTX_SET(tx, root->hmap, h), 0);
	assert_int_equal(PMTX_SET(tx, root->list, l), 0);
	assert_int_equal(PMTX_SET(tx, root->map, om), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	assert_int_equal(pmtx_close(r), 0);
}

static void sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* A quarter of the kills under 200 us (often inside open and recovery),
 * the rest up to 10 ms. */
static long kill_delay(uint64_t *rs)
{
	if (tu_rand(rs) % 4 == 0)
		return (long)(tu_rand(rs) % 200000);
	return (long)(tu_rand(rs) % 10000000);
}

/* Fork the child, kill it; acked[t]: the last count thread t
 * acknowledged (kept when it acknowledged nothing: the count the last
 * check found). */
static void run_and_kill(const char *path, const pmtx_options *o,
                         uint64_t *rs, uint64_t *acked, const struct ctx *c)
{
	int fds[2];
	struct ack m;
	assert_int_equal(pipe(fds), 0);
	(void)fcntl(fds[1], F_SETPIPE_SZ, 1 << 20); /* never block the child */
	pid_t pid = tu_fork();
	if (pid == 0) {
		close(fds[0]);
		child_main(path, o, c->seed, fds[1]);
		_exit(CHILD_PIPE);
	}
	close(fds[1]);
	/* most rounds wait for the open; 1 in 8 may kill inside it */
	if (tu_rand(rs) % 8 && read(fds[0], &m, sizeof(m)) != sizeof(m))
		m.t = NT;
	sleep_ns(kill_delay(rs));
	kill(pid, SIGKILL);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	ssize_t n;
	while ((n = read(fds[0], &m, sizeof(m))) == sizeof(m))
		if (m.t < NT && m.n > acked[m.t])
			acked[m.t] = m.n;
	assert_true(n == 0);
	close(fds[0]);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		FAIL(c, "the child did not die of SIGKILL: %s %d (its message "
		     "is above)", WIFEXITED(status) ? "exit" : "signal",
		     WIFEXITED(status) ? WEXITSTATUS(status)
		                       : WTERMSIG(status));
}

static uint64_t crash_seed(void)
{
	const char *s = getenv("PMTX_CRASH_SEED");
	return s && *s ? strtoull(s, NULL, 0) : DEFAULT_SEED;
}

static void kill_loop(pmtx_runtime rt, unsigned nkills)
{
	static struct model m;
	uint64_t acked[NT] = {0}, ops = 0;
	char what[64];
	const char *path = tu_path();
	snprintf(what, sizeof(what), "containers/%s", pmtx_runtime_name(rt));
	pmtx_options o = tu_options(sizeof(struct troot), rt);
	if (rt == PMTX_RT_AUTO)
		o.flags |= PMTX_OPEN_AUTO_ROTATE;
	struct ctx c = {what, crash_seed(), 0};
	uint64_t rs = c.seed ^ (uint64_t)rt << 32;
	memset(&m, 0, sizeof(m));
	init_region(path, &o, rt);
	for (c.kill = 0; c.kill < nkills; c.kill++) {
		pmtx_region *r;
		run_and_kill(path, &o, &rs, acked, &c);
		int rc = pmtx_open(path, &o, &r);
		if (rc)
			FAIL(&c, "reopen: %s %s", pmtx_strerror(rc),
			     pmtx_errmsg());
		verify(r, &m, acked, &c);
		assert_int_equal(pmtx_close(r), 0);
		/* an op durable without its acknowledgement counts as
		 * acknowledged from now on: the next child starts after it */
		memcpy(acked, m.seq, sizeof(acked));
	}
	for (unsigned t = 0; t < NT; t++)
		ops += m.seq[t];
	unsigned on = 0;
	for (unsigned k = 0; k < OKEYS; k++)
		on += m.op[k];
	print_message("%s: %u kills, %llu ops committed (list %u, map %u, "
	              "counters %llu %llu %llu %llu), seed %#llx\n", what,
	              nkills, (unsigned long long)ops, m.ln, on,
	              (unsigned long long)m.ctr[0],
	              (unsigned long long)m.ctr[1],
	              (unsigned long long)m.ctr[2],
	              (unsigned long long)m.ctr[3],
	              (unsigned long long)c.seed);
	/* a loop that never got past open proves nothing */
	for (unsigned t = 0; t < NT; t++)
		assert_true(m.seq[t] > 0);
	unlink(path);
}

static void sigkill_under_load_keeps_every_container_a_committed_prefix(
	void **state)
{
	unsigned nkills = tu_long_mode() ? 5000 : 200;
	for (size_t i = 0; i < NRT; i++)
		kill_loop(runtimes[i], (unsigned)((nkills + NRT - 1) / NRT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(
		sigkill_under_load_keeps_every_container_a_committed_prefix)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
