/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * info.c - INFO: the server, clients, persistence, stats and keyspace
 * sections, in Redis's "field:value" text, with pmkv's own persistence
 * fields (the region, its runtime, domain and backend, and under the
 * journal backend the journal file beside the region).
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server.h"

#define PMKV_VERSION "0.1.0"
#define REDIS_COMPAT "7.0.0" /* the Redis whose commands pmkv follows */

struct text {
	char buf[4096];
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

static void server_section(struct text *t, struct server *s)
{
	put(t, "# Server\r\nredis_version:%s\r\npmkv_version:%s\r\n"
	       "redis_mode:standalone\r\nos:Linux\r\narch_bits:%zu\r\n"
	       "multiplexing_api:threads\r\nprocess_id:%ld\r\n"
	       "tcp_port:%d\r\nuptime_in_seconds:%lld\r\nexecutable:%s\r\n",
	    REDIS_COMPAT, PMKV_VERSION, sizeof(void *) * 8, (long)getpid(),
	    s->cfg.port,
	    (long long)((pmkv_now_ms() - s->started_ms) / 1000),
	    s->cfg.executable ? s->cfg.executable : "");
}

static void clients_section(struct text *t, struct server *s)
{
	pthread_mutex_lock(&s->lock);
	unsigned n = s->nconns;
	pthread_mutex_unlock(&s->lock);
	put(t, "# Clients\r\nconnected_clients:%u\r\nmaxclients:%u\r\n", n,
	    s->cfg.maxclients);
}

static void persistence_section(struct text *t, struct server *s)
{
	struct pmkv_info in;
	pmkv_info_get(s->store, &in);
	put(t, "# Persistence\r\nloading:0\r\nrdb_changes_since_last_save:0\r\n"
	       "aof_enabled:0\r\npmkv_every_write_durable:1\r\n"
	       "pmkv_region:%s\r\npmkv_region_size:%zu\r\n"
	       "pmkv_region_max_size:%zu\r\npmkv_runtime:%s\r\n"
	       "pmkv_domain:%s\r\npmkv_backend:%s\r\npmkv_store_version:%s\r\n"
	       "pmkv_buckets:%llu\r\npmkv_write_errors:%llu\r\n"
	       "pmkv_oom_refusals:%llu\r\n",
	    s->cfg.region_path ? s->cfg.region_path : "", in.region_size,
	    in.region_max, pmtx_runtime_name(in.runtime),
	    pmtx_domain_name(in.domain), pmtx_backend_name(in.backend),
	    in.wrapped ? "wrapped" : "opt", (unsigned long long)in.buckets,
	    (unsigned long long)atomic_load(&s->write_errors),
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
	       "pmkv_group_connections:%llu\r\nexpired_keys:%llu\r\n",
	    (unsigned long long)s->conns_total,
	    (unsigned long long)s->commands, (unsigned long long)s->rejected,
	    (unsigned long long)s->groups, (unsigned long long)s->group_cmds,
	    (unsigned long long)s->group_conns,
	    (unsigned long long)s->expired);
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
	{"server", server_section},       {"clients", clients_section},
	{"persistence", persistence_section}, {"stats", stats_section},
	{"keyspace", keyspace_section},
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
