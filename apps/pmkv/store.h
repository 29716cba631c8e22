/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store.h - pmkv's key space: string keys and values in a pmtx region,
 * every operation one failure-atomic transaction (store.c, over
 * keyspace.c or assoc.c).
 *
 * Errors: every function returns 0 or one status: a PMKV_E_* (below), a
 * pmtx status (PMTX_E_*) or an errno value, as pmtx's own functions do.
 * pmkv_strerror gives the text a client sees.
 */
#ifndef PMKV_STORE_H
#define PMKV_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <pmtx.h>

#include "layout.h"

enum {
	PMKV_E_NOTINT = -31000, /* value is not an integer or out of range */
	PMKV_E_OVERFLOW,      /* increment or decrement would overflow */
	PMKV_E_TOOBIG,        /* key or value beyond the configured limit */
	PMKV_E_OOM,           /* the region is full */
	PMKV_E_FORMAT,        /* the region is not a pmkv store we can use */
	PMKV_E_GROUP,         /* an earlier operation of the group failed */
	PMKV_E_TABLE_FULL,    /* wrapped: the table's directory is at its
	                       * largest (Redis's OOM error, as PMKV_E_OOM) */
	PMKV_E_NOKEY,         /* RENAME: no such key */
	PMKV_E_WRONGTYPE,     /* the key holds another type */
	PMKV_E_STRINGS,       /* the wrapped version holds strings only */
	PMKV_E_NOTFLOAT,      /* value is not a valid float */
	PMKV_E_DBINDEX,       /* no such database */
	PMKV_E_SAMEDB,        /* MOVE to the database it is in */
	PMKV_E_INGROUP,       /* not in a group (SWAPDB: store.c S15) */
};

/* A status that is the client's mistake, found before the operation
 * wrote anything (store.c S13): in a group it fails that operation
 * alone. */
static inline int pmkv_user_error(int status)
{
	return status == PMKV_E_NOTINT || status == PMKV_E_OVERFLOW ||
	       status == PMKV_E_TOOBIG || status == PMKV_E_NOKEY ||
	       status == PMKV_E_WRONGTYPE || status == PMKV_E_STRINGS ||
	       status == PMKV_E_NOTFLOAT || status == PMKV_E_DBINDEX ||
	       status == PMKV_E_SAMEDB || status == PMKV_E_INGROUP;
}

/* A status that says there is no room: Redis's OOM error. */
static inline int pmkv_no_room(int status)
{
	return status == PMKV_E_OOM || status == PMKV_E_TABLE_FULL ||
	       status == PMTX_E_NOMEM;
}

struct pmkv_config {
	const char *path;       /* the region file */
	size_t size;            /* bytes at creation */
	size_t max_size;        /* the region grows up to this many bytes */
	pmtx_runtime runtime;   /* of every transaction; PMTX_RT_COW only
	                         * for the wrapped version */
	int runtime_default;    /* runtime was not asked for: an existing
	                         * twin region runs twin (the only one it
	                         * can) */
	unsigned flavour;       /* PMKV_OPT or PMKV_WRAPPED: refuse a store
	                         * of the other version, and create this one;
	                         * 0: the store's own (a new one: opt, or
	                         * wrapped under cow) */
	pmtx_domain domain;
	pmtx_backend backend;
	uint64_t initial_buckets; /* a new wrapped table's: a power of two,
	                           * PMKV_NBASE_MIN to 4,096 (the default) */
	int fast_restart;       /* a new twin region without resealing
	                         * (PMTX_CREATE_TWIN_FAST_RESTART) */
	size_t max_key;         /* longest key, bytes */
	size_t max_value;       /* longest value, bytes */
};
void pmkv_config_init(struct pmkv_config *c);

struct pmkv_store;

/* Open the store at c->path, creating it if the file does not exist. On
 * failure, msg (len bytes) says why, naming the file. */
int pmkv_open(const struct pmkv_config *c, struct pmkv_store **out,
              char *msg, size_t len);
int pmkv_close(struct pmkv_store *s);

/* The store in a region already open (the crash-state explorer): as
 * pmkv_open after the region is open. With PMKV_ATTACH_INSPECT, nothing
 * is written: no initialisation, no sweep of a FLUSHALL's trash.
 * pmkv_detach frees the handle and leaves the region open. */
enum { PMKV_ATTACH_INSPECT = 1 };
int pmkv_attach(pmtx_region *r, const struct pmkv_config *c, unsigned flags,
                struct pmkv_store **out, char *msg, size_t len);
void pmkv_detach(struct pmkv_store *s);
/* fn(off, arg) for every heap block the store owns: every block of the
 * key space and of the trash of a FLUSHALL not yet freed.
 * Returns fn's first nonzero value, or a status. */
int pmkv_walk(struct pmkv_store *s, int (*fn)(pmtx_off off, void *arg),
              void *arg);
pmtx_region *pmkv_region(struct pmkv_store *s);
const char *pmkv_strerror(int status);

/* Wall-clock milliseconds since the epoch (expiry times are absolute). */
int64_t pmkv_now_ms(void);

/* Called with a value while the store holds it (do not keep the pointer). */
typedef void (*pmkv_emit_fn)(void *arg, const void *p, size_t n);

/* SET's conditions and expiry. */
enum { PMKV_SET_NX = 1, PMKV_SET_XX = 2, PMKV_SET_KEEPTTL = 4,
       PMKV_SET_GET = 8 };

struct pmkv_key {
	const void *p;
	size_t n;
};

/* GET: *found = 0 (no such key, or expired), or 1 and emit(value). */
int pmkv_get(struct pmkv_store *s, const void *k, size_t kn,
             pmkv_emit_fn emit, void *arg, int *found);
/* SET with flags PMKV_SET_*; expire_ms absolute (0: none). *done = 0 if
 * NX/XX refused it. With PMKV_SET_GET, emit gets the old value first
 * (*found says whether there was one). */
int pmkv_set(struct pmkv_store *s, const void *k, size_t kn, const void *v,
             size_t vn, unsigned flags, int64_t expire_ms, int *done,
             pmkv_emit_fn emit, void *arg, int *found);
/* MSET: n pairs (keys[i], vals[i]), all in one transaction. */
int pmkv_mset(struct pmkv_store *s, const struct pmkv_key *keys,
              const struct pmkv_key *vals, size_t n);
/* MSETNX: the n pairs in one transaction if none of the keys exists
 * (*done = 1), else nothing (*done = 0). */
int pmkv_msetnx(struct pmkv_store *s, const struct pmkv_key *keys,
                const struct pmkv_key *vals, size_t n, int *done);

/* pmkv_expire's flags: EXPIRE's conditions (Redis 7.0: NX, no expiry
 * yet; XX, an expiry; GT, an expiry before the new one; LT, none or one
 * after it), and what it does to the key: SET gives it the expiry when
 * (ms since the epoch; at or before now: removes it), PERSIST takes its
 * expiry away, DEL removes it; GET emits its value first. */
enum { PMKV_EXP_NX = 1, PMKV_EXP_XX = 2, PMKV_EXP_GT = 4, PMKV_EXP_LT = 8,
       PMKV_EXP_SET = 16, PMKV_EXP_PERSIST = 32, PMKV_EXP_DEL = 64,
       PMKV_EXP_GET = 128 };

/* What an operation found and did, and where its value goes. */
struct pmkv_reply {
	pmkv_emit_fn emit; /* with PMKV_EXP_GET */
	void *arg;
	int found; /* the key was there */
	int done;  /* the key was changed (or removed) */
};

/* EXPIRE, PEXPIRE(AT), PERSIST, GETEX, GETDEL: one key, one transaction.
 * r->done = 0 if the key is absent, a condition refused, or PERSIST
 * found no expiry. */
int pmkv_expire(struct pmkv_store *s, const void *k, size_t kn,
                unsigned flags, int64_t when, struct pmkv_reply *r);
/* RENAME (nx 0) and RENAMENX (nx 1): the key k's value and expiry moved
 * to the key to, over any value it had; PMKV_E_NOKEY if k is absent;
 * *done = 0 if nx and to exists (k itself too). */
int pmkv_rename(struct pmkv_store *s, const void *k, size_t kn,
                const void *to, size_t tn, int nx, int *done);
/* DEL: keys removed (one transaction), in *removed. */
int pmkv_del(struct pmkv_store *s, const struct pmkv_key *keys, size_t n,
             uint64_t *removed);
/* TYPE: the key's enum pmkv_type in *type, or -1 if it is absent. */
int pmkv_type(struct pmkv_store *s, const void *k, size_t kn, int *type);
/* EXISTS: how many of keys exist (a key named twice counts twice). */
int pmkv_exists(struct pmkv_store *s, const struct pmkv_key *keys, size_t n,
                uint64_t *count);
/* Redis's long double numbers (util.c string2ld, ld2string): the longest
 * text either reads or writes, less one (MAX_LONG_DOUBLE_CHARS). */
#define PMKV_LD_CHARS (5 * 1024)
/* p[0..n) as a long double: strtold's whole text, no leading space, no
 * NaN, no overflow or underflow to zero; 0, or -1. */
int pmkv_ld_parse(const char *p, size_t n, long double *out);
/* v as Redis's LD_STR_HUMAN: "%.17Lf" without trailing zeros (nor a
 * trailing '.'), "-0" as "0", "inf"/"-inf"; the length, 0 if it does not
 * fit cap bytes with its NUL (Redis then stores ""). */
size_t pmkv_ld_format(char *buf, size_t cap, long double v);
/* INCRBYFLOAT: the value (absent: 0) plus delta, as long double, stored
 * and put in buf (cap PMKV_LD_CHARS) as Redis writes it; PMKV_E_NOTFLOAT
 * if the value is not a number, PMKV_E_OVERFLOW if the sum is NaN or
 * infinite (nothing written). The expiry stays. */
int pmkv_incrbyfloat(struct pmkv_store *s, const void *k, size_t kn,
                     long double delta, char *buf, size_t cap, size_t *n);
/* SETRANGE: v written at offset off of the string (zero bytes before it
 * if the string is shorter); *len its length after. An empty v writes
 * nothing (an absent key stays absent). The expiry stays. */
int pmkv_setrange(struct pmkv_store *s, const void *k, size_t kn,
                  uint64_t off, const void *v, size_t vn, uint64_t *len);
/* INCRBY: the value must be a base-10 64-bit integer (absent: 0). */
int pmkv_incrby(struct pmkv_store *s, const void *k, size_t kn,
                int64_t delta, int64_t *result);
/* APPEND: the new length in *len. */
int pmkv_append(struct pmkv_store *s, const void *k, size_t kn,
                const void *v, size_t vn, uint64_t *len);
/* STRLEN: 0 for an absent key. */
int pmkv_strlen(struct pmkv_store *s, const void *k, size_t kn,
                uint64_t *len);
/* TTL in ms: -2 absent, -1 no expiry. */
int pmkv_pttl(struct pmkv_store *s, const void *k, size_t kn, int64_t *ttl);
/* PEXPIRETIME: -2 absent, -1 no expiry, else its ms since the epoch. */
int pmkv_pexpiretime(struct pmkv_store *s, const void *k, size_t kn,
                     int64_t *at);
/* Keys in the store (expired ones not yet removed included, as Redis). */
uint64_t pmkv_dbsize(struct pmkv_store *s);
/* Remove every key: atomic (one transaction detaches the key space); the
 * old entries are then freed in batches, each a transaction of its own,
 * and a restart finishes what a crash interrupted. */
int pmkv_flushall(struct pmkv_store *s);
/* FLUSHDB: the same for the thread's database only. */
int pmkv_flushdb(struct pmkv_store *s);

/* Databases (store.c S15): every operation below works on the calling
 * thread's database, 0 to PMKV_DBS - 1 (0 until pmkv_select; the wrapped
 * version has 0 only: PMKV_E_DBINDEX). */
int pmkv_select(struct pmkv_store *s, unsigned db);
/* The calling thread's database. */
unsigned pmkv_cur_db(void);
/* SWAPDB a b: one transaction; PMKV_E_INGROUP in a group. */
int pmkv_swapdb(struct pmkv_store *s, unsigned a, unsigned b);
/* MOVE k db: the key, its value, expiry and collection moved to database
 * db if it is live here and absent there (*done = 1), in one
 * transaction; PMKV_E_SAMEDB if db is the thread's own. */
int pmkv_move(struct pmkv_store *s, const void *k, size_t kn, unsigned db,
              int *done);
/* SCAN from bucket cursor: emit each live key of buckets [cursor, ...)
 * until count keys (expired ones included) were met, 10 x count buckets
 * passed, or the table ends; *next is the next cursor, 0 at the end. A
 * key present for the whole scan is emitted at least once (Redis's
 * guarantee), and may be emitted more than once. */
int pmkv_scan(struct pmkv_store *s, uint64_t cursor, uint64_t count,
              pmkv_emit_fn emit, void *arg, uint64_t *next);
/* SCAN ... TYPE: the same, emitting only keys of this enum pmkv_type
 * (-1: any; the bounds count keys of every type). */
int pmkv_scan_type(struct pmkv_store *s, uint64_t cursor, uint64_t count,
                   int type, pmkv_emit_fn emit, void *arg, uint64_t *next);

/* Active expiry (store.c S10): in one transaction, remove every key
 * whose expiry is at or before now_ms in the buckets a scan of count keys
 * from *cursor on meets (pmkv_scan's bounds), and set *cursor to the
 * bucket after them (0 once the table's end is reached; a cursor beyond
 * the table starts again at 0). *seen: the keys looked at; *removed:
 * those removed. Not in a group. */
int pmkv_expire_step(struct pmkv_store *s, int64_t now_ms, uint64_t *cursor,
                     uint64_t count, uint64_t *seen, uint64_t *removed);

/* A group (store.c S8): the operations this thread calls between
 * pmkv_group_begin and pmkv_group_end run in one transaction, under the
 * store lock throughout, and commit together at pmkv_group_end. An
 * operation that fails breaks the group: it returns its status, every
 * later one returns PMKV_E_GROUP, and pmkv_group_end aborts the whole
 * group and returns the first failure; nothing of it stays. Only the
 * single-key operations and MSET, DEL, EXISTS and DBSIZE may be called
 * in a group (not FLUSHALL, SCAN or pmkv_check). One group per thread
 * at a time. */
int pmkv_group_begin(struct pmkv_store *s);
int pmkv_group_end(struct pmkv_store *s);

/* Hints (store.c S9), in this thread's group only, and a no-op in the
 * wrapped version: pmkv_hint prefetches the bucket of key k and returns
 * a token for pmkv_hint_more, which prefetches the bucket's first entry
 * (pmtx_hmap_prefetch and _more).
 * Hinting many keys one step at a time lets their cache misses overlap.
 * They change nothing, and a wrong hint costs only its prefetch.
 * pmkv_hinting: 1 if they do anything (this thread's group, opt). */
int pmkv_hinting(struct pmkv_store *s);
uint64_t pmkv_hint(struct pmkv_store *s, const void *k, size_t kn);
void pmkv_hint_more(struct pmkv_store *s, uint64_t token);

/* maxmemory-policy (Redis's names, store.c S16). */
enum pmkv_policy {
	PMKV_NOEVICTION = 0,
	PMKV_ALLKEYS_LRU, PMKV_VOLATILE_LRU,
	PMKV_ALLKEYS_LFU, PMKV_VOLATILE_LFU,
	PMKV_ALLKEYS_RANDOM, PMKV_VOLATILE_RANDOM,
	PMKV_VOLATILE_TTL,
	PMKV_NPOLICIES
};
/* The policy's name, and the policy a name gives (-1: none). */
const char *pmkv_policy_name(int policy);
int pmkv_policy_parse(const char *name);
/* Start or stop keeping the access clocks the LRU and LFU policies read
 * (a lookup costs a hash and a store into DRAM while they are kept). */
int pmkv_track_access(struct pmkv_store *s, int policy);
/* Evict up to want keys by the policy, each in a transaction of its own
 * (store.c S16); *evicted: how many. 0 even if none could be found (then
 * *evicted is 0). Not in a group. */
int pmkv_evict(struct pmkv_store *s, int policy, unsigned want,
               uint64_t *evicted);

/* What INFO shows. */
struct pmkv_info {
	uint64_t keys, buckets;
	size_t region_size, region_max;
	pmtx_runtime runtime;
	pmtx_domain domain;
	pmtx_backend backend;
	int wrapped;
};
void pmkv_info_get(struct pmkv_store *s, struct pmkv_info *out);

/* Check the whole store in a region already open (tests, --check):
 * every chain well formed, every key in its bucket, every object well
 * formed, the counts right. */
int pmkv_check(struct pmkv_store *s, char *msg, size_t len);

#endif
