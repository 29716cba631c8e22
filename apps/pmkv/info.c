/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * info.c - INFO: Redis 7.0's sections (server, clients, memory,
 * persistence, stats, replication, cpu, modules, cluster, keyspace) in
 * its "field:value" text, with the fields pmkv can give truthfully under
 * Redis's names, and pmkv's own (pmkv_*): the region, its runtime,
 * domain and backend, under the journal backend the journal file beside
 * the region, and the group commits. used_memory is the region's size
 * (the memory the data set occupies), maxmemory its most; nothing is
 * saved apart (every write is durable when acknowledged), so
 * rdb_last_save_time is now and rdb_changes_since_last_save 0.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "blocking.h"
#include "server.h"

#define PMKV_VERSION "0.1.0"

struct text {
	char buf[16384];
	size_t n;
};

static void put(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(t->buf + t->n, sizeof(t->buf) - t->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		t->n += (size_t)k < sizeof(t->buf) - t->n ? (size_t)k
		                                          : sizeof(t->buf) - t->n - 1;
}

/* Redis's bytesToHuman. */
static const char *human(char *buf, size_t n, unsigned long long v)
{
	static const char units[] = "KMGTP";
	double d = (double)v;
	int u = -1;
	while (u < 4 && d >= 1024)
		d /= 1024, u++;
	if (u < 0)
		snprintf(buf, n, "%lluB", v);
	else
		snprintf(buf, n, "%.2f%c", d, units[u]);
	return buf;
}

static void server_section(struct text *t, struct server *s)
{
	struct utsname un;
	struct timeval tv;
	long long up = (long long)((pmkv_now_ms() - s->started_ms) / 1000);
	unsigned hz = atomic_load(&s->cfg.hz);
	if (uname(&un))
		memset(&un, 0, sizeof(un));
	gettimeofday(&tv, NULL);
	put(t, "# Server\r\nredis_version:%s\r\nredis_git_sha1:00000000\r\n"
	       "redis_git_dirty:0\r\npmkv_version:%s\r\n"
	       "redis_mode:standalone\r\nos:%s %s %s\r\narch_bits:%zu\r\n"
	       "multiplexing_api:%s\r\n",
	    PMKV_REDIS_VERSION, PMKV_VERSION, un.sysname, un.release,
	    un.machine, sizeof(void *) * 8,
	    s->cfg.io_threads ? "libevent" : "threads");
#ifdef __GNUC__
	put(t, "gcc_version:%d.%d.%d\r\n", __GNUC__, __GNUC_MINOR__,
	    __GNUC_PATCHLEVEL__);
#endif
	put(t, "process_id:%ld\r\nprocess_supervised:no\r\nrun_id:%s\r\n"
	       "tcp_port:%d\r\nserver_time_usec:%lld\r\n"
	       "uptime_in_seconds:%lld\r\nuptime_in_days:%lld\r\nhz:%u\r\n"
	       "configured_hz:%u\r\nexecutable:%s\r\nconfig_file:%s\r\n",
	    (long)getpid(), s->run_id, s->cfg.port,
	    (long long)tv.tv_sec * 1000000 + tv.tv_usec, up, up / 86400, hz,
	    hz, s->cfg.executable ? s->cfg.executable : "",
	    s->cfg.conf_file ? s->cfg.conf_file : "");
}

static void clients_section(struct text *t, struct server *s)
{
	pthread_mutex_lock(&s->lock);
	unsigned n = s->nconns;
	pthread_mutex_unlock(&s->lock);
	put(t, "# Clients\r\nconnected_clients:%u\r\ncluster_connections:0\r\n"
	       "maxclients:%u\r\nblocked_clients:%u\r\ntracking_clients:0\r\n",
	    n, atomic_load(&s->cfg.maxclients), blocked_clients());
}

/* The process's resident bytes (/proc/self/statm), or 0. */
static unsigned long long rss(void)
{
	unsigned long long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%llu %llu", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * (unsigned long long)sysconf(_SC_PAGESIZE);
}

static void memory_section(struct text *t, struct server *s)
{
	struct pmkv_info in;
	char h[3][32];
	unsigned long long r = rss(),
	                   phys = (unsigned long long)sysconf(_SC_PHYS_PAGES) *
	                          (unsigned long long)sysconf(_SC_PAGESIZE);
	pmkv_info_get(s->store, &in);
	put(t, "# Memory\r\nused_memory:%zu\r\nused_memory_human:%s\r\n"
	       "used_memory_rss:%llu\r\nused_memory_rss_human:%s\r\n"
	       "maxmemory:%zu\r\nmaxmemory_human:%s\r\nmaxmemory_policy:%s\r\n",
	    in.region_size, human(h[0], 32, in.region_size), r,
	    human(h[1], 32, r), in.region_max, human(h[2], 32, in.region_max),
	    pmkv_policy_name(atomic_load(&s->cfg.maxmemory_policy)));
	put(t, "total_system_memory:%llu\r\ntotal_system_memory_human:%s\r\n"
	       "mem_allocator:libc\r\n",
	    phys, human(h[0], 32, phys));
}

static void persistence_section(struct text *t, struct server *s)
{
	struct pmkv_info in;
	pmkv_info_get(s->store, &in);
	uint64_t errors = atomic_load(&s->write_errors);
	put(t, "# Persistence\r\nloading:0\r\nasync_loading:0\r\n"
	       "rdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\n"
	       "rdb_last_save_time:%lld\r\nrdb_last_bgsave_status:%s\r\n"
	       "aof_enabled:0\r\naof_rewrite_in_progress:0\r\n",
	    (long long)time(NULL), errors ? "err" : "ok");
	put(t, "pmkv_every_write_durable:1\r\n"
	       "pmkv_region:%s\r\npmkv_region_size:%zu\r\n"
	       "pmkv_region_max_size:%zu\r\npmkv_runtime:%s\r\n"
	       "pmkv_domain:%s\r\npmkv_backend:%s\r\npmkv_store_version:%s\r\n"
	       "pmkv_buckets:%llu\r\npmkv_write_errors:%llu\r\n"
	       "pmkv_oom_refusals:%llu\r\n",
	    s->cfg.region_path ? s->cfg.region_path : "", in.region_size,
	    in.region_max, pmtx_runtime_name(in.runtime),
	    pmtx_domain_name(in.domain), pmtx_backend_name(in.backend),
	    in.wrapped ? "wrapped" : "opt", (unsigned long long)in.buckets,
	    (unsigned long long)errors,
	    (unsigned long long)atomic_load(&s->oom_refusals));
	if (in.backend == PMTX_BACKEND_JOURNAL && s->cfg.region_path) {
		/* the region's sidecar: commits not yet checkpointed */
		char path[4096];
		struct stat st;
		snprintf(path, sizeof(path), "%s.pmtxj", s->cfg.region_path);
		put(t, "pmkv_journal:%s\r\npmkv_journal_size:%lld\r\n", path,
		    stat(path, &st) ? -1LL : (long long)st.st_size);
	}
}

static void stats_section(struct text *t, struct server *s)
{
	put(t, "# Stats\r\ntotal_connections_received:%llu\r\n"
	       "total_commands_processed:%llu\r\nrejected_connections:%llu\r\n"
	       "pmkv_group_commits:%llu\r\npmkv_group_commands:%llu\r\n"
	       "pmkv_group_connections:%llu\r\nexpired_keys:%llu\r\n"
	       "evicted_keys:%llu\r\n",
	    (unsigned long long)s->conns_total,
	    (unsigned long long)s->commands, (unsigned long long)s->rejected,
	    (unsigned long long)s->groups, (unsigned long long)s->group_cmds,
	    (unsigned long long)s->group_conns,
	    (unsigned long long)s->expired, (unsigned long long)s->evicted);
}

static void replication_section(struct text *t, struct server *s)
{
	put(t, "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"
	       "master_failover_state:no-failover\r\nmaster_replid:%s\r\n"
	       "master_replid2:0000000000000000000000000000000000000000\r\n"
	       "master_repl_offset:0\r\nsecond_repl_offset:-1\r\n"
	       "repl_backlog_active:0\r\n",
	    s->replid);
}

static void cpu_section(struct text *t, struct server *s)
{
	struct rusage self, kids;
	(void)s;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	put(t, "# CPU\r\nused_cpu_sys:%ld.%06ld\r\nused_cpu_user:%ld.%06ld\r\n"
	       "used_cpu_sys_children:%ld.%06ld\r\n"
	       "used_cpu_user_children:%ld.%06ld\r\n",
	    (long)self.ru_stime.tv_sec, (long)self.ru_stime.tv_usec,
	    (long)self.ru_utime.tv_sec, (long)self.ru_utime.tv_usec,
	    (long)kids.ru_stime.tv_sec, (long)kids.ru_stime.tv_usec,
	    (long)kids.ru_utime.tv_sec, (long)kids.ru_utime.tv_usec);
}

static void modules_section(struct text *t, struct server *s)
{
	(void)s;
	put(t, "# Modules\r\n");
}

static void cluster_section(struct text *t, struct server *s)
{
	(void)s;
	put(t, "# Cluster\r\ncluster_enabled:0\r\n");
}

/* Each database that holds keys; the calling thread's database is
 * selected again after (store.c S15). */
static void keyspace_section(struct text *t, struct server *s)
{
	unsigned cur = pmkv_cur_db();
	put(t, "# Keyspace\r\n");
	for (unsigned db = 0; db < PMKV_DBS; db++) {
		if (pmkv_select(s->store, db))
			break; /* the wrapped version: database 0 only */
		uint64_t n = pmkv_dbsize(s->store);
		if (n)
			put(t, "db%u:keys=%llu,expires=0,avg_ttl=0\r\n", db,
			    (unsigned long long)n);
	}
	pmkv_select(s->store, cur);
}

static const struct {
	const char *name;
	void (*fn)(struct text *t, struct server *s);
} sections[] = {
	{"server", server_section},         {"clients", clients_section},
	{"memory", memory_section},         {"persistence", persistence_section},
	{"stats", stats_section},           {"replication", replication_section},
	{"cpu", cpu_section},               {"modules", modules_section},
	{"cluster", cluster_section},       {"keyspace", keyspace_section},
};
#define NSECTIONS (sizeof(sections) / sizeof(*sections))

static int wanted(struct cmd_ctx *c, const char *name)
{
	if (c->q->argc == 1)
		return 1;
	for (size_t i = 1; i < c->q->argc; i++)
		if (resp_arg_is(c->q, i, name) || resp_arg_is(c->q, i, "all") ||
		    resp_arg_is(c->q, i, "default") ||
		    resp_arg_is(c->q, i, "everything"))
			return 1;
	return 0;
}

void cmd_info(struct cmd_ctx *c)
{
	struct text t = {.n = 0};
	for (size_t i = 0; i < NSECTIONS; i++)
		if (wanted(c, sections[i].name)) {
			if (t.n)
				put(&t, "\r\n");
			sections[i].fn(&t, c->srv);
		}
	resp_add_bulk(c->out, t.buf, t.n);
}
