/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * server.h - what pmcached's network layers share: worker threads
 * (thread.c), connections (conn.c), command execution (cmd.c,
 * cmd_meta.c), statistics (stats.c) and the process (main.c).
 *
 * Layers point one way: main -> thread -> conn -> cmd -> store.h and
 * proto.h. Nothing below conn.c knows about sockets; the store knows
 * nothing of the network.
 *
 * Invariants:
 *  1. A connection belongs to one worker for its whole life; only that
 *     worker's thread touches it (no lock protects a connection).
 *  2. A worker's pending-reclamation slot is its index: references it
 *     takes (mc_store_get) are released by the same worker, with the same
 *     slot.
 *  3. No store lock is held while a connection reads or writes: a value
 *     being sent is held by a reference (struct mc_ref), not a lock.
 *  4. Per-worker statistics have one writer (the worker); "stats" sums
 *     them with relaxed loads.
 */
#ifndef PMCACHED_SERVER_H
#define PMCACHED_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <event2/event.h>

#include "proto.h"
#include "settings.h"
#include "sizeclass.h"
#include "store.h"

/* Per-worker counters (memcached's thread stats). */
#define MC_THREAD_STATS(X)                                                    \
	X(cmd_get) X(cmd_set) X(cmd_flush) X(cmd_touch) X(cmd_meta)          \
	X(get_hits) X(get_misses) X(get_expired) X(get_flushed)              \
	X(delete_misses) X(delete_hits) X(incr_misses) X(incr_hits)          \
	X(decr_misses) X(decr_hits) X(cas_misses) X(cas_hits) X(cas_badval)  \
	X(touch_hits) X(touch_misses) X(store_too_large) X(store_no_memory)  \
	X(bytes_read) X(bytes_written) X(conn_yields) X(store_errors)         \
	X(total_items)

struct thread_stats {
#define X(name) _Atomic uint64_t name;
	MC_THREAD_STATS(X)
#undef X
};

struct worker {
	unsigned id;               /* also the pending-reclamation slot */
	pthread_t thread;
	struct event_base *base;
	int notify[2];             /* main -> worker: new connection fds */
	struct event *notify_ev;
	struct event *udp_ev;      /* worker 0 only, with -U */
	struct thread_stats stats;
};

/* The process-wide state. */
struct server {
	struct mc_store *store;
	struct mc_limits limits;
	struct worker *workers;
	unsigned nworkers;
	struct event_base *main_base;
	int64_t started;           /* time(), for uptime */
	_Atomic uint64_t curr_conns, total_conns, rejected_conns, conn_structs;
	_Atomic int shutdown;      /* 1: stop; set by signals and "shutdown" */
	int udp_fd;
	int listen_fds[MC_MAX_LISTEN];
	char listen_desc[MC_MAX_LISTEN][128]; /* for "stats conns" */
	unsigned nlisten;
	struct mc_classes classes; /* memcached's size classes (-n -f -I) */
};

extern struct server server;

/* ---- conn.c ---- */
struct conn;
/* A new connection on worker w (fd non-blocking). */
void conn_new(struct worker *w, int fd, bool is_unix);
/* Output for the request being executed. */
void conn_add(struct conn *c, const char *p, size_t n);
void conn_reply(struct conn *c, const char *line); /* adds "\r\n" */
/* Queue a value to be sent from the region: the connection keeps the
 * reference until the bytes are written, then releases it. */
void conn_add_ref(struct conn *c, const struct mc_ref *ref);
/* The room conn_add may use at once (for formatted replies). */
char *conn_room(struct conn *c, size_t n);
void conn_commit_room(struct conn *c, size_t n);
struct worker *conn_worker(const struct conn *c);
/* A reply made in parts (conn.c C8): fn queues the next part and returns
 * true when it queued the last; it is called again once the part before
 * has been written, and with abort when the connection closes first (it
 * then frees what it holds and returns true). */
typedef bool conn_more_fn(struct conn *c, void *arg, bool abort);
void conn_continue(struct conn *c, conn_more_fn *fn, void *arg);
/* Replies of earlier requests are still queued, unwritten. */
bool conn_has_output(const struct conn *c);
/* Every live connection of this worker, for "stats conns". */
void conn_foreach(struct worker *w,
                  void (*fn)(struct conn *c, void *arg), void *arg);
void conn_describe(const struct conn *c, char *addr, size_t n,
                   const char **state, int64_t *idle);
int conn_fd(const struct conn *c);
/* "kind:host:port" for an IPv4 or IPv6 address (stats conns). */
struct sockaddr;
void sockaddr_text(const struct sockaddr *sa, const char *kind, char *out,
                   size_t n);
/* Serve one UDP datagram (memcached's 8-byte frame header). */
void conn_udp_datagram(struct worker *w, int fd);

/* Count one event in the connection's worker (server.h 4). */
#define STAT_INC(c, name)                                                     \
	atomic_fetch_add_explicit(&conn_worker(c)->stats.name, 1,             \
	                          memory_order_relaxed)
/* Count a hit, or a miss, of what (get, touch, delete, incr, decr). */
#define STAT_HIT(c, hit, what)                                                \
	((hit) ? STAT_INC(c, what##_hits) : STAT_INC(c, what##_misses))
/* The pending-reclamation slot of the connection's worker (server.h 2). */
static inline unsigned slot_of(const struct conn *c)
{
	return conn_worker(c)->id;
}

/* ---- cmd.c ---- */
enum cmd_outcome { CMD_CONTINUE = 0, CMD_CLOSE, CMD_SHUTDOWN };
/* Execute a parsed request; its reply is queued on c. */
enum cmd_outcome cmd_execute(struct conn *c, struct mc_request *req);
/* An MC_ERROR result: memcached's side effects (a refused set deletes
 * the old value) and the reply. */
void cmd_error(struct conn *c, const struct mc_request *req);
/* memcached's realtime(): a protocol exptime to absolute seconds
 * (0 = never, -1 = already expired). */
int64_t cmd_abs_exptime(int64_t exptime, int64_t now);
/* flush_all with a delay (seconds, or an absolute time; 0: none), as
 * memcached cuts it off; the store's status. */
int cmd_flush(int64_t delay);
/* The unique a cas compares with (-C: one no item has). */
uint64_t cas_operand(uint64_t cas);
/* A store status that is not a result: counted, logged (-v), and
 * replied to unless quiet (noreply). */
void cmd_store_failure(struct conn *c, int rc, bool quiet);
/* The same without the reply (for the binary protocol's own). */
void cmd_store_error(struct conn *c, int rc);
/* The statistics of a store's result (cas: a compare-and-swap). */
void cmd_count_store(struct conn *c, bool cas, enum mc_result res);
void cmd_count_arith(struct conn *c, bool incr, bool hit);
/* Delete key's item: what memcached does after a SET it refused. */
void cmd_drop_stale(struct conn *c, struct mc_str key);

/* ---- cmd_meta.c ---- */
enum cmd_outcome cmd_meta(struct conn *c, struct mc_request *req);

/* ---- cmd_bin.c ---- */
/* Execute a binary request (MC_OK from mc_bin_parse). */
enum cmd_outcome cmd_bin_execute(struct conn *c,
                                 const struct mc_bin_request *req);
/* An MC_ERROR of mc_bin_parse: memcached's side effects and reply. */
enum cmd_outcome cmd_bin_error(struct conn *c,
                               const struct mc_bin_request *req);

/* ---- stats.c ---- */
void stats_reply(struct conn *c, const struct mc_request *req);
void stats_reset(void);
/* One statistic, for a protocol to put on the wire. */
typedef void stats_emit_fn(struct conn *c, const void *arg, const char *name,
                           const char *value);
enum stats_group {
	STATS_GENERAL, STATS_SETTINGS, STATS_ITEMS, STATS_SLABS, STATS_CONNS,
	STATS_SIZES,
};
/* Every statistic of a group, in memcached's order, through emit. */
void stats_emit(struct conn *c, enum stats_group g, stats_emit_fn *emit,
                const void *arg);
/* The store's mc_store_opts.on_item_event: evictions and refusals per
 * size class. */
void stats_item_event(void *arg, enum mc_item_event ev,
                      const struct mc_item_meta *m);
/* memcached's size class of an item and its size there (sizeclass.h). */
unsigned stats_class_of(const struct mc_item_meta *m, size_t *ntotal);
/* Items the lru crawler reclaimed, by class. */
void stats_crawler_reclaimed(unsigned cls);
/* "slabs reassign|automove ..." */
void stats_slabs_command(struct conn *c, const struct mc_request *req);

/* ---- stats_prefix.c: "stats detail" ---- */
void stats_prefix_get(const char *key, size_t nkey, bool hit);
void stats_prefix_set(const char *key, size_t nkey);
void stats_prefix_delete(const char *key, size_t nkey);
void stats_prefix_clear(void);
/* memcached's "stats detail dump": the PREFIX lines and END (malloc'd);
 * NULL if out of memory. */
char *stats_prefix_dump(size_t *len);

/* ---- crawler.c: lru_crawler, stats cachedump ---- */
void crawler_command(struct conn *c, const struct mc_request *req);
void crawler_cachedump(struct conn *c, const struct mc_request *req);
/* lru_crawler_starts, crawler_items_checked, lru_crawler_running. */
void crawler_stats(uint64_t *starts, uint64_t *checked, bool *running);

/* ---- thread.c ---- */
int threads_start(unsigned n);
void threads_stop(void);
/* Hand an accepted fd to the next worker (round robin). */
void threads_dispatch(int fd, bool is_unix);

#define VERBOSE(level) (atomic_load_explicit(&settings.verbose,            \
                        memory_order_relaxed) >= (level))

#endif
