/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stats.c - "stats", "stats settings", "stats items", "stats slabs",
 * "stats conns" and "stats reset", in memcached 1.6.18's format.
 *
 * Invariants:
 *  1. Field names and their order follow memcached's where the field
 *     means the same here; pmcached's own fields come after them.
 *  2. Per-worker counters are summed with relaxed loads (server.h 4): a
 *     snapshot, not an atomic view, as in memcached.
 *  3. pmcached has no slab classes: "stats items" and "stats slabs"
 *     report memcached's size classes (sizeclass.h), each item counted in
 *     the class memcached would store it in, from a walk of the LRU lists
 *     (O(items), one list locked at a time: what memcached counts as it
 *     goes). A class's pages are those memcached would need for its
 *     chunks (used_chunks rounded up to whole 1 MiB pages), so
 *     memcached-tool's display shows the same rows for the same items.
 *     Evictions, refusals and crawler reclaims per class are counted as
 *     they happen (volatile, since start or "stats reset").
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "layout.h"
#include "proto_int.h" /* memcached's number parsers */
#include "server.h"

/* Where the statistics go: the connection and its protocol's emitter. */
struct stat_out {
	struct conn *c;
	stats_emit_fn *emit;
	const void *arg;
};

static void stat_line(struct stat_out *o, const char *name, const char *fmt,
                      ...)
{
	char value[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	o->emit(o->c, o->arg, name, value);
}

static void stat_u64(struct stat_out *o, const char *name, uint64_t v)
{
	stat_line(o, name, "%" PRIu64, v);
}

struct totals {
#define X(name) uint64_t name;
	MC_THREAD_STATS(X)
#undef X
};

static void sum_threads(struct totals *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < server.nworkers; i++) {
		struct thread_stats *s = &server.workers[i].stats;
#define X(name) t->name += atomic_load_explicit(&s->name,                   \
                                                memory_order_relaxed);
		MC_THREAD_STATS(X)
#undef X
	}
}

/* Per size class, as they happen (invariant 3). */
static struct class_counts {
	_Atomic uint64_t evicted, evicted_nonzero, evicted_time, outofmemory,
	        crawler_reclaimed;
} counts[MC_CLASSES_MAX];

static uint64_t count_of(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

unsigned stats_class_of(const struct mc_item_meta *m, size_t *ntotal)
{
	size_t n = mc_classes_ntotal(&server.classes, m->nkey, m->flags,
	                             m->nbytes);
	if (ntotal)
		*ntotal = n;
	return mc_classes_id(&server.classes, n);
}

void stats_item_event(void *arg, enum mc_item_event ev,
                      const struct mc_item_meta *m)
{
	struct class_counts *k = &counts[stats_class_of(m, NULL)];
	(void)arg;
	if (ev == MC_EV_NO_MEMORY) {
		atomic_fetch_add_explicit(&k->outofmemory, 1,
		                          memory_order_relaxed);
		return;
	}
	atomic_fetch_add_explicit(&k->evicted, 1, memory_order_relaxed);
	if (m->exptime)
		atomic_fetch_add_explicit(&k->evicted_nonzero, 1,
		                          memory_order_relaxed);
	/* memcached: the last victim's idle seconds */
	atomic_store_explicit(&k->evicted_time, (uint64_t)(time(NULL) - m->time),
	                      memory_order_relaxed);
}

void stats_crawler_reclaimed(unsigned cls)
{
	atomic_fetch_add_explicit(&counts[cls].crawler_reclaimed, 1,
	                          memory_order_relaxed);
}

void stats_reset(void)
{
	for (unsigned i = 0; i < MC_CLASSES_MAX; i++) {
		struct class_counts *k = &counts[i];
		atomic_store(&k->evicted, 0);
		atomic_store(&k->evicted_nonzero, 0);
		atomic_store(&k->evicted_time, 0);
		atomic_store(&k->outofmemory, 0);
		atomic_store(&k->crawler_reclaimed, 0);
	}
	stats_prefix_clear();
	mc_store_reset_waits(server.store);
	for (unsigned i = 0; i < server.nworkers; i++) {
		struct thread_stats *s = &server.workers[i].stats;
#define X(name) atomic_store_explicit(&s->name, 0, memory_order_relaxed);
		MC_THREAD_STATS(X)
#undef X
	}
	atomic_store(&server.total_conns, 0);
	atomic_store(&server.rejected_conns, 0);
}

static void general_process(struct stat_out *o)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	int64_t now = time(NULL);
	stat_line(o, "pid", "%ld", (long)getpid());
	stat_line(o, "uptime", "%" PRId64, now - server.started);
	stat_line(o, "time", "%" PRId64, now);
	stat_line(o, "version", "%s", PMCACHED_VERSION);
	stat_line(o, "libevent", "%s", event_get_version());
	stat_line(o, "pointer_size", "%d", (int)(8 * sizeof(void *)));
	stat_line(o, "rusage_user", "%ld.%06ld", (long)ru.ru_utime.tv_sec,
	          (long)ru.ru_utime.tv_usec);
	stat_line(o, "rusage_system", "%ld.%06ld", (long)ru.ru_stime.tv_sec,
	          (long)ru.ru_stime.tv_usec);
	stat_line(o, "max_connections", "%d", settings.maxconns);
	stat_u64(o, "curr_connections", atomic_load(&server.curr_conns));
	stat_u64(o, "total_connections", atomic_load(&server.total_conns));
	stat_u64(o, "rejected_connections",
	         atomic_load(&server.rejected_conns));
	stat_u64(o, "connection_structures",
	         atomic_load(&server.conn_structs));
}

static void general_commands(struct stat_out *o, const struct totals *t)
{
#define S(name) stat_u64(o, #name, t->name);
	S(cmd_get) S(cmd_set) S(cmd_flush) S(cmd_touch) S(cmd_meta)
	S(get_hits) S(get_misses) S(get_expired) S(get_flushed)
	S(delete_misses) S(delete_hits) S(incr_misses) S(incr_hits)
	S(decr_misses) S(decr_hits) S(cas_misses) S(cas_hits) S(cas_badval)
	S(touch_hits) S(touch_misses) S(store_too_large) S(store_no_memory)
#undef S
	stat_u64(o, "auth_cmds", 0);
	stat_u64(o, "auth_errors", 0);
	stat_u64(o, "bytes_read", t->bytes_read);
	stat_u64(o, "bytes_written", t->bytes_written);
}

/* memcached's crawler fields, in its order around the slab mover's and
 * LRU maintainer's (which pmcached has not). */
static void general_crawler(struct stat_out *o)
{
	uint64_t starts, checked, reclaimed = 0;
	bool running;
	crawler_stats(&starts, &checked, &running);
	for (unsigned i = 0; i < MC_CLASSES_MAX; i++)
		reclaimed += count_of(&counts[i].crawler_reclaimed);
	stat_u64(o, "reclaimed", 0);
	stat_u64(o, "crawler_reclaimed", reclaimed);
	stat_u64(o, "crawler_items_checked", checked);
	stat_u64(o, "lru_crawler_running", running);
	stat_u64(o, "lru_crawler_starts", starts);
}

static void general_store(struct stat_out *o, const struct totals *t)
{
	struct mc_store_stats st;
	mc_store_stats(server.store, &st);
	pmtx_region *r = mc_store_region(server.store);
	stat_u64(o, "limit_maxbytes", st.limit_maxbytes);
	stat_u64(o, "accepting_conns", 1);
	stat_u64(o, "listen_disabled_num", 0);
	stat_u64(o, "threads", server.nworkers);
	stat_u64(o, "conn_yields", t->conn_yields);
	stat_u64(o, "hash_power_level", st.hashpower);
	stat_u64(o, "hash_bytes", 8ull << st.hashpower);
	stat_u64(o, "hash_is_expanding", 0);
	stat_u64(o, "bytes", st.bytes);
	stat_u64(o, "curr_items", st.curr_items);
	stat_u64(o, "total_items", t->total_items);
	stat_u64(o, "evictions", st.evictions);
	general_crawler(o);
	/* pmcached's own */
	stat_line(o, "pmtx_runtime", "%s",
	          pmtx_runtime_name(pmtx_region_runtime(r)));
	stat_line(o, "pmtx_domain", "%s",
	          pmtx_domain_name(pmtx_region_domain(r)));
	stat_line(o, "pmtx_backend", "%s",
	          pmtx_backend_name(pmtx_region_backend(r)));
	stat_u64(o, "region_bytes", pmtx_region_size(r));
	stat_u64(o, "region_max_bytes", pmtx_region_max_size(r));
	stat_u64(o, "restart_generation", st.gen);
	stat_u64(o, "reclaimed_at_start", st.reclaimed_at_start);
	stat_u64(o, "hash_expansions", st.expansions);
	stat_u64(o, "store_errors", t->store_errors);
	stat_u64(o, "lock_waits_table", st.waits_table);
	stat_u64(o, "lock_waits_stripe", st.waits_stripe);
	stat_u64(o, "lock_waits_stripe_max", st.waits_stripe_max);
	stat_u64(o, "lock_waits_stripes", st.waits_stripes);
	stat_u64(o, "lock_waits_lru", st.waits_lru);
	stat_u64(o, "lock_waits_pending", st.waits_pending);
}

static void stats_general(struct stat_out *o)
{
	struct totals t;
	sum_threads(&t);
	general_process(o);
	general_commands(o, &t);
	general_store(o, &t);
}

static const char *yes(bool b)
{
	return b ? "yes" : "no";
}

static void stats_settings(struct stat_out *o)
{
	stat_u64(o, "maxbytes", settings.maxbytes);
	stat_line(o, "maxconns", "%d", settings.maxconns);
	stat_line(o, "tcpport", "%d", settings.port);
	stat_line(o, "udpport", "%d", settings.udpport);
	stat_line(o, "inter", "%s", settings.listen ? settings.listen
	                                            : "127.0.0.1");
	stat_line(o, "verbosity", "%d", atomic_load(&settings.verbose));
	stat_line(o, "oldest", "0");
	stat_line(o, "evictions", settings.evict_to_free ? "on" : "off");
	stat_line(o, "domain_socket", "%s", settings.socketpath
	                                    ? settings.socketpath : "NULL");
	stat_line(o, "umask", "%o", settings.access);
	stat_line(o, "shutdown_command", yes(settings.shutdown_enabled));
	stat_line(o, "growth_factor", "%.2f", settings.factor);
	stat_line(o, "chunk_size", "%u", settings.chunk_size);
	stat_line(o, "num_threads", "%u", server.nworkers);
	stat_line(o, "num_threads_per_udp", "%u", server.nworkers);
	stat_line(o, "stat_key_prefix", "%c", settings.prefix_delimiter);
	stat_line(o, "detail_enabled", yes(atomic_load(&settings.detail_enabled)));
	stat_line(o, "reqs_per_event", "%d", settings.reqs_per_event);
	stat_line(o, "cas_enabled", yes(settings.use_cas));
	stat_line(o, "tcp_backlog", "%d", settings.backlog);
	static const char *const protocols[] = {"auto-negotiate", "ascii",
	                                        "binary"};
	stat_line(o, "binding_protocol", "%s", protocols[settings.protocol]);
	stat_line(o, "auth_enabled_sasl", "no");
	stat_line(o, "auth_enabled_ascii", "no");
	stat_u64(o, "item_size_max", settings.item_size_max);
	stat_line(o, "maxconns_fast", "yes");
	stat_line(o, "hashpower_init", "%u", settings.hashpower_init);
	stat_u64(o, "slab_chunk_max", server.classes.chunk_max);
	stat_line(o, "lru_crawler", yes(atomic_load(&settings.lru_crawler)));
	stat_line(o, "lru_crawler_sleep", "%u",
	          atomic_load(&settings.lru_crawler_sleep));
	stat_line(o, "lru_crawler_tocrawl", "%u",
	          atomic_load(&settings.lru_crawler_tocrawl));
	stat_line(o, "flush_enabled", yes(settings.flush_enabled));
	stat_line(o, "dump_enabled", yes(settings.dump_enabled));
	stat_line(o, "hash_algorithm", "xxh3");
	stat_line(o, "idle_timeout", "%d", settings.idle_timeout);
	stat_line(o, "memory_file", "%s", settings.region_path);
	stat_line(o, "pmtx_runtime", "%s", pmtx_runtime_name(settings.runtime));
	stat_line(o, "pmtx_domain", "%s", pmtx_domain_name(settings.domain));
	stat_line(o, "pmtx_backend", "%s", pmtx_backend_name(settings.backend));
}

/* What a walk finds of one class. */
struct class_row {
	uint64_t number, chunks, requested;
	int64_t oldest;     /* the least recent time of its items */
};

static void count_chunk(unsigned cls, void *arg)
{
	((struct class_row *)arg)[cls].chunks++;
}

static int count_item(const struct mc_item_meta *m, void *arg)
{
	struct class_row *rows = arg;
	size_t ntotal;
	struct class_row *r = &rows[stats_class_of(m, &ntotal)];
	mc_classes_chunks(&server.classes, m->nkey, m->flags, m->nbytes,
	                  count_chunk, rows);
	r->number++;
	r->requested += ntotal;
	if (!r->oldest || m->time < r->oldest)
		r->oldest = m->time;
	return 0;
}

static void walk_classes(struct class_row rows[MC_CLASSES_MAX])
{
	memset(rows, 0, MC_CLASSES_MAX * sizeof(*rows));
	for (unsigned l = 0; l < MC_NLRU; l++)
		mc_store_walk_lru(server.store, l, count_item, rows);
}

#define CLASS_STAT(o, prefix, id, field, fmt, ...)                            \
	do {                                                                  \
		char name_[64];                                               \
		snprintf(name_, sizeof(name_), prefix "%u:%s", id, field);    \
		stat_line(o, name_, fmt, __VA_ARGS__);                        \
	} while (0)

/* memcached's "stats items" fields that mean something here, in its
 * order (no hot, warm or cold lists: pmcached's are flat). */
static void stats_items(struct stat_out *o)
{
	struct class_row rows[MC_CLASSES_MAX];
	int64_t now = time(NULL);
	walk_classes(rows);
	for (unsigned i = 1; i < MC_CLASSES_MAX; i++) {
		struct class_row *r = &rows[i];
		struct class_counts *k = &counts[i];
		if (!r->number)
			continue;
		CLASS_STAT(o, "items:", i, "number", "%" PRIu64, r->number);
		CLASS_STAT(o, "items:", i, "age", "%" PRId64, now - r->oldest);
		CLASS_STAT(o, "items:", i, "mem_requested", "%" PRIu64,
		           r->requested);
		CLASS_STAT(o, "items:", i, "evicted", "%" PRIu64,
		           count_of(&k->evicted));
		CLASS_STAT(o, "items:", i, "evicted_nonzero", "%" PRIu64,
		           count_of(&k->evicted_nonzero));
		CLASS_STAT(o, "items:", i, "evicted_time", "%" PRIu64,
		           count_of(&k->evicted_time));
		CLASS_STAT(o, "items:", i, "outofmemory", "%" PRIu64,
		           count_of(&k->outofmemory));
		CLASS_STAT(o, "items:", i, "crawler_reclaimed", "%" PRIu64,
		           count_of(&k->crawler_reclaimed));
	}
}

/* memcached's "stats slabs" page fields, for the pages memcached would
 * hold for these items (invariant 3). */
static void stats_slabs(struct stat_out *o)
{
	struct class_row rows[MC_CLASSES_MAX];
	const struct mc_classes *k = &server.classes;
	unsigned active = 0;
	uint64_t malloced = 0;
	walk_classes(rows);
	for (unsigned i = 1; i < MC_CLASSES_MAX; i++) {
		uint64_t used = rows[i].chunks, per = k->perslab[i];
		if (!used)
			continue;
		uint64_t pages = (used + per - 1) / per;
		active++;
		malloced += pages * MC_SLAB_PAGE;
		CLASS_STAT(o, "", i, "chunk_size", "%" PRIu32, k->size[i]);
		CLASS_STAT(o, "", i, "chunks_per_page", "%" PRIu64, per);
		CLASS_STAT(o, "", i, "total_pages", "%" PRIu64, pages);
		CLASS_STAT(o, "", i, "total_chunks", "%" PRIu64, pages * per);
		CLASS_STAT(o, "", i, "used_chunks", "%" PRIu64, used);
		CLASS_STAT(o, "", i, "free_chunks", "%" PRIu64,
		           pages * per - used);
		CLASS_STAT(o, "", i, "free_chunks_end", "%d", 0);
	}
	stat_line(o, "active_slabs", "%u", active);
	stat_u64(o, "total_malloced", malloced);
}

static void conn_stat(struct conn *k, void *arg)
{
	struct stat_out *o = arg;
	char addr[128], name[64];
	const char *state;
	int64_t idle;
	conn_describe(k, addr, sizeof(addr), &state, &idle);
	int fd = conn_fd(k);
	snprintf(name, sizeof(name), "%d:addr", fd);
	stat_line(o, name, "%s", addr);
	snprintf(name, sizeof(name), "%d:state", fd);
	stat_line(o, name, "%s", state);
	snprintf(name, sizeof(name), "%d:secs_since_last_cmd", fd);
	stat_line(o, name, "%" PRId64, idle);
}

static void stats_conns(struct stat_out *o)
{
	for (unsigned i = 0; i < server.nlisten; i++) {
		char name[64];
		snprintf(name, sizeof(name), "%d:addr", server.listen_fds[i]);
		stat_line(o, name, "%s", server.listen_desc[i]);
		snprintf(name, sizeof(name), "%d:state", server.listen_fds[i]);
		stat_line(o, name, "conn_listening");
	}
	conn_foreach(conn_worker(o->c), conn_stat, o);
}

void stats_emit(struct conn *c, enum stats_group g, stats_emit_fn *emit,
                const void *arg)
{
	struct stat_out o = {c, emit, arg};
	switch (g) {
	case STATS_GENERAL: stats_general(&o); break;
	case STATS_SETTINGS: stats_settings(&o); break;
	case STATS_ITEMS: stats_items(&o); break;
	case STATS_SLABS: stats_slabs(&o); break;
	case STATS_CONNS: stats_conns(&o); break;
	case STATS_SIZES: stat_line(&o, "sizes_status", "disabled"); break;
	}
}

static void text_stat(struct conn *c, const void *arg, const char *name,
                      const char *value)
{
	char line[600];
	(void)arg;
	snprintf(line, sizeof(line), "STAT %s %s", name, value);
	conn_reply(c, line);
}

static bool arg_is(const struct mc_request *req, const char *s)
{
	return req->arg.len == strlen(s) && !memcmp(req->arg.p, s, req->arg.len);
}

/* The group a text "stats" argument names; false for the commands
 * among them (reset, detail, cachedump, extstore, sizes_enable,
 * sizes_disable). memcached ignores the tokens after a group's name. */
static bool text_group(const struct mc_request *req, enum stats_group *g)
{
	static const struct {
		const char *name;
		enum stats_group g;
	} groups[] = {{"settings", STATS_SETTINGS}, {"items", STATS_ITEMS},
		{"slabs", STATS_SLABS}, {"conns", STATS_CONNS},
		{"sizes", STATS_SIZES}};
	*g = STATS_GENERAL;
	if (!req->arg.len)
		return true;
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
		if (arg_is(req, groups[i].name)) {
			*g = groups[i].g;
			return true;
		}
	}
	return false;
}

/* memcached's "stats detail on|off|dump" (stats_prefix.c). */
static void stats_detail(struct conn *c, const struct mc_request *req)
{
	struct mc_str a = req->nargs >= 2 ? req->args[1] : (struct mc_str){0};
	size_t len;
	if (a.len == 2 && !memcmp(a.p, "on", 2)) {
		atomic_store(&settings.detail_enabled, true);
		conn_reply(c, "OK");
	} else if (a.len == 3 && !memcmp(a.p, "off", 3)) {
		atomic_store(&settings.detail_enabled, false);
		conn_reply(c, "OK");
	} else if (a.len == 4 && !memcmp(a.p, "dump", 4)) {
		char *dump = stats_prefix_dump(&len);
		if (!dump)
			return conn_reply(c, "SERVER_ERROR out of memory");
		conn_add(c, dump, len);
		free(dump);
	} else {
		conn_reply(c, "CLIENT_ERROR usage: stats detail on|off|dump");
	}
}

void stats_reply(struct conn *c, const struct mc_request *req)
{
	enum stats_group g;
	if (text_group(req, &g)) {
		stats_emit(c, g, text_stat, NULL);
		conn_reply(c, "END");
	} else if (arg_is(req, "reset")) {
		stats_reset();
		conn_reply(c, "RESET");
	} else if (arg_is(req, "detail")) {
		stats_detail(c, req);
	} else if (arg_is(req, "cachedump")) {
		crawler_cachedump(c, req);
	} else if (arg_is(req, "extstore")) {
		conn_reply(c, "END"); /* memcached with no external storage */
	} else if (arg_is(req, "sizes_enable") ||
	           arg_is(req, "sizes_disable")) {
		/* no size histogram is kept: it stays disabled. memcached
		 * sends no END after this line. */
		conn_reply(c, "STAT sizes_status disabled");
	} else {
		conn_reply(c, "ERROR");
	}
}

/* memcached's safe_strtod: a whole token that strtod reads. */
static bool is_double(struct mc_str t)
{
	char buf[64], *end;
	if (!t.len || t.len >= sizeof(buf))
		return false;
	memcpy(buf, t.p, t.len);
	buf[t.len] = '\0';
	(void)strtod(buf, &end);
	return end == buf + t.len;
}

/* memcached's "slabs reassign <src> <dst>" and "slabs automove": with
 * no pages to move, a valid reassign answers NOSPARE (memcached's answer
 * for a class with no page to spare); the checks before it are
 * memcached's. automove is accepted and changes nothing. */
void stats_slabs_command(struct conn *c, const struct mc_request *req)
{
	int32_t src, dst;
	struct mc_str sub = req->nargs ? req->args[0] : (struct mc_str){0};
	bool automove = sub.len == 8 && !memcmp(sub.p, "automove", 8);
	if (req->nargs == 3 && sub.len == 8 && !memcmp(sub.p, "reassign", 8)) {
		if (!mc_strtol(req->args[1], &src) ||
		    !mc_strtol(req->args[2], &dst))
			return conn_reply(c, "CLIENT_ERROR bad command line "
			                  "format");
		unsigned top = server.classes.largest;
		if (src == dst)
			return conn_reply(c, "SAME src and dst class are "
			                  "identical");
		if (src < 0 || (unsigned)src > top || dst < 0 ||
		    (unsigned)dst > top)
			return conn_reply(c, "BADCLASS invalid src or dst class "
			                  "id");
		return conn_reply(c, "NOSPARE source class has no spare pages");
	}
	if (!automove || req->nargs < 2)
		return conn_reply(c, "ERROR");
	uint32_t level;
	struct mc_str a = req->args[1];
	bool ratio = a.len == 5 && !memcmp(a.p, "ratio", 5);
	const char *r = "OK";
	if (ratio && (req->nargs < 3 || !is_double(req->args[2])))
		r = "ERROR";
	else if (!ratio && !mc_strtoul(a, &level))
		r = "CLIENT_ERROR bad command line format";
	else if (!ratio && level > 2)
		r = "ERROR";
	if (!req->noreply)
		conn_reply(c, r);
}
