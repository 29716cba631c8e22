/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store.c - pmkv's operations, each one pmtx transaction, written once
 * for both versions of the store over the key-space interface
 * (store_int.h: keyspace.c for opt, assoc.c for wrapped).
 *
 * DESIGN
 * Persistent: everything in layout.h. Volatile: the lock, the runtime,
 * the version, the opt version's map handles.
 *
 * Invariants
 *  S1. Every operation that writes runs in one transaction, under the
 *      store lock, and returns only after pmtx_commit has returned: the
 *      server acknowledges a write only once it is durable. A failed step
 *      aborts the whole transaction: nothing of it stays (the hash map
 *      aborts the caller's transaction itself when it fails after a
 *      write: pmtx_containers.h).
 *  S2. Reads run in a transaction of their own under the store lock too,
 *      and read values through views (struct kval): no writer runs
 *      meanwhile (S1). The lock is one adaptive mutex (it spins a while
 *      before it sleeps): an operation holds it for about a microsecond,
 *      less than a sleeping thread takes to wake on this class of
 *      machine; a reader-writer lock, which lets readers run together,
 *      measured 4 to 7 times slower with two threads (a futex sleep and
 *      wake-up at every writer), in the server and in pmkv-storebench.
 *  S3. A write of a value puts the whole object (pmtx_hmap_put; the
 *      wrapped table: a fresh entry), which replaces the old one in the
 *      same transaction; the hash map writes it in place when it fits
 *      the old entry's block (hmap.c H2). A lookup's view shows what
 *      this transaction (a group too) last wrote, under every runtime:
 *      the hash map's views copy bytes the transaction holds only in its
 *      write set (cont.h C5), and a fresh entry is written with plain
 *      stores, which plain loads see. An operation reads the value it
 *      found before it writes the key: the view may change under it.
 *  S4. The wrapped table writes no value in place. Format 1.x wrote short
 *      values in place with pmtx_write and read them through plain
 *      views; under redo that write sat in the log, and a later read in
 *      the same group read the old bytes (three pipelined INCRs answered
 *      6, 6, 6). The hash map's views do not have that flaw (S3).
 *  S5. An entry whose expiry has passed is absent to every operation;
 *      a writing operation that meets it removes it in its transaction.
 *  S6. Growth (ks->grow, the wrapped table's split) runs at the start of
 *      an inserting operation, before its lookups, so no chain position
 *      it holds is moved under it. The hash map splits inside its put.
 *  S7. Keys can be removed from a full region: under copy-on-write
 *      (wrapped only) every write copies its object, so a removal (DEL, a
 *      FLUSHALL sweep step, its detach, active expiry) that finds no room
 *      runs again under undo, which writes in place.
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
 *  S9. Hints (pmkv_hint: pmtx_hmap_prefetch, opt only) read the map with
 *      plain loads outside the group's transaction, only to prefetch:
 *      only the group's thread calls them, holding the store lock (S8),
 *      so no other thread writes meanwhile. Under redo they see the
 *      values from before the group (its writes are in its log), so a
 *      hint may fetch a line the group has since replaced, which only
 *      makes it useless. They follow no offset beyond the region, and
 *      what they read decides nothing.
 *  S10. Active expiry (pmkv_expire_step) scans a run of buckets (the key
 *      space's scan cursor), collects the keys whose expiry has passed,
 *      and removes them in the same transaction (a scan's callback must
 *      not write the map), as a writing operation that meets one does
 *      (S5): what any operation sees does not change, only the count and
 *      the memory held.
 *  S11. A commit that fails on the disk (PMTX_E_IO) may have been applied
 *      in memory or not (pmtx rolls back a transaction whose COMMIT
 *      record was not written, and applies one whose record was), and
 *      whether it is durable is unknown: every later barrier of the
 *      region fails until it is opened again, which replays what the
 *      disk kept. The store is broken from that moment: every later
 *      operation that would read the key space (KEYS and SCAN too)
 *      returns PMTX_E_IO without reading it, so no client reads a write
 *      that was refused and may not survive, and a group's operations,
 *      run again one by one after its commit failed (G3), apply nothing
 *      twice. DBSIZE and INFO still read the count.
 *  S12. FLUSHALL is atomic: one transaction detaches every key into the
 *      trash (ks->flush: the maps into the root's trash slots, or the
 *      wrapped table's directory), then batches of SWEEP_BATCH entries,
 *      each a transaction of its own, free it (pmtx_hmap_destroy_some);
 *      a restart finishes a sweep a crash cut short, and a FLUSHALL
 *      sweeps what an earlier one left before it detaches.
 *  S13. A client's mistake (pmkv_user_error: a wrong type, a value that
 *      is not a number, an overflow, a value too long, no such key) is
 *      found before the operation writes anything, so in a group (S8)
 *      it fails that operation alone: the group goes on and commits the
 *      others, as Redis's EXEC runs every command of a transaction and
 *      answers an error for the ones that fail.
 *  S14. Collections (layout.h L4): an operation that removes a key or
 *      replaces its object frees the containers the old object named in
 *      the same transaction (kx_remove, put_obj), so no container is
 *      ever unreachable (L3); RENAME moves the object, containers and
 *      all. While the root's PMKV_ROOT_TYPED flag is clear no object is
 *      a collection (L6), and a blind write (SET, MSET) skips the lookup
 *      of the key it replaces; once it is set, every write looks first.
 *      s->typed follows the flag, set when the flag's write is made, so
 *      later operations of the same transaction see it too.
 *  S15. Databases: every operation works on the calling thread's
 *      database (pmkv_select, a thread-local number, x->db from
 *      x_begin), so a server thread selects its client's before each
 *      command. The wrapped version has database 0 only. SWAPDB
 *      exchanges two root slots; it is refused inside a group, whose
 *      later operations would find the maps through the root's committed
 *      words (keyspace.c K2), which the group has not yet changed. MOVE
 *      runs in one transaction over both databases.
 *  S16. Eviction (maxmemory-policy): a write refused for want of room is
 *      run again after pmkv_evict removed keys, each eviction a
 *      transaction of its own (a removal: S7 holds). It samples
 *      EVICT_SAMPLES keys from a random bucket of each database in turn
 *      and removes the best by the policy: the least recently used (LRU),
 *      the least often used (LFU), the soonest to expire (volatile-ttl),
 *      or the first (random); the volatile policies only look at keys
 *      with an expiry. The clocks LRU and LFU read are volatile and
 *      approximate, as Redis's are: a table of PMKV_ACCESS_SLOTS slots
 *      indexed by the key's hash (keys that share a slot share a clock),
 *      written by every lookup that finds a key while a policy needs them,
 *      all zero after a restart (the samples are then equal, and the
 *      first is taken).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "store_int.h"

#define SWEEP_BATCH 1024u
#define SCAN_MAX (UINT64_C(1) << 40) /* a SCAN's COUNT, at most */

void pmkv_config_init(struct pmkv_config *c)
{
	memset(c, 0, sizeof(*c));
	c->size = 64u << 20;
	c->max_size = 4ull << 30;
	c->runtime = PMTX_RT_REDO;
	c->flavour = 0;
	c->domain = PMTX_PDOM1;
	c->backend = PMTX_BACKEND_HARDWARE;
	c->initial_buckets = PMKV_NBASE_DEFAULT;
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

/* splitmix64 over a state per thread, seeded from the clock and the
 * state's own address the first time: an even spread, no more. */
static uint64_t rand64(void)
{
	static _Thread_local uint64_t state;
	if (!state) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		state = ((uint64_t)ts.tv_sec << 32 ^ (uint64_t)ts.tv_nsec ^
		         (uint64_t)(uintptr_t)&state) | 1;
	}
	uint64_t z = (state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

uint64_t pmkv_rand_below(uint64_t n)
{
	return (uint64_t)(((unsigned __int128)rand64() * n) >> 64);
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
	case PMKV_E_NOKEY:
		return "ERR no such key";
	case PMKV_E_WRONGTYPE:
		return "WRONGTYPE Operation against a key holding the wrong "
		       "kind of value";
	case PMKV_E_STRINGS:
		return "ERR this store is pmkv's wrapped version, which holds "
		       "strings only";
	case PMKV_E_NOTFLOAT:
		return "ERR value is not a valid float";
	case PMKV_E_DBINDEX:
		return "ERR DB index is out of range";
	case PMKV_E_SAMEDB:
		return "ERR source and destination objects are the same";
	case PMKV_E_INGROUP:
		return "ERR SWAPDB is not supported inside MULTI or a script "
		       "by pmkv";
	default:
		return pmtx_strerror(status);
	}
}

/* S5 */
static int expired(const struct kval *v, int64_t now)
{
	return v->expire_ms != 0 && v->expire_ms <= now;
}

/* The thread's database (S15). */
static _Thread_local unsigned cur_db;

unsigned pmkv_cur_db(void)
{
	return cur_db;
}

int pmkv_select(struct pmkv_store *s, unsigned db)
{
	if (db >= PMKV_DBS || (db && s->wrapped))
		return PMKV_E_DBINDEX;
	cur_db = db;
	return 0;
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
		x->db = cur_db;
		return 0;
	}
	*x = (struct kvx){.s = s, .writer = writer, .db = cur_db};
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

/* The containers the operation opened (kx_open). */
static void close_handles(struct kvx *x)
{
	for (unsigned i = 0; i < x->nopen; i++) {
		if (x->kind[i] == PMKV_T_LIST)
			pmtx_list_close(x->open[i]);
		else if (x->kind[i] == PMKV_T_ZSET)
			pmtx_map_close(x->open[i]);
		else
			pmtx_hmap_close(x->open[i]);
	}
	x->nopen = 0;
}

/* End the operation's transaction: commit if rc == 0, else abort (S1);
 * in a group, record its failure or what it wrote, and leave the
 * transaction open (S8). */
static int x_end(struct kvx *x, int rc)
{
	if (!rc)
		rc = x->err; /* obj.c O4 */
	close_handles(x);
	if (grp.s == x->s) {
		if (rc && !grp.failed && !pmkv_user_error(rc)) /* S13 */
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

#define KPOS(key, len) ((struct kpos){.k = (key), .kn = (len)})

/* Find a live key (S5): an expired one is removed first, in a writing
 * operation, or reported absent in a reader. */
/* S16: the access clock of key k. */
static void touch_access(struct pmkv_store *s, const void *k, size_t kn,
                         int64_t now)
{
	uint32_t *a = &s->access[pmkv_hash(k, kn) & (PMKV_ACCESS_SLOTS - 1)];
	if (!s->access_lfu)
		*a = (uint32_t)(now / 1000);
	else if (*a < UINT32_MAX)
		(*a)++;
}

static int find_live(struct kvx *x, struct kpos *p, int64_t now)
{
	int rc = x->s->ks->find(x, p);
	if (!rc && p->found && x->s->access)
		touch_access(x->s, p->k, p->kn, now);
	if (rc || !p->found || !expired(&p->v, now))
		return rc;
	if (x->writer)
		rc = kx_remove(x, p);
	p->found = 0;
	return rc;
}

static int put_obj(struct kvx *x, struct kpos *p, unsigned type,
                   const void *v1, size_t n1, const void *v2, size_t n2,
                   int64_t exp);

/* The payload of the collection p found (layout.h L4). */
static int coll_of(const struct kpos *p, struct pmkv_coll *c)
{
	if (p->v.n != sizeof(*c))
		return PMTX_E_CORRUPT;
	memcpy(c, p->v.p, sizeof(*c));
	return 0;
}

/* Free the containers of the object p found, if it is a collection
 * (S14). */
static int drop_coll(struct kvx *x, const struct kpos *p)
{
	struct pmkv_coll c;
	int rc;
	if (!p->found || p->v.type == PMKV_T_STRING)
		return 0;
	return (rc = coll_of(p, &c)) ? rc
	       : pmkv_coll_destroy(x, p->v.type, &c);
}

int pmkv_coll_destroy(struct kvx *x, unsigned type,
                      const struct pmkv_coll *c)
{
	int rc;
	if (type == PMKV_T_STRING)
		return 0;
	x->wrote = 1;
	switch (type) {
	case PMKV_T_LIST:
		return pmtx_list_destroy(x->tx, c->c[0]);
	case PMKV_T_ZSET:
		if ((rc = pmtx_map_destroy(x->tx, c->c[1])))
			return rc;
		/* fall through */
	default:
		return pmtx_hmap_destroy(x->tx, c->c[0]);
	}
}

int kx_remove(struct kvx *x, struct kpos *p)
{
	int rc = drop_coll(x, p);
	if (!rc)
		rc = x->s->ks->del(x, p);
	p->found = 0;
	return rc;
}

/* ---- the collections' interface (store_int.h) ---- */

int kx_begin(struct pmkv_store *s, struct kvx *x, int writer)
{
	return x_begin(s, x, writer);
}

int kx_end(struct kvx *x, int rc)
{
	return x_end(x, rc);
}

int kx_find(struct kvx *x, struct kpos *p)
{
	int rc = x->writer ? x->s->ks->grow(x) : 0; /* S6 */
	return rc ? rc : find_live(x, p, pmkv_now_ms());
}

int kx_coll(const struct kpos *p, unsigned type, struct pmkv_coll *c)
{
	memset(c, 0, sizeof(*c));
	if (!p->found)
		return 0;
	if (p->v.type != type)
		return PMKV_E_WRONGTYPE;
	return coll_of(p, c);
}

/* Set the root's PMKV_ROOT_TYPED flag (layout.h L6), and mark a 2.0
 * store 2.1 (L5), in x. */
static int mark_typed(struct kvx *x)
{
	struct pmkv_root *root = (struct pmkv_root *)x->s->root;
	uint32_t flags = root->flags | PMKV_ROOT_TYPED;
	uint16_t minor = PMKV_FORMAT_MINOR;
	int rc = 0;
	/* plain loads: what is committed (a write of this transaction's
	 * may not show under redo, and is then made again, harmlessly) */
	if (!(root->flags & PMKV_ROOT_TYPED))
		rc = pmtx_write(x->tx, &root->flags, &flags, sizeof(flags));
	if (!rc && root->h.minor < minor)
		rc = pmtx_write(x->tx, &root->h.minor, &minor, sizeof(minor));
	x->s->typed = 1; /* S14: every later write looks first */
	return rc;
}

/* A new collection's containers (layout.h L4). */
static int coll_create(struct kvx *x, unsigned type, struct pmkv_coll *c)
{
	memset(c, 0, sizeof(*c));
	switch (type) {
	case PMKV_T_LIST:
		return pmtx_list_create(x->tx, &c->c[0]);
	case PMKV_T_SET:
	case PMKV_T_HASH:
		return pmtx_hmap_create(x->tx, 0, &c->c[0]);
	case PMKV_T_ZSET: {
		int rc = pmtx_hmap_create(x->tx, 0, &c->c[0]);
		return rc ? rc : pmtx_map_create(x->tx, PMTX_MAP_SCORE,
		                                 &c->c[1]);
	}
	default:
		return PMTX_E_INVAL;
	}
}

int kx_coll_new(struct kvx *x, struct kpos *p, unsigned type,
                struct pmkv_coll *c)
{
	if (x->s->wrapped)
		return PMKV_E_STRINGS;
	if (p->kn > x->s->max_key)
		return PMKV_E_TOOBIG;
	x->wrote = 1;
	int rc = mark_typed(x);
	if (!rc)
		rc = coll_create(x, type, c);
	if (!rc)
		rc = put_obj(x, p, type, c, sizeof(*c), NULL, 0, 0);
	if (!rc)
		rc = x->s->ks->find(x, p); /* p names the new object */
	return rc;
}

/* Remember handle h, of this kind, to close at kx_end. */
static int kx_keep(struct kvx *x, void *h, unsigned kind)
{
	x->open[x->nopen] = h;
	x->kind[x->nopen++] = (unsigned char)kind;
	return 0;
}

int kx_hmap(struct kvx *x, pmtx_off off, pmtx_hmap **m)
{
	int rc = x->nopen == KX_OPEN ? PMTX_E_BUSY
	         : pmtx_hmap_open(x->s->r, off, NULL, m);
	return rc ? rc : kx_keep(x, *m, PMKV_T_HASH);
}

int kx_list(struct kvx *x, pmtx_off off, pmtx_list **l)
{
	int rc = x->nopen == KX_OPEN ? PMTX_E_BUSY
	         : pmtx_list_open(x->s->r, off, NULL, l);
	return rc ? rc : kx_keep(x, *l, PMKV_T_LIST);
}

int kx_map(struct kvx *x, pmtx_off off, pmtx_map **m)
{
	int rc = x->nopen == KX_OPEN ? PMTX_E_BUSY
	         : pmtx_map_open(x->s->r, off, NULL, m);
	return rc ? rc : kx_keep(x, *m, PMKV_T_ZSET);
}

#ifdef PMKV_PLANTED_BUG
/* tests: the explorer must catch a replace made in two transactions (S1
 * broken): the old entry's removal committed before the new one is put */
static int planted_split(struct kvx *x, struct kpos *p)
{
	int rc = p->looked ? 0 : x->s->ks->find(x, p);
	if (!rc && p->found && grp.s != x->s && !x->s->wrapped &&
	    !(rc = x->s->ks->del(x, p)) && !(rc = pmtx_commit(x->tx)))
		rc = pmtx_begin(x->s->r, x->s->rt, &x->tx);
	return rc;
}
#endif

/* Give the key p looked up an object of this type whose payload is
 * v1 + v2 (S3, S4), freeing the containers of the one it replaces
 * (S14). */
static int put_obj(struct kvx *x, struct kpos *p, unsigned type,
                   const void *v1, size_t n1, const void *v2, size_t n2,
                   int64_t exp)
{
	if (p->kn > x->s->max_key || n1 + n2 > x->s->max_value)
		return PMKV_E_TOOBIG;
	int rc = p->looked ? drop_coll(x, p) : 0;
#ifdef PMKV_PLANTED_BUG
	if (!rc)
		rc = planted_split(x, p);
#endif
	return rc ? rc : x->s->ks->put(x, p, type, exp, v1, n1, v2, n2);
}

/* Give the key p looked up the string v1 + v2. */
static int put(struct kvx *x, struct kpos *p, const void *v1, size_t n1,
               const void *v2, size_t n2, int64_t exp)
{
	return put_obj(x, p, PMKV_T_STRING, v1, n1, v2, n2, exp);
}

/* A string p found, for an operation on strings only (S13). */
static int string_ok(const struct kpos *p)
{
	return p->found && p->v.type != PMKV_T_STRING ? PMKV_E_WRONGTYPE : 0;
}

/* ---- operations ---- */

/* An inserting operation's lookup of p->k, to which it may give a value
 * of vn bytes: the limits, growth first (S6), then the key, unless the
 * operation only overwrites it (blind: a put replaces whatever is there,
 * expired or not, as a lookup and a put would). */
static int w_prepare(struct kvx *x, struct kpos *p, size_t vn, int blind)
{
	if (p->kn > x->s->max_key || vn > x->s->max_value)
		return PMKV_E_TOOBIG;
	int rc = x->s->ks->grow(x);
	return rc || (blind && !x->s->typed) ? rc /* S14 */
	                                     : find_live(x, p, pmkv_now_ms());
}

static int w_lookup(struct kvx *x, struct kpos *p, size_t vn)
{
	return w_prepare(x, p, vn, 0);
}

/* w_lookup for an operation on strings only: PMKV_E_WRONGTYPE if p
 * holds another type (S13: before any write). */
static int w_string(struct kvx *x, struct kpos *p, size_t vn)
{
	int rc = w_lookup(x, p, vn);
	return rc ? rc : string_ok(p);
}

/* A reader's lookup of one key: its transaction begun (the caller reads
 * p, then ends it with x_end), or a status with nothing begun. */
static int r_find(struct pmkv_store *s, struct kpos *p, int64_t now,
                  struct kvx *x)
{
	int rc = x_begin(s, x, 0);
	if (!rc && (rc = find_live(x, p, now)))
		x_end(x, rc);
	return rc;
}

int pmkv_get(struct pmkv_store *s, const void *k, size_t kn,
             pmkv_emit_fn emit, void *arg, int *found)
{
	struct kvx x;
	struct kpos p = KPOS(k, kn);
	int rc = r_find(s, &p, pmkv_now_ms(), &x);
	*found = !rc && p.found;
	if (rc)
		return rc;
	if ((rc = string_ok(&p)))
		*found = 0;
	else if (p.found)
		emit(arg, p.v.p, p.v.n);
	return x_end(&x, rc);
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
	struct kpos p = KPOS(k, kn);
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	*done = 0;
	rc = w_prepare(&x, &p, vn, !flags);
	if (!rc && (flags & PMKV_SET_GET))
		rc = string_ok(&p);
	if (!rc && (flags & PMKV_SET_GET)) {
		*found = p.found;
		if (p.found)
			emit(arg, p.v.p, p.v.n);
	}
	if (!rc && set_applies(flags, p.found)) {
		int64_t exp = (flags & PMKV_SET_KEEPTTL) && p.found
		              ? p.v.expire_ms : expire_ms;
		rc = put(&x, &p, NULL, 0, v, vn, exp);
		*done = !rc;
	}
	return x_end(&x, rc);
}

int pmkv_mset(struct pmkv_store *s, const struct pmkv_key *keys,
              const struct pmkv_key *vals, size_t n)
{
	struct kvx x;
	for (size_t i = 0; i < n; i++) /* S13: before anything is written */
		if (keys[i].n > s->max_key || vals[i].n > s->max_value)
			return PMKV_E_TOOBIG;
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		struct kpos p = KPOS(keys[i].p, keys[i].n);
		rc = w_prepare(&x, &p, vals[i].n, 1);
		if (!rc)
			rc = put(&x, &p, NULL, 0, vals[i].p, vals[i].n, 0);
	}
	return x_end(&x, rc);
}

int pmkv_msetnx(struct pmkv_store *s, const struct pmkv_key *keys,
                const struct pmkv_key *vals, size_t n, int *done)
{
	struct kvx x;
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	*done = 0;
	for (size_t i = 0; i < n && !rc; i++) { /* every key absent first */
		struct kpos p = KPOS(keys[i].p, keys[i].n);
		rc = w_lookup(&x, &p, vals[i].n);
		if (!rc && p.found)
			return x_end(&x, 0);
	}
	for (size_t i = 0; i < n && !rc; i++) {
		struct kpos p = KPOS(keys[i].p, keys[i].n);
		rc = put(&x, &p, NULL, 0, vals[i].p, vals[i].n, 0);
	}
	*done = !rc;
	return x_end(&x, rc);
}

/* The runtime to run a removal under again, after status rc (S7); 0 if
 * there is none. */
static pmtx_runtime removal_retry(const struct pmkv_store *s, int rc)
{
	return pmkv_no_room(rc) && s->rt == PMTX_RT_COW ? PMTX_RT_UNDO : 0;
}

/* EXPIRE's conditions (Redis 7.0's expireGenericCommand) on a key whose
 * expiry is cur (0: none), for the new one when. */
static int expire_applies(unsigned flags, int64_t cur, int64_t when)
{
	return !((flags & PMKV_EXP_NX) && cur) &&
	       !((flags & PMKV_EXP_XX) && !cur) &&
	       !((flags & PMKV_EXP_GT) && (!cur || when <= cur)) &&
	       !((flags & PMKV_EXP_LT) && cur && when >= cur);
}

/* What pmkv_expire does to the live key p found, under flags: remove
 * it, give it the expiry when (none: 0), or leave it (*done = 0). */
static int expire_key(struct kvx *x, struct kpos *p, unsigned flags,
                      int64_t when, int64_t now, int *done)
{
	int64_t cur = p->v.expire_ms;
	int set = flags & PMKV_EXP_SET;
	int del = (flags & PMKV_EXP_DEL) || (set && when <= now);
	int64_t to = set ? when : flags & PMKV_EXP_PERSIST ? 0 : cur;
	*done = expire_applies(flags, cur, when) && (del || set || to != cur);
	if (!*done)
		return 0;
	if (del)
		return kx_remove(x, p);
	return to == cur ? 0 /* S3: put copies the value first */
	                 : x->s->ks->put(x, p, p->v.type, to, p->v.p, p->v.n,
	                                 NULL, 0); /* the same containers */
}

/* A copy of a value, to hand on after the commit (S3: a view lasts only
 * until the key space is written). */
struct vcopy {
	char *p;
	size_t n;
};

static int vcopy_of(struct vcopy *c, const struct kval *v)
{
	free(c->p);
	c->n = v->n;
	if (!(c->p = malloc(v->n ? v->n : 1)))
		return ENOMEM;
	memcpy(c->p, v->p, v->n);
	return 0;
}

static int setexp_once(struct pmkv_store *s, pmtx_runtime rt,
                       const void *k, size_t kn, unsigned flags,
                       int64_t when, struct pmkv_reply *r, struct vcopy *c)
{
	struct kvx x;
	struct kpos p = KPOS(k, kn);
	int64_t now = pmkv_now_ms();
	int rc = x_begin_as(s, &x, 1, rt);
	if (rc)
		return rc;
	r->found = r->done = 0;
	rc = find_live(&x, &p, now);
	r->found = !rc && p.found;
	if (r->found && (flags & PMKV_EXP_GET) && !(rc = string_ok(&p)))
		rc = vcopy_of(c, &p.v);
	if (!rc && r->found)
		rc = expire_key(&x, &p, flags, when, now, &r->done);
	return x_end(&x, rc);
}

int pmkv_expire(struct pmkv_store *s, const void *k, size_t kn,
                unsigned flags, int64_t when, struct pmkv_reply *r)
{
	struct vcopy c = {NULL, 0};
	int rc = setexp_once(s, s->rt, k, kn, flags, when, r, &c);
	pmtx_runtime rt = flags & PMKV_EXP_DEL ? removal_retry(s, rc) : 0;
	if (rt) /* S7 */
		rc = setexp_once(s, rt, k, kn, flags, when, r, &c);
	if (!rc && r->found && (flags & PMKV_EXP_GET))
		r->emit(r->arg, c.p, c.n);
	free(c.p);
	return rc;
}

/* RENAME's work in x: the source's value and expiry copied (its view
 * may change once the key space is written: S3), the source removed,
 * then the destination given them. */
static int move_key(struct kvx *x, struct kpos *src, struct kpos *dst,
                    unsigned db)
{
	struct vcopy c = {NULL, 0};
	int64_t exp = src->v.expire_ms;
	unsigned type = src->v.type;
	int rc = vcopy_of(&c, &src->v);
	if (!rc) /* not kx_remove: the containers move with it (S14) */
		rc = x->s->ks->del(x, src);
	x->db = db; /* the destination's (MOVE), or the same (RENAME) */
	if (!rc)
		rc = find_live(x, dst, pmkv_now_ms());
	if (!rc)
		rc = put_obj(x, dst, type, c.p, c.n, NULL, 0, exp);
	free(c.p);
	return rc;
}

int pmkv_rename(struct pmkv_store *s, const void *k, size_t kn,
                const void *to, size_t tn, int nx, int *done)
{
	struct kvx x;
	struct kpos src = KPOS(k, kn), dst = KPOS(to, tn);
	int64_t now = pmkv_now_ms();
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	*done = 0;
	rc = w_lookup(&x, &src, 0);
	if (!rc && !src.found)
		rc = PMKV_E_NOKEY;
	int same = kn == tn && !memcmp(k, to, kn);
	if (!rc && nx && !(rc = find_live(&x, &dst, now)) && dst.found)
		return x_end(&x, 0); /* the same key too: Redis's 0 */
	if (!rc && !same) {
		dst = KPOS(to, tn);
		rc = move_key(&x, &src, &dst, x.db);
	}
	*done = !rc;
	return x_end(&x, rc);
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
		struct kpos p = KPOS(keys[i].p, keys[i].n);
		rc = find_live(&x, &p, now);
		int found = p.found;
		if (!rc && found && del)
			rc = kx_remove(&x, &p);
		*count += !rc && found;
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

int pmkv_ld_parse(const char *p, size_t n, long double *out)
{
	char buf[PMKV_LD_CHARS], *end;
	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, p, n);
	buf[n] = 0;
	errno = 0;
	long double v = strtold(buf, &end);
	if (isspace((unsigned char)buf[0]) || *end || (size_t)(end - buf) != n ||
	    (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL ||
	                         fpclassify(v) == FP_ZERO)) ||
	    errno == EINVAL || isnan(v))
		return -1;
	*out = v;
	return 0;
}

size_t pmkv_ld_format(char *buf, size_t cap, long double v)
{
	if (isinf(v)) {
		const char *t = v > 0 ? "inf" : "-inf";
		size_t l = strlen(t);
		if (cap < 5)
			return 0;
		memcpy(buf, t, l + 1);
		return l;
	}
	int r = snprintf(buf, cap, "%.17Lf", v);
	if (r < 0 || (size_t)r + 1 > cap) {
		if (cap)
			buf[0] = 0;
		return 0;
	}
	size_t l = (size_t)r;
	if (strchr(buf, '.')) { /* trailing zeros, then a bare '.' */
		while (buf[l - 1] == '0')
			l--;
		if (buf[l - 1] == '.')
			l--;
	}
	if (l == 2 && buf[0] == '-' && buf[1] == '0')
		buf[0] = '0', l = 1;
	buf[l] = 0;
	return l;
}

int pmkv_incrbyfloat(struct pmkv_store *s, const void *k, size_t kn,
                     long double delta, char *buf, size_t cap, size_t *n)
{
	struct kvx x;
	struct kpos p = KPOS(k, kn);
	long double old = 0, r;
	*n = 0;
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	rc = w_string(&x, &p, 0);
	if (!rc && p.found && pmkv_ld_parse(p.v.p, p.v.n, &old))
		rc = PMKV_E_NOTFLOAT;
	r = old + delta;
	if (!rc && (isnan(r) || isinf(r)))
		rc = PMKV_E_OVERFLOW;
	if (!rc && !(*n = pmkv_ld_format(buf, cap, r)))
		rc = PMKV_E_TOOBIG;
	if (!rc)
		rc = put(&x, &p, NULL, 0, buf, *n, p.found ? p.v.expire_ms : 0);
	return x_end(&x, rc);
}

int pmkv_setrange(struct pmkv_store *s, const void *k, size_t kn,
                  uint64_t off, const void *v, size_t vn, uint64_t *len)
{
	struct kvx x;
	struct kpos p = KPOS(k, kn);
	char *buf = NULL;
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	rc = w_string(&x, &p, 0);
	*len = p.found ? p.v.n : 0;
	if (rc || vn == 0) /* nothing to write */
		return x_end(&x, rc);
	if (off > s->max_value || vn > s->max_value - off)
		return x_end(&x, PMKV_E_TOOBIG); /* S13: before a write */
	size_t old = p.found ? p.v.n : 0, n = off + vn > old ? off + vn : old;
	if (!(buf = calloc(1, n)))
		return x_end(&x, ENOMEM);
	if (old) /* S3: copied before anything is written */
		memcpy(buf, p.v.p, old);
	memcpy(buf + off, v, vn);
	rc = put(&x, &p, buf, n, NULL, 0, p.found ? p.v.expire_ms : 0);
	free(buf);
	*len = n;
	return x_end(&x, rc);
}

int pmkv_incrby(struct pmkv_store *s, const void *k, size_t kn,
                int64_t delta, int64_t *result)
{
	struct kvx x;
	struct kpos p = KPOS(k, kn);
	int64_t old = 0;
	char buf[24];
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	rc = w_string(&x, &p, 0);
	if (!rc && p.found && (p.v.n > 20 || parse_int(p.v.p, p.v.n, &old)))
		rc = PMKV_E_NOTINT;
	if (!rc && ((delta > 0 && old > INT64_MAX - delta) ||
	            (delta < 0 && old < INT64_MIN - delta)))
		rc = PMKV_E_OVERFLOW;
	if (!rc) {
		*result = old + delta;
		int n = snprintf(buf, sizeof(buf), "%lld", (long long)*result);
		rc = put(&x, &p, NULL, 0, buf, (size_t)n,
		         p.found ? p.v.expire_ms : 0);
	}
	return x_end(&x, rc);
}

int pmkv_append(struct pmkv_store *s, const void *k, size_t kn,
                const void *v, size_t vn, uint64_t *len)
{
	struct kvx x;
	struct kpos p = KPOS(k, kn);
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	rc = w_string(&x, &p, vn);
	*len = (p.found ? p.v.n : 0) + vn;
	if (!rc && *len > s->max_value)
		rc = PMKV_E_TOOBIG;
	if (!rc) /* the old value is read before anything writes it (S3) */
		rc = p.found ? put(&x, &p, p.v.p, p.v.n, v, vn, p.v.expire_ms)
		             : put(&x, &p, NULL, 0, v, vn, 0);
	return x_end(&x, rc);
}

int pmkv_strlen(struct pmkv_store *s, const void *k, size_t kn,
                uint64_t *len)
{
	struct kvx x;
	struct kpos p = KPOS(k, kn);
	int rc = r_find(s, &p, pmkv_now_ms(), &x);
	if (rc)
		return rc;
	*len = p.found ? p.v.n : 0;
	return x_end(&x, string_ok(&p));
}

int pmkv_type(struct pmkv_store *s, const void *k, size_t kn, int *type)
{
	struct kvx x;
	struct kpos p = KPOS(k, kn);
	int rc = r_find(s, &p, pmkv_now_ms(), &x);
	if (rc)
		return rc;
	*type = p.found ? (int)p.v.type : -1;
	return x_end(&x, 0);
}

/* PTTL (at 0: relative to now) and PEXPIRETIME (at 1). */
static int expiry_of(struct pmkv_store *s, const void *k, size_t kn, int at,
                     int64_t *out)
{
	struct kvx x;
	struct kpos p = KPOS(k, kn);
	int64_t now = pmkv_now_ms();
	int rc = r_find(s, &p, now, &x);
	if (rc)
		return rc;
	*out = !p.found ? -2 : !p.v.expire_ms ? -1
	       : p.v.expire_ms - (at ? 0 : now);
	return x_end(&x, 0);
}

int pmkv_pttl(struct pmkv_store *s, const void *k, size_t kn, int64_t *ttl)
{
	return expiry_of(s, k, kn, 0, ttl);
}

int pmkv_pexpiretime(struct pmkv_store *s, const void *k, size_t kn,
                     int64_t *at)
{
	return expiry_of(s, k, kn, 1, at);
}

/* The key count and the bucket count outside any transaction (DBSIZE,
 * INFO): under the store lock, no writer runs (S2). */
static void counts(struct pmkv_store *s, uint64_t *keys, uint64_t *buckets)
{
	struct kvx x = {.s = s, .db = cur_db};
	lock_store(s);
	if (grp.s == s)
		x = grp.x, x.db = cur_db; /* the group's writes count (S8) */
	*keys = s->ks->count(&x);
	if (buckets)
		*buckets = s->ks->buckets(&x);
	unlock_store(s);
}

uint64_t pmkv_dbsize(struct pmkv_store *s)
{
	uint64_t n;
	counts(s, &n, NULL);
	return n;
}

/* One FLUSHALL step in a transaction of its own (S12): the detach (left
 * == NULL) or a sweep batch; again under undo if it finds no room (S7). */
static int flush_step(struct pmkv_store *s, int *left, int all)
{
	pmtx_runtime rt = s->rt;
	int rc;
	do {
		struct kvx x;
		if ((rc = x_begin_as(s, &x, 1, rt)))
			break;
		rc = x_end(&x, left ? s->ks->sweep(&x, SWEEP_BATCH, left)
		                    : s->ks->flush(&x, all));
	} while (rt != PMTX_RT_UNDO && (rt = removal_retry(s, rc)));
	return rc;
}

static int sweep_all(struct pmkv_store *s)
{
	int left = 1, rc = 0;
	while (left && !rc)
		rc = flush_step(s, &left, 1);
	return rc;
}

static int flush_in_group(struct pmkv_store *s);

/* FLUSHALL (all) or FLUSHDB. */
static int flush_dbs(struct pmkv_store *s, int all)
{
	unsigned db = cur_db;
	int rc = 0;
	if (grp.s == s) {
		for (unsigned i = 0; i < PMKV_DBS && !rc; i++)
			if (all ? !pmkv_select(s, i) : i == db)
				rc = flush_in_group(s);
		cur_db = db;
		return rc;
	}
	rc = sweep_all(s); /* an older FLUSHALL's, if a crash cut it */
	if (!rc)
		rc = flush_step(s, NULL, all);
	return rc ? rc : sweep_all(s);
}

int pmkv_flushall(struct pmkv_store *s)
{
	return flush_dbs(s, 1);
}

int pmkv_flushdb(struct pmkv_store *s)
{
	return flush_dbs(s, 0);
}

int pmkv_swapdb(struct pmkv_store *s, unsigned a, unsigned b)
{
	struct kvx x;
	if (a >= PMKV_DBS || b >= PMKV_DBS || (s->wrapped && (a || b)))
		return PMKV_E_DBINDEX;
	if (grp.s == s)
		return PMKV_E_INGROUP; /* S15 */
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	return x_end(&x, a == b ? 0 : s->ks->swap(&x, a, b));
}

int pmkv_move(struct pmkv_store *s, const void *k, size_t kn, unsigned db,
              int *done)
{
	struct kvx x;
	struct kpos src = KPOS(k, kn), dst = KPOS(k, kn);
	*done = 0;
	if (db >= PMKV_DBS || (s->wrapped && db))
		return PMKV_E_DBINDEX;
	if (db == cur_db)
		return PMKV_E_SAMEDB;
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	rc = find_live(&x, &src, pmkv_now_ms());
	if (!rc && src.found) {
		unsigned from = x.db;
		x.db = db;
		rc = find_live(&x, &dst, pmkv_now_ms());
		if (!rc && !dst.found) {
			x.db = from;
			rc = move_key(&x, &src, &dst, db);
			*done = !rc;
		}
	}
	return x_end(&x, rc);
}

struct scan_arg {
	int64_t now;
	int type;
	pmkv_emit_fn emit;
	void *arg;
};

static int scan_emit(void *arg, const void *k, size_t kn,
                     const struct kval *v)
{
	struct scan_arg *a = arg;
	if (!expired(v, a->now) && (a->type < 0 || (int)v->type == a->type))
		a->emit(a->arg, k, kn);
	return 0;
}

int pmkv_scan_type(struct pmkv_store *s, uint64_t cursor, uint64_t count,
                   int type, pmkv_emit_fn emit, void *arg, uint64_t *next)
{
	struct kvx x;
	struct scan_arg a = {pmkv_now_ms(), type, emit, arg};
	int rc = x_begin(s, &x, 0);
	if (rc)
		return rc;
	if (count > SCAN_MAX) /* 10 x count buckets must not wrap */
		count = SCAN_MAX;
	rc = s->ks->scan(&x, cursor, (size_t)count, scan_emit, &a, next);
	return x_end(&x, rc);
}

int pmkv_scan(struct pmkv_store *s, uint64_t cursor, uint64_t count,
              pmkv_emit_fn emit, void *arg, uint64_t *next)
{
	return pmkv_scan_type(s, cursor, count, -1, emit, arg, next);
}

/* The expired keys a scan met (S10): each as its length, then its
 * bytes, in one growing buffer. */
struct reap {
	int64_t now;
	uint64_t seen;
	char *buf;
	size_t n, cap;
};

/* Add key k to the buffer. */
static int reap_add(struct reap *r, const void *k, size_t kn)
{
	size_t need = r->n + sizeof(size_t) + kn;
	if (need > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		while (cap < need)
			cap *= 2;
		char *b = realloc(r->buf, cap);
		if (!b)
			return ENOMEM;
		r->buf = b, r->cap = cap;
	}
	memcpy(r->buf + r->n, &kn, sizeof(kn));
	memcpy(r->buf + r->n + sizeof(kn), k, kn);
	r->n = need;
	return 0;
}

static int reap_key(void *arg, const void *k, size_t kn,
                    const struct kval *v)
{
	struct reap *r = arg;
	r->seen++;
	return expired(v, r->now) ? reap_add(r, k, kn) : 0;
}

/* Collect every key a scan meets, expired or not. */
static int collect_any(void *arg, const void *k, size_t kn,
                       const struct kval *v)
{
	(void)v;
	return reap_add(arg, k, kn);
}

/* FLUSHALL in a group (an EXEC): the trash's detach cannot share a
 * transaction with its sweeps (K4 reads the root's committed words), so
 * every key is removed one by one in the group's transaction instead:
 * as atomic, and as long as the key space is large. */
static int flush_in_group(struct pmkv_store *s)
{
	struct kvx x;
	struct reap r = {0, 0, NULL, 0, 0};
	uint64_t cur = 0;
	int rc = x_begin(s, &x, 1);
	if (rc)
		return rc;
	do
		rc = s->ks->scan(&x, cur, 1024, collect_any, &r, &cur);
	while (!rc && cur);
	for (size_t at = 0; at < r.n && !rc;) {
		size_t kn;
		memcpy(&kn, r.buf + at, sizeof(kn));
		struct kpos p = KPOS(r.buf + at + sizeof(kn), kn);
		at += sizeof(kn) + kn;
		if (!(rc = s->ks->find(&x, &p)) && p.found)
			rc = kx_remove(&x, &p);
	}
	free(r.buf);
	return x_end(&x, rc);
}

/* Remove the keys reaped, each if it is (still) expired. */
static int reap_remove(struct kvx *x, const struct reap *r,
                       uint64_t *removed)
{
	int rc = 0;
	for (size_t at = 0; at < r->n && !rc;) {
		size_t kn;
		memcpy(&kn, r->buf + at, sizeof(kn));
		struct kpos p = KPOS(r->buf + at + sizeof(kn), kn);
		at += sizeof(kn) + kn;
		if (!(rc = x->s->ks->find(x, &p)) && p.found &&
		    expired(&p.v, r->now) && !(rc = kx_remove(x, &p)))
			(*removed)++;
	}
	return rc;
}

static int expire_once(struct pmkv_store *s, pmtx_runtime rt, int64_t now,
                       uint64_t *cursor, uint64_t count, uint64_t *seen,
                       uint64_t *removed)
{
	struct kvx x;
	struct reap r = {now, 0, NULL, 0, 0};
	uint64_t next = 0;
	*seen = *removed = 0;
	int rc = x_begin_as(s, &x, 1, rt);
	if (rc)
		return rc;
	uint64_t from = *cursor < s->ks->buckets(&x) ? *cursor : 0;
	rc = s->ks->scan(&x, from, (size_t)count, reap_key, &r, &next);
	if (!rc)
		rc = reap_remove(&x, &r, removed);
	free(r.buf);
	*seen = r.seen;
	if (!(rc = x_end(&x, rc)))
		*cursor = next;
	return rc;
}

int pmkv_expire_step(struct pmkv_store *s, int64_t now_ms, uint64_t *cursor,
                     uint64_t count, uint64_t *seen, uint64_t *removed)
{
	if (grp.s == s)
		return PMTX_E_INVAL;
	int rc = expire_once(s, s->rt, now_ms, cursor, count, seen, removed);
	pmtx_runtime rt = removal_retry(s, rc);
	return rt ? expire_once(s, rt, now_ms, cursor, count, seen, removed)
	          : rc;
}

/* ---- eviction (S16) ---- */

#define EVICT_SAMPLES 5 /* Redis's maxmemory-samples */

static const char *const policy_names[PMKV_NPOLICIES] = {
	[PMKV_NOEVICTION] = "noeviction",
	[PMKV_ALLKEYS_LRU] = "allkeys-lru",
	[PMKV_VOLATILE_LRU] = "volatile-lru",
	[PMKV_ALLKEYS_LFU] = "allkeys-lfu",
	[PMKV_VOLATILE_LFU] = "volatile-lfu",
	[PMKV_ALLKEYS_RANDOM] = "allkeys-random",
	[PMKV_VOLATILE_RANDOM] = "volatile-random",
	[PMKV_VOLATILE_TTL] = "volatile-ttl",
};

const char *pmkv_policy_name(int policy)
{
	return policy >= 0 && policy < PMKV_NPOLICIES ? policy_names[policy]
	                                              : NULL;
}

int pmkv_policy_parse(const char *name)
{
	for (int i = 0; i < PMKV_NPOLICIES; i++)
		if (!strcasecmp(name, policy_names[i]))
			return i;
	return -1;
}

static int policy_volatile(int policy)
{
	return policy == PMKV_VOLATILE_LRU || policy == PMKV_VOLATILE_LFU ||
	       policy == PMKV_VOLATILE_RANDOM || policy == PMKV_VOLATILE_TTL;
}

int pmkv_track_access(struct pmkv_store *s, int policy)
{
	int want = policy != PMKV_NOEVICTION && policy != PMKV_ALLKEYS_RANDOM &&
	           policy != PMKV_VOLATILE_RANDOM && policy != PMKV_VOLATILE_TTL;
	int lfu = policy == PMKV_ALLKEYS_LFU || policy == PMKV_VOLATILE_LFU;
	uint32_t *a = want ? calloc(PMKV_ACCESS_SLOTS, sizeof(*a)) : NULL;
	if (want && !a)
		return ENOMEM;
	lock_store(s);
	free(s->access);
	s->access = a;
	s->access_lfu = lfu;
	unlock_store(s);
	return 0;
}

/* The best candidate a sample met: its key (copied) and its rank (lower
 * is evicted first). */
struct pick {
	int policy;
	int64_t now;
	struct pmkv_store *s;
	unsigned met;
	int have;
	uint64_t rank;
	char *k;
	size_t kn;
};

static uint64_t rank_of(const struct pick *pk, const void *k, size_t kn,
                        const struct kval *v)
{
	switch (pk->policy) {
	case PMKV_VOLATILE_TTL:
		return (uint64_t)v->expire_ms;
	case PMKV_ALLKEYS_RANDOM:
	case PMKV_VOLATILE_RANDOM:
		return pk->met; /* the first met */
	default: /* the clock, or the count */
		return pk->s->access
		       ? pk->s->access[pmkv_hash(k, kn) &
		                       (PMKV_ACCESS_SLOTS - 1)]
		       : 0;
	}
}

static int pick_key(void *arg, const void *k, size_t kn,
                    const struct kval *v)
{
	struct pick *pk = arg;
	if (expired(v, pk->now) ||
	    (policy_volatile(pk->policy) && !v->expire_ms))
		return 0;
	uint64_t r = rank_of(pk, k, kn, v);
	pk->met++;
	if (pk->have && r >= pk->rank)
		return pk->met >= EVICT_SAMPLES;
	char *c = realloc(pk->k, kn ? kn : 1);
	if (!c)
		return ENOMEM;
	memcpy(c, k, kn);
	pk->k = c, pk->kn = kn, pk->rank = r, pk->have = 1;
	return pk->met >= EVICT_SAMPLES;
}

/* One eviction from database db, in a transaction of runtime rt:
 * *done = 1 if a key was removed. */
static int evict_from(struct pmkv_store *s, pmtx_runtime rt, unsigned db,
                      int policy, int *done)
{
	struct kvx x;
	struct pick pk = {policy, pmkv_now_ms(), s, 0, 0, 0, NULL, 0};
	int rc = x_begin_as(s, &x, 1, rt);
	*done = 0;
	if (rc)
		return rc;
	x.db = db;
	uint64_t nb = s->ks->buckets(&x), next = 0;
	uint64_t cur = nb ? (uint64_t)random() % nb : 0;
	if (s->ks->count(&x)) /* from a random bucket, wrapping once */
		for (int pass = 0; pass < 2 && pk.met < EVICT_SAMPLES && !rc;
		     pass++, cur = 0) {
			rc = s->ks->scan(&x, cur, EVICT_SAMPLES, pick_key, &pk,
			                 &next);
			rc = rc == 1 ? 0 : rc;
			while (!rc && next && pk.met < EVICT_SAMPLES) {
				rc = s->ks->scan(&x, next, EVICT_SAMPLES,
				                 pick_key, &pk, &next);
				rc = rc == 1 ? 0 : rc;
			}
		}
	if (!rc && pk.have) {
		struct kpos p = KPOS(pk.k, pk.kn);
		if (!(rc = s->ks->find(&x, &p)) && p.found) {
			rc = kx_remove(&x, &p);
			*done = !rc;
		}
	}
	free(pk.k);
	return x_end(&x, rc);
}

int pmkv_evict(struct pmkv_store *s, int policy, unsigned want,
               uint64_t *evicted)
{
	unsigned ndb = s->wrapped ? 1 : PMKV_DBS, start = (unsigned)random();
	unsigned empty = 0;
	int rc = 0;
	*evicted = 0;
	if (policy <= PMKV_NOEVICTION || policy >= PMKV_NPOLICIES)
		return PMTX_E_INVAL;
	if (grp.s == s)
		return PMKV_E_INGROUP;
	for (unsigned i = 0; *evicted < want && empty < ndb && !rc; i++) {
		int done = 0;
		rc = evict_from(s, s->rt, (start + i) % ndb, policy, &done);
		pmtx_runtime rt = removal_retry(s, rc);
		if (rt) /* S7 */
			rc = evict_from(s, rt, (start + i) % ndb, policy, &done);
		*evicted += (uint64_t)done;
		empty = done ? 0 : empty + 1;
	}
	return rc;
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
	rc = s->ks->check(&x, &n, msg, len);
	uint64_t count = s->ks->count(&x);
	if (!rc && n != count) {
		snprintf(msg, len, "%llu keys in the key space, its count says "
		         "%llu", (unsigned long long)n,
		         (unsigned long long)count);
		rc = PMTX_E_CORRUPT;
	}
	return x_end(&x, rc);
}

/* ---- open and close ---- */

static const char *flavour_name(unsigned f)
{
	return f == PMKV_WRAPPED ? "wrapped" : "opt";
}

/* A fresh region's root and key space, in one transaction (a crash
 * during create leaves the root zero: then this runs at the next open).
 * It runs under undo when the store's runtime is copy-on-write, which
 * writes nothing outside wrappers: the root is raw. */
static int init_root(struct pmkv_store *s, unsigned flavour)
{
	struct kvx x;
	struct pmkv_root_hdr *h = s->root;
	int wrapped = flavour == PMKV_WRAPPED;
	struct pmkv_root_hdr nh = {
		PMKV_MAGIC, wrapped ? PMKV_WFORMAT_MAJOR : PMKV_FORMAT_MAJOR,
		wrapped ? PMKV_WFORMAT_MINOR : PMKV_FORMAT_MINOR, flavour};
	s->wrapped = wrapped;
	s->ks = wrapped ? &pmkv_ks_wrapped : &pmkv_ks_opt;
	int rc = x_begin_as(s, &x, 1,
	                    s->rt == PMTX_RT_COW ? PMTX_RT_UNDO : s->rt);
	if (rc)
		return rc;
	rc = s->ks->create(&x);
	if (!rc)
		rc = pmtx_write(x.tx, h, &nh, sizeof(nh));
	return x_end(&x, rc);
}

/* The message for a region of the opt version's format 1.x (L5). */
static int old_opt(const struct pmkv_root_hdr *h, char *msg, size_t len,
                   const char *path)
{
	snprintf(msg, len, "%s: a pmkv store of format %u.%u (the opt "
	         "version, in its own hash table); this pmkv reads the opt "
	         "version of format %u.0 to %u.%u (the key space in a "
	         "pmtx_hmap) and the wrapped version of format %u.%u. To keep "
	         "its keys, serve it with the pmkv that wrote it (format 1.x) "
	         "and copy them into a new store with a client; or move the "
	         "file away to start empty", path, h->major, h->minor,
	         PMKV_FORMAT_MAJOR, PMKV_FORMAT_MAJOR, PMKV_FORMAT_MINOR,
	         PMKV_WFORMAT_MAJOR, PMKV_WFORMAT_MINOR);
	return PMKV_E_FORMAT;
}

/* Does this pmkv read the root's format? (L5) */
static int readable(const struct pmkv_root_hdr *h)
{
	if (h->flavour == PMKV_OPT)
		return h->major == PMKV_FORMAT_MAJOR &&
		       h->minor <= PMKV_FORMAT_MINOR;
	return h->flavour == PMKV_WRAPPED && h->major == PMKV_WFORMAT_MAJOR &&
	       h->minor <= PMKV_WFORMAT_MINOR;
}

/* The root's format and version, against what the caller asked for. */
static int check_format(struct pmkv_store *s, const struct pmkv_config *c,
                        size_t rsz, char *msg, size_t len, const char *path)
{
	const struct pmkv_root_hdr *h = s->root;
	if (h->magic != PMKV_MAGIC) {
		snprintf(msg, len, "%s: not a pmkv store", path);
		return PMKV_E_FORMAT;
	}
	if (h->flavour == PMKV_OPT && h->major < PMKV_FORMAT_MAJOR)
		return old_opt(h, msg, len, path);
	if (!readable(h)) {
		snprintf(msg, len, "%s: pmkv format %u.%u, version %u; this "
		         "pmkv reads %u.0 to %u.%u (version %u, opt) and %u.%u "
		         "(version %u, wrapped)", path, h->major, h->minor,
		         h->flavour, PMKV_FORMAT_MAJOR, PMKV_FORMAT_MAJOR,
		         PMKV_FORMAT_MINOR, PMKV_OPT, PMKV_WFORMAT_MAJOR,
		         PMKV_WFORMAT_MINOR, PMKV_WRAPPED);
		return PMKV_E_FORMAT;
	}
	if (c->flavour && c->flavour != h->flavour) {
		snprintf(msg, len, "%s: the store is the %s version; asked for "
		         "the %s version", path, flavour_name(h->flavour),
		         flavour_name(c->flavour));
		return PMKV_E_FORMAT;
	}
	if (h->flavour == PMKV_OPT && s->rt == PMTX_RT_COW) {
		snprintf(msg, len, "%s: the opt version (pmtx_hmap) cannot "
		         "run under cow; the wrapped version can", path);
		return PMTX_E_UNSUPPORTED;
	}
	s->wrapped = h->flavour == PMKV_WRAPPED;
	s->ks = s->wrapped ? &pmkv_ks_wrapped : &pmkv_ks_opt;
	if (rsz < (s->wrapped ? sizeof(struct pmkv_root1)
	                      : sizeof(struct pmkv_root))) {
		snprintf(msg, len, "%s: root too small", path);
		return PMKV_E_FORMAT;
	}
	return 0;
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
	/* a maxmemory below the first size is the whole region's size */
	size_t first = twin || c->max_size < c->size ? c->max_size : c->size;
	int rc = stat(c->path, &st) == 0 ? pmtx_open(c->path, &o, r)
	                                 : pmtx_create(c->path, first, &o, r);
	if (rc)
		snprintf(msg, len, "%s: %s%s%s", c->path, pmtx_strerror(rc),
		         *pmtx_errmsg() ? ": " : "", pmtx_errmsg());
	return rc;
}

static int valid_initial(uint64_t n)
{
	return n >= PMKV_NBASE_MIN && n <= PMKV_NBASE_DEFAULT && !(n & (n - 1));
}

static int all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

/* A new store: as asked, else wrapped only if cow needs it. */
static int create_store(struct pmkv_store *s, const struct pmkv_config *c)
{
	unsigned f = c->flavour ? c->flavour
	             : c->runtime == PMTX_RT_COW ? PMKV_WRAPPED : PMKV_OPT;
	return f == PMKV_OPT && c->runtime == PMTX_RT_COW ? PMTX_E_UNSUPPORTED
	                                                   : init_root(s, f);
}

/* A key space for every database (keyspace.c K5): one transaction. */
static int every_db(struct pmkv_store *s)
{
	struct kvx x;
	int rc = x_begin(s, &x, 1);
	return rc ? rc : x_end(&x, s->ks->dbs(&x));
}

int pmkv_attach(pmtx_region *r, const struct pmkv_config *c, unsigned flags,
                struct pmkv_store **out, char *msg, size_t len)
{
	struct pmkv_store *s = calloc(1, sizeof(*s));
	size_t rsz = 0;
	int rc = 0;
	char why[512] = "";
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
	                     ? c->initial_buckets : PMKV_NBASE_DEFAULT;
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP); /* S2 */
	pthread_mutex_init(&s->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	if (rsz < sizeof(struct pmkv_root1)) {
		snprintf(msg, len, "%s: root too small", name);
		rc = PMKV_E_FORMAT;
	} else if (all_zero(s->root, rsz) && !(flags & PMKV_ATTACH_INSPECT)) {
		rc = create_store(s, c);
	}
	if (!rc)
		rc = check_format(s, c, rsz, msg, len, name);
	if (!rc && (rc = s->ks->attach(s, why, sizeof(why))))
		snprintf(msg, len, "%s: %s", name, why);
	if (!rc && !(flags & PMKV_ATTACH_INSPECT) && s->ks->dbs)
		rc = every_db(s);
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
	if (s->ks)
		s->ks->detach(s);
	pthread_mutex_destroy(&s->lock);
	free(s->access);
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
	struct kvx x = {.s = s};
	pthread_mutex_lock(&s->lock);
	int rc = s->broken ? PMTX_E_IO : s->ks->walk(&x, fn, arg); /* S11 */
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
	return pmkv_hinting(s) ? s->ks->hint(s, k, kn) : 0; /* S9 */
}

void pmkv_hint_more(struct pmkv_store *s, uint64_t token)
{
	if (pmkv_hinting(s))
		s->ks->hint_more(s, token);
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
