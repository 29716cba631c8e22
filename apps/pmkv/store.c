/*
 * store.c - pmkv's operations, each one pmtx transaction, for both
 * versions of the store (obj.c holds what differs between them).
 *
 * DESIGN
 * Persistent: everything in layout.h. Volatile: the lock, the runtime,
 * the version.
 *
 * Invariants
 *  S1. Every operation that writes runs in one transaction, under the
 *      store lock, and returns only after pmtx_commit has returned: the
 *      server acknowledges a write only once it is durable. A failed step
 *      aborts the whole transaction: nothing of it stays.
 *  S2. Reads run in a transaction of their own under the store lock too,
 *      and read entries through views (obj.c O2): no writer runs
 *      meanwhile (S1). The lock is one adaptive mutex (it spins a while
 *      before it sleeps): an operation holds it for about a microsecond,
 *      less than a sleeping thread takes to wake on this class of
 *      machine; a reader-writer lock, which lets readers run together,
 *      measured 4 to 7 times slower with two threads (a futex sleep and
 *      wake-up at every writer), in the server and in pmkv-storebench.
 *  S3. Within a writing transaction, fields that change are read with
 *      kvx_get (assoc.c H3); key bytes, klen and hash never change after
 *      an entry is linked, and an operation reads a value only before it
 *      writes it, so those are read through the entry's view.
 *  S4. A value is changed in place (pmtx_write) when it is short and fits
 *      the entry's block; otherwise a fresh entry (plain stores, flushed)
 *      replaces the old one in the chain, which is freed: either way, one
 *      transaction.
 *  S5. An entry whose expiry has passed is absent to every operation;
 *      a writing operation that meets it removes it in its transaction.
 *  S6. Growth (assoc_maybe_grow) runs at the start of an inserting
 *      operation, before its lookups, so no chain position it holds is
 *      moved under it.
 *  S7. Keys can be removed from a full region: under copy-on-write every
 *      write copies its object, so a removal (DEL, a FLUSHALL sweep step,
 *      its detach) that finds no room runs again under undo, which writes
 *      in place (the wrapped version runs under either).
 *  S8. A group (pmkv_group_begin/end) is one transaction of the store's
 *      runtime under the store lock, held from begin to end; each
 *      operation in it begins and ends as it would alone (x_begin, x_end)
 *      but shares the group's transaction, so it reads what the earlier
 *      ones wrote, and S1 holds for the group as a whole: its writes are
 *      durable together, when pmkv_group_end's commit returns. A failed
 *      operation may have written part of its work, and a transaction
 *      cannot take back part of itself, so the first failure breaks the
 *      group: no later operation runs in it, and the end aborts it. A
 *      retry under undo (S7) cannot run in the group's transaction, so it
 *      breaks the group too; its caller runs the operations again, one
 *      transaction each.
 *  S9. Hints (pmkv_hint, assoc.c H6) read the table with plain loads
 *      outside the group's transaction, only to prefetch: only the
 *      group's thread calls them, holding the store lock (S8), so no
 *      other thread writes meanwhile. Under undo they see the group's
 *      writes, which are in place; under redo they see the values from
 *      before the group (its writes are in its log), so a hint may fetch
 *      a line the group has since replaced, which only makes it useless.
 *      They follow no offset beyond the region, and what they read
 *      decides nothing.
 *  S10. Active expiry (pmkv_expire_step) removes, in one transaction,
 *      every entry whose expiry has passed in a run of buckets, as a
 *      writing operation that meets one does (S5): what any operation
 *      sees does not change, only the count and the memory held. Under
 *      copy-on-write it runs again under undo if it finds no room (S7).
 *  S11. A commit that fails on the disk (PMTX_E_IO) may have been applied
 *      in memory or not (pmtx rolls back a transaction whose COMMIT
 *      record was not written, and applies one whose record was), and
 *      whether it is durable is unknown: every later barrier of the
 *      region fails until it is opened again, which replays what the
 *      disk kept. The store is broken from that moment: every later
 *      operation that would read the table (KEYS and SCAN too) returns
 *      PMTX_E_IO without reading it, so no client reads a write that was
 *      refused and may not survive, and a group's operations, run again
 *      one by one after its commit failed (G3), apply nothing twice.
 *      DBSIZE and INFO still read the count, one word.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "store_int.h"

#define INPLACE_MAX 256u /* S4: longest value written in place */
#define SWEEP_BATCH 1024u

void pmkv_config_init(struct pmkv_config *c)
{
	memset(c, 0, sizeof(*c));
	c->size = 64u << 20;
	c->max_size = 4ull << 30;
	c->runtime = PMTX_RT_REDO;
	c->flavour = 0;
	c->domain = PMTX_PDOM1;
	c->backend = PMTX_BACKEND_HARDWARE;
	c->initial_buckets = PMKV_SEG_BUCKETS;
	c->max_key = 64u << 10;
	c->max_value = 16u << 20;
}

int64_t pmkv_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t pmkv_hash(const void *k, size_t n)
{
	return XXH3_64bits(k, n);
}

const char *pmkv_strerror(int status)
{
	switch (status) {
	case PMKV_E_NOTINT:
		return "ERR value is not an integer or out of range";
	case PMKV_E_OVERFLOW:
		return "ERR increment or decrement would overflow";
	case PMKV_E_TOOBIG:
		return "ERR string exceeds maximum allowed size "
		       "(proto-max-bulk-len)";
	case PMKV_E_OOM: /* pmkv_no_room */
	case PMKV_E_TABLE_FULL:
	case PMTX_E_NOMEM:
		return "OOM command not allowed when used memory > 'maxmemory'.";
	case PMKV_E_FORMAT:
		return "ERR not a pmkv store";
	case PMKV_E_GROUP:
		return "ERR an earlier command of its group failed";
	default:
		return pmtx_strerror(status);
	}
}

/* ---- entries ---- */

/* klen and vlen, as this operation sees them (vlen may have changed). */
static void lens(struct kvx *x, pmtx_off e, uint32_t *kl, uint32_t *vl)
{
	uint64_t w = kvx_get(x, KVENT(e, lens));
	*kl = PMKV_KLEN(w);
	*vl = PMKV_VLEN(w);
}

static int64_t expiry(struct kvx *x, pmtx_off e)
{
	return (int64_t)kvx_get(x, KVENT(e, expire_ms));
}

const struct pmkv_entry *pmkv_entry_at(struct kvx *x, pmtx_off obj)
{
	size_t usable;
	const struct pmkv_entry *e =
		kvx_view(x, obj, sizeof(struct pmkv_entry), &usable);
	if (!e || (uint64_t)PMKV_KLEN(e->lens) + PMKV_VLEN(e->lens) >
	                  usable - sizeof(*e))
		return NULL;
	return e;
}

/* S5 */
static int expired(struct kvx *x, pmtx_off e, int64_t now)
{
	int64_t t = expiry(x, e);
	return t != 0 && t <= now;
}

/* The thread's group (S8): the store it is open on (NULL: none), its
 * transaction and write flag, and its first failure. */
static _Thread_local struct {
	struct pmkv_store *s;
	struct kvx x;
	int failed;
} grp;

/* The store lock, unless this thread's group holds it already (S8). */
static void lock_store(struct pmkv_store *s)
{
	if (grp.s != s)
		pthread_mutex_lock(&s->lock);
}

static void unlock_store(struct pmkv_store *s)
{
	if (grp.s != s)
		pthread_mutex_unlock(&s->lock);
}

/* Take the store lock (S1, S2) and begin the operation's transaction,
 * of runtime rt; writer: it may write. In a group, join its transaction
 * instead (S8). */
static int x_begin_as(struct pmkv_store *s, struct kvx *x, int writer,
                      pmtx_runtime rt)
{
	if (grp.s == s) {
		if (!grp.failed && rt != s->rt)
			grp.failed = PMKV_E_GROUP; /* S7's retry: S8 */
		if (grp.failed)
			return PMKV_E_GROUP;
		*x = grp.x;
		x->writer = writer;
		return 0;
	}
	*x = (struct kvx){s, NULL, writer, 0, 0};
	pthread_mutex_lock(&s->lock);
	int rc = s->broken ? PMTX_E_IO : pmtx_begin(s->r, rt, &x->tx); /* S11 */
	if (rc)
		pthread_mutex_unlock(&s->lock);
	return rc;
}

static int x_begin(struct pmkv_store *s, struct kvx *x, int writer)
{
	return x_begin_as(s, x, writer, s->rt);
}

/* End the operation's transaction: commit if rc == 0, else abort (S1);
 * in a group, record its failure or what it wrote, and leave the
 * transaction open (S8). */
static int x_end(struct kvx *x, int rc)
{
	if (!rc)
		rc = x->err; /* obj.c O4 */
	if (grp.s == x->s) {
		if (rc && !grp.failed)
			grp.failed = rc;
		grp.x.wrote = x->wrote; /* x began as a copy of grp.x */
	} else {
		if (rc)
			pmtx_abort(x->tx);
		else
			rc = pmtx_commit(x->tx);
		if (rc == PMTX_E_IO)
			x->s->broken = 1; /* S11 */
		pthread_mutex_unlock(&x->s->lock);
	}
	return rc == PMTX_E_NOMEM ? PMKV_E_OOM : rc;
}

/* A fresh entry holding key k and the value v1 followed by v2 (obj.c
 * O3): its object in *out, its plain-store pointer in *ep. */
static int new_entry(struct kvx *x, const void *k, size_t kn, uint64_t h,
                     const void *v1, size_t n1, const void *v2, size_t n2,
                     int64_t exp, pmtx_off *out, struct pmkv_entry **ep)
{
	struct pmkv_store *s = x->s;
	struct pmkv_entry *e;
	if (kn > s->max_key || n1 + n2 > s->max_value)
		return PMKV_E_TOOBIG;
	int rc = kvx_new(x, sizeof(*e) + kn + n1 + n2, 0, out, (void **)&e);
	if (rc)
		return rc;
	*e = (struct pmkv_entry){0, h, (uint64_t)exp, PMKV_LENS(kn, n1 + n2)};
	char *key = (char *)(e + 1);
	memcpy(key, k, kn);
	if (n1)
		memcpy(key + kn, v1, n1);
	if (n2)
		memcpy(key + kn + n1, v2, n2);
#ifndef PMKV_PLANTED_BUG /* tests: the explorer must catch its removal */
	kvx_flush(x, e, sizeof(*e) + kn + n1 + n2);
#endif
	*ep = e;
	return 0;
}

/* Find a live key (S5): an expired one is removed first, in a writing
 * operation, or reported absent in a reader. */
static int find_live(struct kvx *x, const void *k, size_t kn, uint64_t h,
                     int64_t now, struct pos *pos)
{
	int rc = assoc_find(x, k, kn, h, pos);
	if (rc || !pos->off || !expired(x, pos->off, now))
		return rc;
	if (x->writer)
		rc = assoc_unlink(x, pos);
	pos->off = 0;
	pos->e = NULL;
	return rc;
}

/* Give key k the value v1 + v2 (S4), keeping or setting the expiry. */
static int put(struct kvx *x, const void *k, size_t kn, uint64_t h,
               struct pos *pos, const void *v1, size_t n1, const void *v2,
               size_t n2, int64_t exp)
{
	pmtx_off off;
	struct pmkv_entry *e;
	if (pos->off && n1 == 0 && n2 <= INPLACE_MAX) {
		uint32_t kl, vl;
		size_t room = 0;
		lens(x, pos->off, &kl, &vl);
		kvx_view(x, pos->off, 0, &room);
		if (sizeof(struct pmkv_entry) + kl + n2 <= room) {
			int rc = kvx_write(x, KVREF(pos->off, sizeof(*e) + kl),
			                   v2, n2);
			if (!rc)
				rc = kvx_put(x, KVENT(pos->off, lens),
				             PMKV_LENS(kl, n2));
			if (!rc)
				rc = kvx_put(x, KVENT(pos->off, expire_ms),
				             (uint64_t)exp);
			return rc;
		}
	}
	int rc = new_entry(x, k, kn, h, v1, n1, v2, n2, exp, &off, &e);
	if (rc)
		return rc;
	return pos->off ? assoc_replace(x, pos, off, e)
	                : assoc_link(x, off, e, h);
}

/* ---- operations ---- */

/* An inserting operation's lookup of key k, to which it may give a value
 * of vn bytes: the limits, growth first (S6), then the key. */
static int w_lookup(struct kvx *x, const void *k, size_t kn, size_t vn,
                    uint64_t h, struct pos *pos)
{
	if (kn > x->s->max_key || vn > x->s->max_value)
		return PMKV_E_TOOBIG;
	int rc = assoc_maybe_grow(x);
	return rc ? rc : find_live(x, k, kn, h, pmkv_now_ms(), pos);
}

/* A reader's lookup of one key: its transaction begun (the caller reads
 * pos, then ends it with x_end), or a status with nothing begun. */
static int r_find(struct pmkv_store *s, const void *k, size_t kn,
                  int64_t now, struct kvx *x, struct pos *pos)
{
	int rc = x_begin(s, x, 0);
	if (rc)
		return rc;
	rc = find_live(x, k, kn, pmkv_hash(k, kn), now, pos);
	if (rc)
		x_end(x, rc);
	return rc;
}

int pmkv_get(struct pmkv_store *s, const void *k, size_t kn,
             pmkv_emit_fn emit, void *arg, int *found)
{
	struct kvx x;
	struct pos pos;
	int rc = r_find(s, k, kn, pmkv_now_ms(), &x, &pos);
	*found = !rc && pos.off;
	if (rc)
		return rc;
	if (*found)
		emit(arg, entry_val(pos.e), PMKV_VLEN(pos.e->lens));
	return x_end(&x, 0);
}

/* SET's decision on an existing or absent key: 0 = leave it. */
static int set_applies(unsigned flags, int exists)
{
	return !((flags & PMKV_SET_NX) && exists) &&
	       !((flags & PMKV_SET_XX) && !exists);
}

int pmkv_set(struct pmkv_store *s, const void *k, size_t kn, const void *v,
             size_t vn, unsigned flags, int64_t expire_ms, int *done,
             pmkv_emit_fn emit, void *arg, int *found)
{
	struct kvx x;
	struct pos pos;
	uint64_t h = pmkv_hash(k, kn);
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	*done = 0;
	rc = w_lookup(&x, k, kn, vn, h, &pos);
	if (!rc && (flags & PMKV_SET_GET)) {
		*found = pos.off != 0;
		if (pos.off)
			emit(arg, entry_val(pos.e), PMKV_VLEN(pos.e->lens));
	}
	if (!rc && set_applies(flags, pos.off != 0)) {
		int64_t exp = (flags & PMKV_SET_KEEPTTL) && pos.off
		              ? expiry(&x, pos.off) : expire_ms;
		rc = put(&x, k, kn, h, &pos, NULL, 0, v, vn, exp);
		*done = !rc;
	}
	return x_end(&x, rc);
}

int pmkv_mset(struct pmkv_store *s, const struct pmkv_key *keys,
              const struct pmkv_key *vals, size_t n)
{
	struct kvx x;
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		struct pos pos;
		uint64_t h = pmkv_hash(keys[i].p, keys[i].n);
		rc = w_lookup(&x, keys[i].p, keys[i].n, vals[i].n, h, &pos);
		if (!rc)
			rc = put(&x, keys[i].p, keys[i].n, h, &pos, NULL, 0,
			         vals[i].p, vals[i].n, 0);
	}
	return x_end(&x, rc);
}

/* The runtime to run a removal under again, after status rc (S7); 0 if
 * there is none. */
static pmtx_runtime removal_retry(const struct pmkv_store *s, int rc)
{
	return pmkv_no_room(rc) && s->rt == PMTX_RT_COW ? PMTX_RT_UNDO : 0;
}

/* DEL (del: remove each key found) and EXISTS: one transaction of
 * runtime rt over the keys; *count: how many were found. */
static int each_key(struct pmkv_store *s, const struct pmkv_key *keys,
                    size_t n, int del, pmtx_runtime rt, uint64_t *count)
{
	struct kvx x;
	int64_t now = pmkv_now_ms();
	int rc = x_begin_as(s, &x, del, rt);
	if (rc)
		return rc;
	*count = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		struct pos pos;
		uint64_t h = pmkv_hash(keys[i].p, keys[i].n);
		rc = find_live(&x, keys[i].p, keys[i].n, h, now, &pos);
		if (!rc && pos.off && del)
			rc = assoc_unlink(&x, &pos);
		*count += !rc && pos.off;
	}
	return x_end(&x, rc);
}

int pmkv_del(struct pmkv_store *s, const struct pmkv_key *keys, size_t n,
             uint64_t *removed)
{
	int rc = each_key(s, keys, n, 1, s->rt, removed);
	pmtx_runtime rt = removal_retry(s, rc);
	return rt ? each_key(s, keys, n, 1, rt, removed) : rc;
}

int pmkv_exists(struct pmkv_store *s, const struct pmkv_key *keys, size_t n,
                uint64_t *count)
{
	return each_key(s, keys, n, 0, s->rt, count);
}

/* Redis's reading of a value as an integer: base 10, optional '-', no
 * spaces, no leading zeros, 64-bit signed, at most 20 characters. */
static int parse_int(const char *p, size_t n, int64_t *out)
{
	uint64_t v = 0, lim;
	size_t i = 0;
	int neg = n > 0 && p[0] == '-';
	if (n == 0 || n > 20)
		return -1;
	if (n == 1 && p[0] == '0')
		return *out = 0, 0;
	i = (size_t)neg;
	if (i == n || p[i] < '1' || p[i] > '9')
		return -1;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < n; i++) {
		if (p[i] < '0' || p[i] > '9' || v > (lim - (uint64_t)(p[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

int pmkv_incrby(struct pmkv_store *s, const void *k, size_t kn,
                int64_t delta, int64_t *result)
{
	struct kvx x;
	struct pos pos;
	uint64_t h = pmkv_hash(k, kn);
	int64_t old = 0;
	char buf[24];
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	rc = w_lookup(&x, k, kn, 0, h, &pos);
	if (!rc && pos.off) {
		uint32_t kl, vl;
		lens(&x, pos.off, &kl, &vl);
		if (vl > 20 || parse_int(entry_val(pos.e), vl, &old)) /* S3 */
			rc = PMKV_E_NOTINT;
	}
	if (!rc && ((delta > 0 && old > INT64_MAX - delta) ||
	            (delta < 0 && old < INT64_MIN - delta)))
		rc = PMKV_E_OVERFLOW;
	if (!rc) {
		*result = old + delta;
		int n = snprintf(buf, sizeof(buf), "%lld", (long long)*result);
		rc = put(&x, k, kn, h, &pos, NULL, 0, buf, (size_t)n,
		         pos.off ? expiry(&x, pos.off) : 0);
	}
	return x_end(&x, rc);
}

int pmkv_append(struct pmkv_store *s, const void *k, size_t kn,
                const void *v, size_t vn, uint64_t *len)
{
	struct kvx x;
	struct pos pos;
	uint64_t h = pmkv_hash(k, kn);
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	rc = w_lookup(&x, k, kn, vn, h, &pos);
	if (rc || !pos.off) {
		*len = vn;
		rc = rc ? rc : put(&x, k, kn, h, &pos, NULL, 0, v, vn, 0);
		return x_end(&x, rc);
	}
	uint32_t kl, vl;
	size_t room = 0;
	lens(&x, pos.off, &kl, &vl);
	kvx_view(&x, pos.off, 0, &room);
	*len = (uint64_t)vl + vn;
	if (*len > s->max_value) {
		rc = PMKV_E_TOOBIG;
	} else if (sizeof(struct pmkv_entry) + kl + *len <= room) {
		/* in place: the old bytes stay, the new ones follow (S4) */
		rc = kvx_write(&x, KVREF(pos.off, sizeof(struct pmkv_entry) +
		                                  kl + vl), v, vn);
		if (!rc)
			rc = kvx_put(&x, KVENT(pos.off, lens),
			             PMKV_LENS(kl, *len));
	} else {
		/* the old value is read before anything writes it (S3) */
		rc = put(&x, k, kn, h, &pos, entry_val(pos.e), vl, v, vn,
		         expiry(&x, pos.off));
	}
	return x_end(&x, rc);
}

int pmkv_strlen(struct pmkv_store *s, const void *k, size_t kn,
                uint64_t *len)
{
	struct kvx x;
	struct pos pos;
	int rc = r_find(s, k, kn, pmkv_now_ms(), &x, &pos);
	if (rc)
		return rc;
	*len = pos.off ? PMKV_VLEN(pos.e->lens) : 0;
	return x_end(&x, 0);
}

int pmkv_pttl(struct pmkv_store *s, const void *k, size_t kn, int64_t *ttl)
{
	struct kvx x;
	struct pos pos;
	int64_t now = pmkv_now_ms();
	int rc = r_find(s, k, kn, now, &x, &pos);
	if (rc)
		return rc;
	*ttl = !pos.off ? -2 : pos.e->expire_ms
	       ? (int64_t)pos.e->expire_ms - now : -1;
	return x_end(&x, 0);
}

/* The key count and the bucket count outside any transaction (DBSIZE,
 * INFO): under the store lock, no writer runs (S2). */
static void counts(struct pmkv_store *s, uint64_t *keys, uint64_t *buckets)
{
	struct kvx x = {s, NULL, 0, 0, 0};
	lock_store(s);
	if (grp.s == s)
		x = grp.x; /* what the group wrote counts (S8) */
	*keys = kvx_get(&x, KVMETA(&x, count));
	if (buckets)
		*buckets = assoc_buckets(&x);
	unlock_store(s);
}

uint64_t pmkv_dbsize(struct pmkv_store *s)
{
	uint64_t n;
	counts(s, &n, NULL);
	return n;
}

/* Free the trash in batches, each its own transaction. */
/* One FLUSHALL step in a transaction of its own: the detach (left ==
 * NULL) or a sweep batch; again under undo if it finds no room (S7). */
static int flush_step(struct pmkv_store *s, int *left)
{
	pmtx_runtime rt = s->rt;
	int rc;
	do {
		struct kvx x;
		if ((rc = x_begin_as(s, &x, 1, rt)))
			break;
		rc = x_end(&x, left ? assoc_sweep(&x, SWEEP_BATCH, left)
		                    : assoc_detach(&x));
	} while (rt != PMTX_RT_UNDO && (rt = removal_retry(s, rc)));
	return rc;
}

static int sweep_all(struct pmkv_store *s)
{
	int left = 1, rc = 0;
	while (left && !rc)
		rc = flush_step(s, &left);
	return rc;
}

int pmkv_flushall(struct pmkv_store *s)
{
	int rc = sweep_all(s); /* an older FLUSHALL's, if a crash cut it */
	if (!rc)
		rc = flush_step(s, NULL);
	return rc ? rc : sweep_all(s);
}

/* Emit the live keys of bucket b; how many in *n. */
static int scan_bucket(struct kvx *x, uint64_t b, int64_t now,
                       pmkv_emit_fn emit, void *arg, uint64_t *n)
{
	struct kvref head;
	uint64_t hops = 0, count = kvx_get(x, KVMETA(x, count));
	int rc = assoc_bucket_head(x, b, &head);
	if (rc)
		return rc;
	for (pmtx_off cur = kvx_get(x, head); cur; hops++) {
		const struct pmkv_entry *e = pmkv_entry_at(x, cur);
		if (!e || hops > count)
			return PMTX_E_CORRUPT;
		if (!expired(x, cur, now)) {
			emit(arg, entry_key(e), PMKV_KLEN(e->lens));
			(*n)++;
		}
		cur = kvx_get(x, KVENT(cur, next));
	}
	return 0;
}

int pmkv_scan(struct pmkv_store *s, uint64_t cursor, uint64_t count,
              pmkv_emit_fn emit, void *arg, uint64_t *next)
{
	struct kvx x;
	int64_t now = pmkv_now_ms();
	uint64_t n = 0, b = cursor;
	int rc = x_begin(s, &x, 0);
	if (rc)
		return rc;
	uint64_t nb = assoc_buckets(&x);
	for (; b < nb && n < count && !rc; b++)
		rc = scan_bucket(&x, b, now, emit, arg, &n);
	*next = b < nb ? b : 0;
	return x_end(&x, rc);
}

/* Remove the expired entries of bucket b (S10); count what was looked at
 * and what was removed. */
static int expire_bucket(struct kvx *x, uint64_t b, int64_t now,
                         uint64_t *seen, uint64_t *removed)
{
	struct kvref link;
	uint64_t hops = 0, count = kvx_get(x, KVMETA(x, count));
	int rc = assoc_bucket_head(x, b, &link);
	for (pmtx_off cur; !rc && (cur = kvx_get(x, link)); hops++) {
		const struct pmkv_entry *e = pmkv_entry_at(x, cur);
		if (!e || hops > count)
			return PMTX_E_CORRUPT;
		(*seen)++;
		if (expired(x, cur, now)) {
			struct pos pos = {link, cur, e};
			rc = assoc_unlink(x, &pos); /* link now names the next */
			*removed += !rc;
		} else {
			link = KVENT(cur, next);
		}
	}
	return rc;
}

static int expire_once(struct pmkv_store *s, pmtx_runtime rt, int64_t now,
                       uint64_t *cursor, uint64_t buckets, uint64_t *seen,
                       uint64_t *removed)
{
	struct kvx x;
	*seen = *removed = 0;
	int rc = x_begin_as(s, &x, 1, rt);
	if (rc)
		return rc;
	uint64_t nb = assoc_buckets(&x), b = *cursor < nb ? *cursor : 0;
	for (uint64_t k = 0; k < buckets && b < nb && !rc; k++, b++)
		rc = expire_bucket(&x, b, now, seen, removed);
	if (!(rc = x_end(&x, rc)))
		*cursor = b < nb ? b : 0;
	return rc;
}

int pmkv_expire_step(struct pmkv_store *s, int64_t now_ms, uint64_t *cursor,
                     uint64_t buckets, uint64_t *seen, uint64_t *removed)
{
	if (grp.s == s)
		return PMTX_E_INVAL;
	int rc = expire_once(s, s->rt, now_ms, cursor, buckets, seen, removed);
	pmtx_runtime rt = removal_retry(s, rc);
	return rt ? expire_once(s, rt, now_ms, cursor, buckets, seen, removed)
	          : rc;
}

void pmkv_info_get(struct pmkv_store *s, struct pmkv_info *out)
{
	counts(s, &out->keys, &out->buckets);
	out->wrapped = s->wrapped;
	out->region_size = pmtx_region_size(s->r);
	out->region_max = pmtx_region_max_size(s->r);
	out->runtime = s->rt;
	out->domain = pmtx_region_domain(s->r);
	out->backend = pmtx_region_backend(s->r);
}

int pmkv_check(struct pmkv_store *s, char *msg, size_t len)
{
	struct kvx x;
	uint64_t n = 0;
	int rc = x_begin(s, &x, 0);
	if (rc)
		return rc;
	rc = assoc_check(&x, &n, msg, len);
	uint64_t count = kvx_get(&x, KVMETA(&x, count));
	if (!rc && n != count) {
		snprintf(msg, len, "%llu entries in the chains, count says %llu",
		         (unsigned long long)n, (unsigned long long)count);
		rc = PMTX_E_CORRUPT;
	}
	return x_end(&x, rc);
}

/* ---- open and close ---- */

/* A fresh region's root and table, in one transaction (a crash during
 * create leaves the root zero: then this runs at the next open). It runs
 * under undo when the store's runtime is copy-on-write, which writes
 * nothing outside wrappers: the root is raw. */
static int init_root(struct pmkv_store *s, int wrapped)
{
	struct kvx x;
	struct pmkv_root *root = s->root;
	void *p;
	s->wrapped = wrapped;
	s->seg_shift = wrapped ? PMKV_WSEG_SHIFT : PMKV_SEG_SHIFT;
	s->meta = pmtx_off_of(s->r, root);
	int rc = x_begin_as(s, &x, 1,
	                    s->rt == PMTX_RT_COW ? PMTX_RT_UNDO : s->rt);
	if (rc)
		return rc;
	if (wrapped)
		rc = kvx_new(&x, sizeof(*root), 1, &s->meta, &p);
	if (!rc)
		rc = assoc_new_table(&x);
	if (!rc && wrapped)
		rc = PMTX_SET(x.tx, root->meta, s->meta);
	if (!rc)
		rc = PMTX_SET(x.tx, root->magic, PMKV_MAGIC);
	uint64_t format = PMKV_FORMAT_MAJOR | (uint64_t)PMKV_FORMAT_MINOR << 16 |
	                  (uint64_t)(wrapped ? PMKV_WRAPPED : PMKV_OPT) << 32;
	if (!rc) /* major, minor and flavour: one word */
		rc = pmtx_write(x.tx, &root->major, &format, sizeof(format));
	return x_end(&x, rc);
}

static const char *flavour_name(unsigned f)
{
	return f == PMKV_WRAPPED ? "wrapped" : "opt";
}

/* The root's format and version, against what the caller asked for. */
static int check_format(struct pmkv_store *s, const struct pmkv_config *c,
                        char *msg, size_t len, const char *path)
{
	const struct pmkv_root *root = s->root;
	if (root->magic != PMKV_MAGIC) {
		snprintf(msg, len, "%s: not a pmkv store", path);
		return PMKV_E_FORMAT;
	}
	if (root->major != PMKV_FORMAT_MAJOR ||
	    (root->flavour != PMKV_OPT && root->flavour != PMKV_WRAPPED)) {
		snprintf(msg, len, "%s: pmkv format %u.%u, version %u; this "
		         "server reads %u.x, versions %u (opt) and %u (wrapped)",
		         path, root->major, root->minor, root->flavour,
		         PMKV_FORMAT_MAJOR, PMKV_OPT, PMKV_WRAPPED);
		return PMKV_E_FORMAT;
	}
	if (c->flavour && c->flavour != root->flavour) {
		snprintf(msg, len, "%s: the store is the %s version; asked for "
		         "the %s version", path, flavour_name(root->flavour),
		         flavour_name(c->flavour));
		return PMKV_E_FORMAT;
	}
	if (root->flavour == PMKV_OPT && s->rt == PMTX_RT_COW) {
		snprintf(msg, len, "%s: the opt version writes in place and "
		         "cannot run under cow; the wrapped version can", path);
		return PMTX_E_UNSUPPORTED;
	}
	s->wrapped = root->flavour == PMKV_WRAPPED;
	s->seg_shift = s->wrapped ? PMKV_WSEG_SHIFT : PMKV_SEG_SHIFT;
	s->meta = s->wrapped ? root->meta : pmtx_off_of(s->r, root);
	return 0;
}

/* The table's geometry, checked (L1) before any operation follows it. */
static int check_geometry(struct pmkv_store *s)
{
	struct kvx x = {s, NULL, 0, 0, 0};
	if (s->wrapped && !kvx_view(&x, s->meta, sizeof(struct pmkv_root),
	                            NULL))
		return PMTX_E_CORRUPT;
	uint64_t nbase = kvx_get(&x, KVMETA(&x, nbase));
	uint64_t split = kvx_get(&x, KVMETA(&x, split));
	uint64_t cap = kvx_get(&x, KVMETA(&x, dir_cap));
	uint64_t tn = kvx_get(&x, KVMETA(&x, trash_nsegs));
	pmtx_off td = kvx_get(&x, KVMETA(&x, trash_dir));
	if (nbase < PMKV_NBASE_MIN || (nbase & (nbase - 1)) || split >= nbase ||
	    cap < PMKV_DIR_CAP_MIN || cap > PMKV_DIR_CAP_MAX ||
	    (cap & (cap - 1)) ||
	    pmkv_nsegs(nbase, split, s->seg_shift) > cap ||
	    !kvx_view(&x, kvx_get(&x, KVMETA(&x, dir)), cap * 8, NULL) ||
	    tn > PMKV_DIR_CAP_MAX || (td && !kvx_view(&x, td, tn * 8, NULL)))
		return PMTX_E_CORRUPT;
	return x.err;
}

static int check_root(struct pmkv_store *s, const struct pmkv_config *c,
                      char *msg, size_t len, const char *path)
{
	int rc = check_format(s, c, msg, len, path);
	if (!rc && (rc = check_geometry(s)))
		snprintf(msg, len, "%s: the table's geometry is corrupt", path);
	return rc;
}

static int open_region(const struct pmkv_config *c, pmtx_region **r,
                       char *msg, size_t len)
{
	pmtx_options o;
	struct stat st;
	pmtx_options_init(&o);
	o.layout = PMKV_LAYOUT;
	o.root_size = sizeof(struct pmkv_root);
	o.domain = c->domain;
	o.backend = c->backend;
	o.runtime = c->runtime;
	int twin = c->runtime == PMTX_RT_TWIN; /* fixed: all of max_size */
	o.max_size = !twin && c->max_size > c->size ? c->max_size : 0;
	if (c->fast_restart) /* used at create only */
		o.flags |= PMTX_CREATE_TWIN_FAST_RESTART;
	int rc = stat(c->path, &st) == 0
	                 ? pmtx_open(c->path, &o, r)
	                 : pmtx_create(c->path, twin ? c->max_size : c->size,
	                               &o, r);
	if (rc)
		snprintf(msg, len, "%s: %s%s%s", c->path, pmtx_strerror(rc),
		         *pmtx_errmsg() ? ": " : "", pmtx_errmsg());
	return rc;
}

static int valid_initial(uint64_t n)
{
	return n >= PMKV_NBASE_MIN && n <= PMKV_SEG_BUCKETS && !(n & (n - 1));
}

int pmkv_attach(pmtx_region *r, const struct pmkv_config *c, unsigned flags,
                struct pmkv_store **out, char *msg, size_t len)
{
	struct pmkv_store *s = calloc(1, sizeof(*s));
	size_t rsz = 0;
	int rc = 0;
	const char *name = c->path ? c->path : "region";
	*out = NULL;
	if (!s)
		return ENOMEM;
	s->r = r;
	s->root = pmtx_root(r, &rsz);
	s->base = (char *)s->root - pmtx_off_of(r, s->root);
	s->rt = c->runtime;
	s->max_key = c->max_key;
	s->max_value = c->max_value;
	s->initial_buckets = valid_initial(c->initial_buckets)
	                     ? c->initial_buckets : PMKV_SEG_BUCKETS;
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP); /* S2 */
	pthread_mutex_init(&s->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	if (rsz < sizeof(struct pmkv_root)) {
		snprintf(msg, len, "%s: root too small", name);
		rc = PMKV_E_FORMAT;
	} else if (s->root->magic == 0 && s->root->dir == 0 &&
	           s->root->meta == 0 && !(flags & PMKV_ATTACH_INSPECT)) {
		/* a new store: as asked, else wrapped only if cow needs it */
		unsigned f = c->flavour ? c->flavour
		             : c->runtime == PMTX_RT_COW ? PMKV_WRAPPED : PMKV_OPT;
		rc = f == PMKV_OPT && c->runtime == PMTX_RT_COW
		     ? PMTX_E_UNSUPPORTED : init_root(s, f == PMKV_WRAPPED);
	}
	if (!rc)
		rc = check_root(s, c, msg, len, name);
	if (!rc && !(flags & PMKV_ATTACH_INSPECT))
		rc = sweep_all(s);
	if (rc == PMTX_E_UNSUPPORTED && !*msg) /* e.g. twin vs region kind */
		snprintf(msg, len, "%s: %s (%s)", name, pmkv_strerror(rc),
		         pmtx_errmsg());
	if (rc && !*msg)
		snprintf(msg, len, "%s: %s", name, pmkv_strerror(rc));
	if (rc) {
		pmkv_detach(s);
		return rc;
	}
	*out = s;
	return 0;
}

void pmkv_detach(struct pmkv_store *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int pmkv_open(const struct pmkv_config *c, struct pmkv_store **out,
              char *msg, size_t len)
{
	pmtx_region *r;
	*msg = 0;
	struct pmkv_config cc = *c;
	int rc = open_region(c, &r, msg, len);
	if (rc)
		return rc;
	if (c->runtime_default && pmtx_region_runtime(r) == PMTX_RT_TWIN)
		cc.runtime = PMTX_RT_TWIN; /* the only one it runs */
	if ((rc = pmkv_attach(r, &cc, 0, out, msg, len)))
		pmtx_close(r);
	return rc;
}

int pmkv_close(struct pmkv_store *s)
{
	if (!s)
		return 0;
	int rc = pmtx_close(s->r);
	pmkv_detach(s);
	return rc;
}

int pmkv_walk(struct pmkv_store *s, int (*fn)(pmtx_off off, void *arg),
              void *arg)
{
	struct kvx x = {s, NULL, 0, 0, 0};
	pthread_mutex_lock(&s->lock);
	int rc = s->broken ? PMTX_E_IO : assoc_walk(&x, fn, arg); /* S11 */
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int pmkv_group_begin(struct pmkv_store *s)
{
	if (grp.s)
		return PMTX_E_INVAL;
	int rc = x_begin(s, &grp.x, 1);
	if (!rc)
		grp.s = s, grp.failed = 0;
	return rc;
}

int pmkv_hinting(struct pmkv_store *s)
{
	return grp.s == s && !s->wrapped;
}

uint64_t pmkv_hint(struct pmkv_store *s, const void *k, size_t kn)
{
	if (!pmkv_hinting(s)) /* S9 */
		return 0;
	return assoc_hint_bucket(s, pmkv_hash(k, kn));
}

void pmkv_hint_more(struct pmkv_store *s, uint64_t token)
{
	if (pmkv_hinting(s))
		assoc_hint_entry(s, token);
}

int pmkv_group_end(struct pmkv_store *s)
{
	if (grp.s != s)
		return PMTX_E_INVAL;
	grp.s = NULL; /* x_end then ends the transaction itself */
	return x_end(&grp.x, grp.failed);
}

pmtx_region *pmkv_region(struct pmkv_store *s)
{
	return s->r;
}
