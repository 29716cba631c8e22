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

static void stat_line(struct conn *c, const char *name, const char *fmt, ...)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "STAT %s ", name);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	conn_reply(c, line);
}

static void stat_u64(struct conn *c, const char *name, uint64_t v)
{
	stat_line(c, name, "%" PRIu64, v);
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

static void general_process(struct conn *c)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	int64_t now = time(NULL);
	stat_line(c, "pid", "%ld", (long)getpid());
	stat_line(c, "uptime", "%" PRId64, now - server.started);
	stat_line(c, "time", "%" PRId64, now);
	stat_line(c, "version", "%s", PMCACHED_VERSION);
	stat_line(c, "libevent", "%s", event_get_version());
	stat_line(c, "pointer_size", "%d", (int)(8 * sizeof(void *)));
	stat_line(c, "rusage_user", "%ld.%06ld", (long)ru.ru_utime.tv_sec,
	          (long)ru.ru_utime.tv_usec);
	stat_line(c, "rusage_system", "%ld.%06ld", (long)ru.ru_stime.tv_sec,
	          (long)ru.ru_stime.tv_usec);
	stat_line(c, "max_connections", "%d", settings.maxconns);
	stat_u64(c, "curr_connections", atomic_load(&server.curr_conns));
	stat_u64(c, "total_connections", atomic_load(&server.total_conns));
	stat_u64(c, "rejected_connections",
	         atomic_load(&server.rejected_conns));
	stat_u64(c, "connection_structures",
	         atomic_load(&server.conn_structs));
}

static void general_commands(struct conn *c, const struct totals *t)
{
#define S(name) stat_u64(c, #name, t->name);
	S(cmd_get) S(cmd_set) S(cmd_flush) S(cmd_touch) S(cmd_meta)
	S(get_hits) S(get_misses) S(get_expired) S(get_flushed)
	S(delete_misses) S(delete_hits) S(incr_misses) S(incr_hits)
	S(decr_misses) S(decr_hits) S(cas_misses) S(cas_hits) S(cas_badval)
	S(touch_hits) S(touch_misses) S(store_too_large) S(store_no_memory)
#undef S
	stat_u64(c, "auth_cmds", 0);
	stat_u64(c, "auth_errors", 0);
	stat_u64(c, "bytes_read", t->bytes_read);
	stat_u64(c, "bytes_written", t->bytes_written);
}

static void general_store(struct conn *c, const struct totals *t)
{
	struct mc_store_stats st;
	mc_store_stats(server.store, &st);
	pmtx_region *r = mc_store_region(server.store);
	stat_u64(c, "limit_maxbytes", st.limit_maxbytes);
	stat_u64(c, "accepting_conns", 1);
	stat_u64(c, "listen_disabled_num", 0);
	stat_u64(c, "threads", server.nworkers);
	stat_u64(c, "conn_yields", t->conn_yields);
	stat_u64(c, "hash_power_level", st.hashpower);
	stat_u64(c, "hash_bytes", 8ull << st.hashpower);
	stat_u64(c, "hash_is_expanding", 0);
	stat_u64(c, "bytes", st.bytes);
	stat_u64(c, "curr_items", st.curr_items);
	stat_u64(c, "total_items", t->total_items);
	stat_u64(c, "evictions", st.evictions);
	stat_u64(c, "reclaimed", 0);
	/* pmcached's own */
	stat_line(c, "pmtx_runtime", "%s",
	          pmtx_runtime_name(pmtx_region_runtime(r)));
	stat_line(c, "pmtx_domain", "%s",
	          pmtx_domain_name(pmtx_region_domain(r)));
	stat_line(c, "pmtx_backend", "%s",
	          pmtx_backend_name(pmtx_region_backend(r)));
	stat_u64(c, "region_bytes", pmtx_region_size(r));
	stat_u64(c, "region_max_bytes", pmtx_region_max_size(r));
	stat_u64(c, "restart_generation", st.gen);
	stat_u64(c, "reclaimed_at_start", st.reclaimed_at_start);
	stat_u64(c, "hash_expansions", st.expansions);
	stat_u64(c, "store_errors", t->store_errors);
}

static void stats_general(struct conn *c)
{
	struct totals t;
	sum_threads(&t);
	general_process(c);
	general_commands(c, &t);
	general_store(c, &t);
}

static const char *yes(bool b)
{
	return b ? "yes" : "no";
}

static void stats_settings(struct conn *c)
{
	stat_u64(c, "maxbytes", settings.maxbytes);
	stat_line(c, "maxconns", "%d", settings.maxconns);
	stat_line(c, "tcpport", "%d", settings.port);
	stat_line(c, "udpport", "%d", settings.udpport);
	stat_line(c, "inter", "%s", settings.listen ? settings.listen
	                                            : "127.0.0.1");
	stat_line(c, "verbosity", "%d", atomic_load(&settings.verbose));
	stat_line(c, "oldest", "0");
	stat_line(c, "evictions", settings.evict_to_free ? "on" : "off");
	stat_line(c, "domain_socket", "%s", settings.socketpath
	                                    ? settings.socketpath : "NULL");
	stat_line(c, "umask", "%o", settings.access);
	stat_line(c, "shutdown_command", yes(settings.shutdown_enabled));
	stat_line(c, "num_threads", "%u", server.nworkers);
	stat_line(c, "num_threads_per_udp", "%u", server.nworkers);
	stat_line(c, "stat_key_prefix", ":");
	stat_line(c, "detail_enabled", "no");
	stat_line(c, "reqs_per_event", "%d", settings.reqs_per_event);
	stat_line(c, "cas_enabled", yes(settings.use_cas));
	stat_line(c, "tcp_backlog", "%d", settings.backlog);
	stat_line(c, "binding_protocol", "ascii");
	stat_line(c, "auth_enabled_sasl", "no");
	stat_line(c, "auth_enabled_ascii", "no");
	stat_u64(c, "item_size_max", settings.item_size_max);
	stat_line(c, "maxconns_fast", "yes");
	stat_line(c, "hashpower_init", "%u", settings.hashpower_init);
	stat_line(c, "flush_enabled", yes(settings.flush_enabled));
	stat_line(c, "dump_enabled", "no");
	stat_line(c, "hash_algorithm", "xxh3");
	stat_line(c, "idle_timeout", "%d", settings.idle_timeout);
	stat_line(c, "memory_file", "%s", settings.region_path);
	stat_line(c, "pmtx_runtime", "%s", pmtx_runtime_name(settings.runtime));
	stat_line(c, "pmtx_domain", "%s", pmtx_domain_name(settings.domain));
	stat_line(c, "pmtx_backend", "%s", pmtx_backend_name(settings.backend));
}

static void stats_lists(struct conn *c, bool slabs)
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
                            stat_line(c, name, __VA_ARGS__))
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
		stat_line(c, "active_slabs", "%u", active);
		stat_u64(c, "total_malloced", total);
	}
}

static void conn_stat(struct conn *k, void *arg)
{
	struct conn *c = arg;
	char addr[128], name[64];
	const char *state;
	int64_t idle;
	conn_describe(k, addr, sizeof(addr), &state, &idle);
	int fd = conn_fd(k);
	snprintf(name, sizeof(name), "%d:addr", fd);
	stat_line(c, name, "%s", addr);
	snprintf(name, sizeof(name), "%d:state", fd);
	stat_line(c, name, "%s", state);
	snprintf(name, sizeof(name), "%d:secs_since_last_cmd", fd);
	stat_line(c, name, "%" PRId64, idle);
}

static void stats_conns(struct conn *c)
{
	for (unsigned i = 0; i < server.nlisten; i++) {
		char name[64];
		snprintf(name, sizeof(name), "%d:addr", server.listen_fds[i]);
		stat_line(c, name, "%s", server.listen_desc[i]);
		snprintf(name, sizeof(name), "%d:state", server.listen_fds[i]);
		stat_line(c, name, "conn_listening");
	}
	conn_foreach(conn_worker(c), conn_stat, c);
}

static bool arg_is(const struct mc_request *req, const char *s)
{
	return req->arg.len == strlen(s) && !memcmp(req->arg.p, s, req->arg.len);
}

void stats_reply(struct conn *c, const struct mc_request *req)
{
	if (!req->arg.len)
		stats_general(c);
	else if (arg_is(req, "settings"))
		stats_settings(c);
	else if (arg_is(req, "items"))
		stats_lists(c, false);
	else if (arg_is(req, "slabs"))
		stats_lists(c, true);
	else if (arg_is(req, "conns"))
		stats_conns(c);
	else if (arg_is(req, "reset")) {
		stats_reset();
		conn_reply(c, "RESET");
		return;
	} else if (arg_is(req, "sizes")) {
		stat_line(c, "sizes_status", "disabled");
	} else {
		conn_reply(c, "ERROR"); /* detail, cachedump, extstore */
		return;
	}
	conn_reply(c, "END");
}
