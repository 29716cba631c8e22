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
 *     report one class per non-empty LRU list (class l + 1).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "layout.h"
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

void stats_reset(void)
{
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
	stat_u64(o, "reclaimed", 0);
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
	stat_line(o, "num_threads", "%u", server.nworkers);
	stat_line(o, "num_threads_per_udp", "%u", server.nworkers);
	stat_line(o, "stat_key_prefix", ":");
	stat_line(o, "detail_enabled", "no");
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
	stat_line(o, "flush_enabled", yes(settings.flush_enabled));
	stat_line(o, "dump_enabled", "no");
	stat_line(o, "hash_algorithm", "xxh3");
	stat_line(o, "idle_timeout", "%d", settings.idle_timeout);
	stat_line(o, "memory_file", "%s", settings.region_path);
	stat_line(o, "pmtx_runtime", "%s", pmtx_runtime_name(settings.runtime));
	stat_line(o, "pmtx_domain", "%s", pmtx_domain_name(settings.domain));
	stat_line(o, "pmtx_backend", "%s", pmtx_backend_name(settings.backend));
}

static void stats_lists(struct stat_out *o, bool slabs)
{
	int64_t now = time(NULL);
	unsigned active = 0;
	uint64_t total = 0;
	for (unsigned l = 0; l < MC_NLRU; l++) {
		struct mc_lru_info li;
		if (mc_store_lru_info(server.store, l, &li) || !li.count)
			continue;
		char name[64];
		active++;
		total += li.bytes;
#define F(fmt, field, ...) (snprintf(name, sizeof(name), fmt, l + 1, field), \
                            stat_line(o, name, __VA_ARGS__))
		if (slabs) {
			F("%u:%s", "used_chunks", "%" PRIu64, li.count);
			F("%u:%s", "mem_requested", "%" PRIu64, li.bytes);
			continue;
		}
		F("items:%u:%s", "number", "%" PRIu64, li.count);
		F("items:%u:%s", "age", "%" PRId64,
		  li.tail_time ? now - li.tail_time : 0);
		F("items:%u:%s", "mem_requested", "%" PRIu64, li.bytes);
#undef F
	}
	if (slabs) {
		stat_line(o, "active_slabs", "%u", active);
		stat_u64(o, "total_malloced", total);
	}
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
	case STATS_ITEMS: stats_lists(&o, false); break;
	case STATS_SLABS: stats_lists(&o, true); break;
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

/* The group a text "stats" argument names; false for reset and for the
 * groups pmcached does not have (detail, cachedump, extstore). */
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

void stats_reply(struct conn *c, const struct mc_request *req)
{
	enum stats_group g;
	if (text_group(req, &g)) {
		stats_emit(c, g, text_stat, NULL);
		conn_reply(c, "END");
	} else if (arg_is(req, "reset")) {
		stats_reset();
		conn_reply(c, "RESET");
	} else {
		conn_reply(c, "ERROR");
	}
}
