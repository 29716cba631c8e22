/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_list.c - the list type's operations (store_list.h), each one
 * transaction over the key space (store_int.h's kx_* interface) and the
 * key's pmtx_list (layout.h: c[0] of its collection).
 *
 * DESIGN
 * Persistent: the key's object (a typed object naming the list) and the
 * list's chunks, the library's. Volatile: the list's handle, opened for
 * the operation and closed by kx_end.
 *
 * Invariants
 *  T1. Each operation is one transaction (kx_begin .. kx_end, store.c
 *      S1): a push of many elements, a pop of many, a move between two
 *      lists (pop, push, and the source key's removal) commit together or
 *      not at all.
 *  T2. A client's mistake is found before the first write (store.c S13):
 *      element lengths before anything is looked up (push, insert) or
 *      right after the lookup (set); every key's type before any
 *      element moves (a move looks up its destination, and checks the
 *      length of a key it will create, before it pops; a multi-key pop
 *      stops at the first key of another type, having written nothing
 *      but the removal of expired keys, which no client can tell). An
 *      index outside the list (LSET) is found by pmtx_list_set before it
 *      writes (pmtx_containers.h).
 *  T3. A list is never empty (layout.h L3): an operation that takes its
 *      last element removes the key (kx_remove) in its transaction,
 *      rather than writing the list empty first where it can tell
 *      (a pop of every element, a trim to nothing). A new list gets its
 *      element in the transaction that creates it.
 *  T4. A key's lookup (struct kpos) shows the object through a view of
 *      the key space, valid until the key space is next written: an
 *      operation that wrote it after the lookup (a move: the
 *      destination's expired key removed, or the source removed before the
 *      destination is created) looks the key up again before it removes
 *      it. A list's views (elements) are valid until that list is next
 *      written: a pop emits what it takes before it drops it, and a move
 *      copies its element before it pops.
 *  T5. The pop of several keys (LMPOP, and the blocking pops' step) pops
 *      from one key only, the first that exists, and says which, so that
 *      a blocked client's wake-up can call it as LMPOP does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "store_list.h"

#define KEY(key, len) ((struct kpos){.k = (key), .kn = (len)})
#define VIEWS_STACK 16 /* a pop of up to this many gathers on the stack */
#define MOVE_STACK 256 /* a moved element up to this size: copied on the
                        * stack */
#define POS_WINDOW 64  /* LPOS from the tail: the first window's size */

/* ---- finding the list ---- */

/* Look p up in x, and open its list: *l, or NULL if p is absent
 * (PMKV_E_WRONGTYPE if it holds another type). */
static int find_list(struct kvx *x, struct kpos *p, pmtx_list **l)
{
	struct pmkv_coll c;
	int rc = kx_find(x, p);
	*l = NULL;
	if (!rc)
		rc = kx_coll(p, PMKV_T_LIST, &c);
	return rc || !p->found ? rc : kx_list(x, c.c[0], l);
}

/* The list to push into: *l, or a new one for the absent key p (its
 * caller pushes before it ends: T3). */
static int list_for_push(struct kvx *x, struct kpos *p, pmtx_list **l)
{
	struct pmkv_coll c;
	if (*l)
		return 0;
	int rc = kx_coll_new(x, p, PMKV_T_LIST, &c);
	return rc ? rc : kx_list(x, c.c[0], l);
}

/* Begin x (writer: it may write) and open the list of p's key: 0, *l
 * (NULL if the key is absent) and x to end with kx_end; or a status,
 * nothing begun. */
static int begin_list(struct pmkv_store *s, struct kvx *x, int writer,
                      struct kpos *p, pmtx_list **l)
{
	int rc = kx_begin(s, x, writer);
	if (rc)
		return rc;
	rc = find_list(x, p, l);
	return rc ? kx_end(x, rc) : 0;
}

/* Remove p's key if its list l is now empty (T3); refind: the key space
 * was written since p's lookup (T4). */
static int drop_if_empty(struct kvx *x, struct kpos *p, pmtx_list *l,
                         int refind)
{
	uint64_t n;
	int rc = pmtx_list_len(x->tx, l, &n);
	if (rc || n)
		return rc;
	if (refind && (rc = kx_find(x, p)))
		return rc;
	return p->found ? kx_remove(x, p) : 0;
}

/* Redis's [start, stop] over a list of len elements (addListRangeReply,
 * ltrimCommand): 1 and [*s, *e], or 0 if the range is empty. */
static int span(uint64_t len, int64_t start, int64_t stop, uint64_t *s,
                uint64_t *e)
{
	int64_t n = (int64_t)len;
	if (start < 0)
		start = start < -n ? 0 : start + n;
	if (stop < 0)
		stop = stop < -n ? -1 : stop + n;
	if (start > stop || start >= n)
		return 0;
	*s = (uint64_t)start;
	*e = stop >= n ? len - 1 : (uint64_t)stop;
	return 1;
}

static int too_long(const struct pmkv_store *s, size_t n)
{
	return n > s->max_value;
}

/* ---- push ---- */

static int push_all(struct kvx *x, struct kpos *p, pmtx_list *l, int end,
                    const struct pmkv_key *v, size_t n, uint64_t *len)
{
	int rc = list_for_push(x, p, &l);
	for (size_t i = 0; !rc && i < n; i++)
		rc = pmtx_list_push(x->tx, l, end, v[i].p, v[i].n);
	return rc ? rc : pmtx_list_len(x->tx, l, len);
}

int pmkv_list_push(struct pmkv_store *s, const void *k, size_t kn, int end,
                   int xx, const struct pmkv_key *v, size_t n,
                   uint64_t *len)
{
	struct kvx x;
	struct kpos p = KEY(k, kn);
	pmtx_list *l;
	*len = 0;
	for (size_t i = 0; i < n; i++)
		if (too_long(s, v[i].n))
			return PMKV_E_TOOBIG; /* T2 */
	int rc = begin_list(s, &x, 1, &p, &l);
	if (rc)
		return rc;
	if (l || !xx)
		rc = push_all(&x, &p, l, end, v, n, len);
	return kx_end(&x, rc);
}

/* ---- pop ---- */

/* A pop's elements, gathered from a range (their views stay valid until
 * the list is next written: T4). */
struct gather {
	pmtx_bytes *v;
	uint64_t n, cap;
};

static int gather_one(const pmtx_bytes *b, void *arg)
{
	struct gather *g = arg;
	if (g->n == g->cap)
		return PMTX_E_CORRUPT; /* more than the range holds */
	g->v[g->n++] = *b;
	return 0;
}

static int emit_one(const pmtx_bytes *b, void *arg)
{
	const struct pmkv_elems *out = arg;
	out->emit(out->arg, b->p, b->n);
	return 0;
}

/* Emit the n elements at end (1 <= n <= the length) in the order they
 * leave: from the head in order, from the tail backwards. */
static int emit_end(struct kvx *x, pmtx_list *l, int end, uint64_t n,
                    const struct pmkv_elems *out)
{
	if (end == PMKV_LEFT)
		return pmtx_list_range(x->tx, l, 0, (int64_t)n - 1, emit_one,
		                       (void *)out);
	pmtx_bytes stack[VIEWS_STACK];
	struct gather g = {stack, 0, n};
	if (n > VIEWS_STACK && !(g.v = malloc(n * sizeof(*g.v))))
		return ENOMEM;
	int rc = pmtx_list_range(x->tx, l, -(int64_t)n, -1, gather_one, &g);
	for (uint64_t i = g.n; !rc && i-- > 0;)
		out->emit(out->arg, g.v[i].p, g.v[i].n);
	if (g.v != stack)
		free(g.v);
	return rc;
}

/* Take min(count, length) elements of p's list l at end, counted and
 * emitted first (T4); the key goes with the last of them (T3). */
static int pop_n(struct kvx *x, struct kpos *p, pmtx_list *l, int end,
                 uint64_t count, size_t key, const struct pmkv_elems *out)
{
	uint64_t len;
	int rc = pmtx_list_len(x->tx, l, &len);
	if (rc)
		return rc;
	uint64_t n = count < len ? count : len;
	out->count(out->arg, key, n);
	if (!n || (rc = emit_end(x, l, end, n, out)))
		return rc;
	if (n == len)
		return kx_remove(x, p);
	return end == PMKV_LEFT ? pmtx_list_trim(x->tx, l, (int64_t)n, -1)
	                        : pmtx_list_trim(x->tx, l, 0, -(int64_t)n - 1);
}

int pmkv_list_pop(struct pmkv_store *s, const struct pmkv_key *keys,
                  size_t nkeys, int end, uint64_t count,
                  const struct pmkv_elems *out, long *found)
{
	struct kvx x;
	pmtx_list *l = NULL;
	*found = -1;
	int rc = kx_begin(s, &x, 1);
	if (rc)
		return rc;
	for (size_t i = 0; !rc && !l && i < nkeys; i++) {
		struct kpos p = KEY(keys[i].p, keys[i].n);
		if ((rc = find_list(&x, &p, &l)) || !l)
			continue;
		*found = (long)i;
		rc = pop_n(&x, &p, l, end, count, i, out);
	}
	return kx_end(&x, rc);
}

/* ---- move ---- */

/* The element at the end `from` of ls (p: its key) pushed at the end
 * `to` of ld (NULL: a new list for pd), then emitted. */
static int move_one(struct kvx *x, struct kpos *ps, pmtx_list *ls,
                    struct kpos *pd, pmtx_list *ld, int from, int to,
                    pmkv_emit_fn emit, void *arg)
{
	char stack[MOVE_STACK], *buf = stack;
	pmtx_bytes v;
	int rc = pmtx_list_index(x->tx, ls, from == PMKV_LEFT ? 0 : -1, &v);
	if (rc)
		return rc;
	size_t n = v.n;
	if (n > sizeof(stack) && !(buf = malloc(n)))
		return ENOMEM;
	memcpy(buf, v.p, n); /* before the pop writes ls (T4) */
	rc = pmtx_list_pop(x->tx, ls, from, NULL, 0, NULL);
	if (!rc && ls != ld)
		rc = drop_if_empty(x, ps, ls, 1);
	if (!rc)
		rc = list_for_push(x, pd, &ld);
	if (!rc)
		rc = pmtx_list_push(x->tx, ld, to, buf, n);
	if (!rc)
		emit(arg, buf, n);
	if (buf != stack)
		free(buf);
	return rc;
}

int pmkv_list_move(struct pmkv_store *s, const void *src, size_t sn,
                   const void *dst, size_t dn, int from, int to,
                   pmkv_emit_fn emit, void *arg, int *found)
{
	struct kvx x;
	struct kpos ps = KEY(src, sn), pd = KEY(dst, dn);
	pmtx_list *ls, *ld = NULL;
	int same = sn == dn && !memcmp(src, dst, sn);
	*found = 0;
	int rc = kx_begin(s, &x, 1);
	if (rc)
		return rc;
	rc = find_list(&x, &ps, &ls);
	if (!rc && ls)
		rc = same ? (ld = ls, 0) : find_list(&x, &pd, &ld); /* T2 */
	if (!rc && ls && !ld && dn > s->max_key)
		rc = PMKV_E_TOOBIG; /* T2: kx_coll_new's, before the pop */
	if (!rc && ls) {
		*found = 1;
		rc = move_one(&x, &ps, ls, &pd, ld, from, to, emit, arg);
	}
	return kx_end(&x, rc);
}

/* ---- reads ---- */

int pmkv_list_len(struct pmkv_store *s, const void *k, size_t kn,
                  uint64_t *len)
{
	struct kvx x;
	struct kpos p = KEY(k, kn);
	pmtx_list *l;
	*len = 0;
	int rc = begin_list(s, &x, 0, &p, &l);
	if (rc)
		return rc;
	if (l)
		rc = pmtx_list_len(x.tx, l, len);
	return kx_end(&x, rc);
}

int pmkv_list_index(struct pmkv_store *s, const void *k, size_t kn,
                    int64_t i, pmkv_emit_fn emit, void *arg, int *found)
{
	struct kvx x;
	struct kpos p = KEY(k, kn);
	pmtx_list *l;
	pmtx_bytes v;
	*found = 0;
	int rc = begin_list(s, &x, 0, &p, &l);
	if (rc)
		return rc;
	if (l && !(rc = pmtx_list_index(x.tx, l, i, &v))) {
		*found = 1;
		emit(arg, v.p, v.n);
	}
	return kx_end(&x, rc == PMTX_E_NOT_FOUND ? 0 : rc);
}

int pmkv_list_range(struct pmkv_store *s, const void *k, size_t kn,
                    int64_t start, int64_t stop,
                    const struct pmkv_elems *out)
{
	struct kvx x;
	struct kpos p = KEY(k, kn);
	pmtx_list *l;
	uint64_t len = 0, a, b;
	int rc = begin_list(s, &x, 0, &p, &l);
	if (rc)
		return rc;
	if (l)
		rc = pmtx_list_len(x.tx, l, &len);
	if (rc)
		return kx_end(&x, rc);
	int some = span(len, start, stop, &a, &b);
	out->count(out->arg, 0, some ? b - a + 1 : 0);
	if (some)
		rc = pmtx_list_range(x.tx, l, (int64_t)a, (int64_t)b, emit_one,
		                     (void *)out);
	return kx_end(&x, rc);
}

/* ---- writes in place ---- */

int pmkv_list_set(struct pmkv_store *s, const void *k, size_t kn, int64_t i,
                  const void *v, size_t vn, int *done)
{
	struct kvx x;
	struct kpos p = KEY(k, kn);
	pmtx_list *l;
	*done = 0;
	int rc = begin_list(s, &x, 1, &p, &l);
	if (rc)
		return rc;
	if (!l)
		rc = PMKV_E_NOKEY;
	else if (too_long(s, vn))
		rc = PMKV_E_TOOBIG; /* T2 */
	else if (!(rc = pmtx_list_set(x.tx, l, i, v, vn)))
		*done = 1;
	return kx_end(&x, rc == PMTX_E_NOT_FOUND ? 0 : rc);
}

int pmkv_list_insert(struct pmkv_store *s, const void *k, size_t kn,
                     int after, const void *pivot, size_t pn, const void *v,
                     size_t vn, int64_t *len)
{
	struct kvx x;
	struct kpos p = KEY(k, kn);
	pmtx_list *l;
	uint64_t n;
	*len = 0;
	if (too_long(s, vn))
		return PMKV_E_TOOBIG; /* T2 */
	int rc = begin_list(s, &x, 1, &p, &l);
	if (rc)
		return rc;
	if (l) {
		rc = pmtx_list_insert(x.tx, l, pivot, pn, after, v, vn);
		if (rc == PMTX_E_NOT_FOUND)
			rc = 0, *len = -1;
		else if (!rc && !(rc = pmtx_list_len(x.tx, l, &n)))
			*len = (int64_t)n;
	}
	return kx_end(&x, rc);
}

int pmkv_list_rem(struct pmkv_store *s, const void *k, size_t kn,
                  int64_t count, const void *v, size_t vn, uint64_t *removed)
{
	struct kvx x;
	struct kpos p = KEY(k, kn);
	pmtx_list *l;
	*removed = 0;
	int rc = begin_list(s, &x, 1, &p, &l);
	if (rc)
		return rc;
	if (l && !(rc = pmtx_list_remove(x.tx, l, v, vn, count, removed)) &&
	    *removed)
		rc = drop_if_empty(&x, &p, l, 0);
	return kx_end(&x, rc);
}

int pmkv_list_trim(struct pmkv_store *s, const void *k, size_t kn,
                   int64_t start, int64_t stop)
{
	struct kvx x;
	struct kpos p = KEY(k, kn);
	pmtx_list *l;
	uint64_t len, a, b;
	int rc = begin_list(s, &x, 1, &p, &l);
	if (rc)
		return rc;
	if (l && !(rc = pmtx_list_len(x.tx, l, &len))) {
		if (!span(len, start, stop, &a, &b))
			rc = kx_remove(&x, &p); /* T3 */
		else if (a > 0 || b + 1 < len)
			rc = pmtx_list_trim(x.tx, l, (int64_t)a, (int64_t)b);
	}
	return kx_end(&x, rc);
}

/* ---- LPOS ---- */

/* A scan's state: matches met, positions told, the next index. */
struct pos_scan {
	const struct pmkv_lpos *q;
	uint64_t rank;  /* the first match told: |q->rank| */
	uint64_t seen, told, at;
	uint64_t lo;    /* from the tail: the window's first index */
	unsigned char *bits; /* ... and which of its elements match */
};

static int pos_equal(const pmtx_bytes *b, const struct pmkv_lpos *q)
{
	return b->n == q->vn && (!b->n || !memcmp(b->p, q->v, b->n));
}

/* A match at index i: 1 once the query has what it asked for. */
static int pos_hit(struct pos_scan *w, uint64_t i)
{
	if (++w->seen < w->rank)
		return 0;
	w->q->pos(w->q->arg, i);
	return w->q->count && ++w->told >= w->q->count;
}

static int pos_fwd(const pmtx_bytes *b, void *arg)
{
	struct pos_scan *w = arg;
	uint64_t i = w->at++;
	return pos_equal(b, w->q) && pos_hit(w, i);
}

/* From the head: [0, lim) in order, until done. */
static int pos_head(struct kvx *x, pmtx_list *l, uint64_t lim,
                    struct pos_scan *w)
{
	int rc = pmtx_list_range(x->tx, l, 0, (int64_t)lim - 1, pos_fwd, w);
	return rc == 1 ? 0 : rc;
}

static int pos_mark(const pmtx_bytes *b, void *arg)
{
	struct pos_scan *w = arg;
	uint64_t i = w->at++ - w->lo;
	if (pos_equal(b, w->q))
		w->bits[i / 8] |= (unsigned char)(1u << (i % 8));
	return 0;
}

/* From the tail: [len - lim, len) backwards, until done. The list reads
 * forward only, so it is read in windows from the tail, each twice the
 * last (a window's range walks from the tail to it: the walks cost the
 * length read, twice at most), its matches marked, then told
 * backwards. */
static int pos_tail(struct kvx *x, pmtx_list *l, uint64_t len, uint64_t lim,
                    struct pos_scan *w)
{
	uint64_t hi = len, stop = len - lim, win = POS_WINDOW;
	int rc = 0, done = 0;
	while (!rc && !done && hi > stop) {
		uint64_t lo = hi - stop > win ? hi - win : stop;
		unsigned char *bits = calloc((hi - lo + 7) / 8, 1);
		if (!bits)
			return ENOMEM;
		w->bits = bits, w->lo = w->at = lo;
		rc = pmtx_list_range(x->tx, l, (int64_t)lo, (int64_t)hi - 1,
		                     pos_mark, w);
		for (uint64_t i = hi; !rc && !done && i-- > lo;)
			if (bits[(i - lo) / 8] & (1u << ((i - lo) % 8)))
				done = pos_hit(w, i);
		free(bits);
		hi = lo;
		win *= 2;
	}
	return rc;
}

int pmkv_list_pos(struct pmkv_store *s, const void *k, size_t kn,
                  const struct pmkv_lpos *q)
{
	struct kvx x;
	struct kpos p = KEY(k, kn);
	pmtx_list *l;
	uint64_t len;
	struct pos_scan w = {q, 0, 0, 0, 0, 0, NULL};
	if (q->rank == 0)
		return PMTX_E_INVAL;
	w.rank = q->rank < 0 ? (uint64_t)(-(q->rank + 1)) + 1
	                     : (uint64_t)q->rank;
	int rc = begin_list(s, &x, 0, &p, &l);
	if (rc)
		return rc;
	if (l && !(rc = pmtx_list_len(x.tx, l, &len))) {
		uint64_t lim = q->maxlen && q->maxlen < len ? q->maxlen : len;
		rc = q->rank > 0 ? pos_head(&x, l, lim, &w)
		                 : pos_tail(&x, l, len, lim, &w);
	}
	return kx_end(&x, rc);
}
