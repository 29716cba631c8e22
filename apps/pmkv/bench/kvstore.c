/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kvstore.c - pmkv-storebench: the seed's Figure 7 workload on the store
 * itself, in one process, without sockets: pre-populate with random puts,
 * then N threads GET and SET uniformly random keys through pmkv_get and
 * pmkv_set for a fixed time. What it measures is what the two versions of
 * the store (and the runtimes) cost, which a server's socket round trips
 * hide. Prints one JSON line, with the persist barriers and flushed lines
 * per operation from pmtx's own counters, for each point: every thread
 * count of --threads by every mix of --read-pct, after one population.
 *
 *   pmkv-storebench --region FILE [--version opt|wrapped]
 *                   [--runtime R] [--domain D] [--threads N,N...]
 *                   [--read-pct R,R...] [--keys K] [--value-size V]
 *                   [--seconds S] [--populate M] [--seed X]
 *                   [--backend B] [--group G] [--hint H,H...]
 *
 * --group G runs each thread's operations G at a time in one store group
 * (one transaction, one commit), as the server's group commit does.
 * --hint 1 (with --group) hints each SET's key to the store as the server
 * does (cmd.c C4): its bucket two operations ahead, its entry one ahead;
 * a list (--hint 0,1,0,1) runs each point once per value, in turn.
 * The region is created fresh (an existing file is refused). Every loop
 * is bounded: population by M puts, the run by S seconds and 2^40
 * operations per thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "benchutil.h"
#include "store.h"

#define MAXPTS 8

struct opts {
	const char *region;
	struct pmkv_config kv;
	unsigned threads[MAXPTS], nthreads, read_pct[MAXPTS], nmix;
	unsigned read, value_size; /* this point's mix */
	uint64_t keys, populate, seed;
	unsigned group; /* operations per store group (store.c S8); 1: none */
	unsigned hint[MAXPTS], nhint, hinted; /* --hint; this point's */
	double seconds;
};

struct worker {
	const struct opts *o;
	struct pmkv_store *s;
	pthread_t th;
	uint64_t ops, errors, rng;
	pmtx_counters ctr;
	double deadline;
};

static char g_value[1 << 15];

static void drop(void *arg, const void *p, size_t n)
{
	(void)arg, (void)p, (void)n;
}

/* Key number key's name, in k[32]; its length. */
static size_t key_name(char *k, uint64_t key)
{
	return (size_t)snprintf(k, 32, "key:%llu", (unsigned long long)key);
}

/* One GET or SET of key k[0..kn); 0 or a status. */
static int op(struct pmkv_store *s, const char *k, size_t kn, int read,
              unsigned vn)
{
	int found, done;
	if (read)
		return pmkv_get(s, k, kn, drop, NULL, &found);
	return pmkv_set(s, k, kn, g_value, vn, 0, 0, &done, drop, NULL,
	                &found);
}

#define GROUP_MAX 1024

/* The group's operation j: r draws its key number (r % keys), whose name
 * is k[0..kn), and whether it reads ((r >> 40) % 100 < the --read-pct
 * in use). */
struct gop {
	uint64_t r;
	char k[32];
	size_t kn;
};

/* --hint: a SET's bucket (stage 0) or entry (stage 1), as cmd.c does. */
static void hint(struct worker *w, struct gop *g, unsigned j, unsigned n,
                 uint64_t *tok, int stage)
{
	if (!w->o->hinted || j >= n || (g[j].r >> 40) % 100 < w->o->read)
		return;
	if (stage == 0)
		tok[j] = pmkv_hint(w->s, g[j].k, g[j].kn);
	else
		pmkv_hint_more(w->s, tok[j]);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	static _Thread_local struct gop g[GROUP_MAX];
	static _Thread_local uint64_t tok[GROUP_MAX];
	pmtx_counters_reset();
	for (uint64_t i = 0; i < (1ull << 40); i++) {
		if ((i & 63) == 0 && now_s() >= w->deadline)
			break;
		unsigned n = o->group;
		for (unsigned j = 0; j < n; j++) {
			g[j].r = next(&w->rng);
			g[j].kn = key_name(g[j].k, g[j].r % o->keys);
		}
		if (n > 1 && pmkv_group_begin(w->s)) {
			w->errors++;
			continue;
		}
		for (unsigned j = 0; j < 3; j++)
			hint(w, g, j, n, tok, 0);
		for (unsigned j = 0; j < 2; j++)
			hint(w, g, j, n, tok, 1);
		for (unsigned j = 0; j < n; j++, w->ops++) {
			w->errors += op(w->s, g[j].k, g[j].kn,
			                (g[j].r >> 40) % 100 < o->read,
			                o->value_size) != 0;
			hint(w, g, j + 2, n, tok, 1);
			hint(w, g, j + 3, n, tok, 0);
		}
		if (n > 1)
			w->errors += pmkv_group_end(w->s) != 0;
	}
	pmtx_counters_get(&w->ctr);
	return NULL;
}

/* "a,b,c" into at most MAXPTS numbers in 1..max; their count, 0 if bad. */
static unsigned list(const char *v, unsigned *out, unsigned min,
                     unsigned max)
{
	unsigned n = 0;
	for (char *end; *v && n < MAXPTS; v = *end ? end + 1 : end) {
		unsigned long x = strtoul(v, &end, 10);
		if (end == v || x < min || x > max || (*end && *end != ','))
			return 0;
		out[n++] = (unsigned)x;
	}
	return *v ? 0 : n;
}

static int parse(struct opts *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	pmkv_config_init(&o->kv);
	o->kv.flavour = PMKV_OPT;
	o->threads[0] = 1, o->nthreads = 1;
	o->read_pct[0] = 90, o->nmix = 1, o->value_size = 64;
	o->keys = 238328, o->populate = 1000000, o->seed = 1, o->seconds = 5;
	o->group = 1;
	o->nhint = 1;
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];
		if (!strcmp(k, "--region")) o->region = v;
		else if (!strcmp(k, "--version"))
			o->kv.flavour = !strcmp(v, "wrapped") ? PMKV_WRAPPED
			                : !strcmp(v, "opt") ? PMKV_OPT : 0;
		else if (!strcmp(k, "--runtime")) {
			if (pmtx_runtime_parse(v, &o->kv.runtime))
				return -1;
		} else if (!strcmp(k, "--domain")) {
			if (pmtx_domain_parse(v, &o->kv.domain))
				return -1;
		} else if (!strcmp(k, "--backend")) {
			if (pmtx_backend_parse(v, &o->kv.backend))
				return -1;
		} else if (!strcmp(k, "--threads")) {
			if (!(o->nthreads = list(v, o->threads, 1, 256)))
				return -1;
		} else if (!strcmp(k, "--read-pct")) {
			if (!(o->nmix = list(v, o->read_pct, 0, 100)))
				return -1;
		}
		else if (!strcmp(k, "--keys")) o->keys = strtoull(v, NULL, 10);
		else if (!strcmp(k, "--value-size")) o->value_size = (unsigned)atoi(v);
		else if (!strcmp(k, "--seconds")) o->seconds = atof(v);
		else if (!strcmp(k, "--populate")) o->populate = strtoull(v, NULL, 10);
		else if (!strcmp(k, "--seed")) o->seed = strtoull(v, NULL, 10);
		else if (!strcmp(k, "--group")) o->group = (unsigned)atoi(v);
		else if (!strcmp(k, "--hint")) {
			if (!(o->nhint = list(v, o->hint, 0, 1)))
				return -1;
		} else return -1;
	}
	return (argc % 2 == 0 || !o->region || !o->kv.flavour || !o->keys ||
	        !o->group || o->group > GROUP_MAX ||
	        o->value_size > sizeof(g_value) || o->seconds <= 0 ||
	        o->seconds > 3600) ? -1 : 0;
}

/* One point: n threads at o->read % reads; its JSON line; errors. */
static uint64_t point(const struct opts *o, struct pmkv_store *s,
                      unsigned n, struct worker *w, double tp)
{
	double start = now_s();
	for (unsigned i = 0; i < n; i++) {
		w[i] = (struct worker){.o = o, .s = s, .rng = o->seed * 7919 + i,
		                       .deadline = start + o->seconds};
		pthread_create(&w[i].th, NULL, work, &w[i]);
	}
	uint64_t ops = 0, errors = 0, barriers = 0, flushes = 0, msyncs = 0;
	for (unsigned i = 0; i < n; i++) {
		pthread_join(w[i].th, NULL);
		ops += w[i].ops, errors += w[i].errors;
		barriers += w[i].ctr.barriers, flushes += w[i].ctr.flushes;
		msyncs += w[i].ctr.msyncs;
	}
	double el = now_s() - start;
	printf("{\"bench\": \"pmkv-store\", \"version\": \"%s\", "
	       "\"runtime\": \"%s\", \"domain\": \"%s\", \"threads\": %u, "
	       "\"read_pct\": %u, \"keys\": %llu, \"value_size\": %u, "
	       "\"populate\": %llu, \"populate_s\": %.2f, \"seconds\": %.2f, "
	       "\"ops\": %llu, \"ops_per_s\": %.0f, \"errors\": %llu, "
	       "\"barriers_per_op\": %.3f, \"flushes_per_op\": %.3f, "
	       "\"backend\": \"%s\", \"msyncs_per_op\": %.3f, \"group\": %u, "
	       "\"hint\": %u}\n",
	       o->kv.flavour == PMKV_WRAPPED ? "wrapped" : "opt",
	       pmtx_runtime_name(o->kv.runtime),
	       pmtx_domain_name(o->kv.domain), n, o->read,
	       (unsigned long long)o->keys, o->value_size,
	       (unsigned long long)o->populate, tp, el,
	       (unsigned long long)ops, (double)ops / el,
	       (unsigned long long)errors,
	       ops ? (double)barriers / (double)ops : 0.0,
	       ops ? (double)flushes / (double)ops : 0.0,
	       pmtx_backend_name(o->kv.backend),
	       ops ? (double)msyncs / (double)ops : 0.0,
	       o->group, o->hinted);
	fflush(stdout);
	return errors;
}

static int populate(const struct opts *o, struct pmkv_store *s)
{
	uint64_t rng = o->seed ^ 0x5eed;
	char k[32];
	for (uint64_t i = 0; i < o->populate; i++)
		if (op(s, k, key_name(k, next(&rng) % o->keys), 0,
		       o->value_size))
			return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	static struct worker w[256];
	struct pmkv_store *s;
	struct stat st;
	char msg[512] = "";
	if (parse(&o, argc, argv)) {
		fprintf(stderr, "usage: pmkv-storebench --region FILE "
		        "[--version opt|wrapped] [--runtime R] [--domain D] "
		        "[--threads N] [--read-pct R] [--keys K] "
		        "[--value-size V] [--seconds S] [--populate M] "
		        "[--seed X] [--backend B] [--group G] [--hint H,H...]\n");
		return 2;
	}
	if (stat(o.region, &st) == 0) {
		fprintf(stderr, "pmkv-storebench: %s exists\n", o.region);
		return 2;
	}
	o.kv.path = o.region;
	o.kv.size = 256u << 20;
	if (pmkv_open(&o.kv, &s, msg, sizeof(msg))) {
		fprintf(stderr, "pmkv-storebench: %s\n", msg);
		return 1;
	}
	memset(g_value, 'v', sizeof(g_value));
	double t0 = now_s();
	if (populate(&o, s)) {
		fprintf(stderr, "pmkv-storebench: populating failed\n");
		pmkv_close(s);
		return 1;
	}
	double tp = now_s() - t0;
	uint64_t errors = 0;
	for (unsigned i = 0; i < o.nthreads; i++)
		for (unsigned j = 0; j < o.nmix; j++)
			for (unsigned h = 0; h < o.nhint; h++) {
				o.read = o.read_pct[j];
				o.hinted = o.hint[h];
				errors += point(&o, s, o.threads[i], w, tp);
			}
	int rc = pmkv_close(s);
	return errors || rc ? 1 : 0;
}
