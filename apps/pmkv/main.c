/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c - pmkv's flags, spelled as Redis spells its own where it has
 * one, and the wiring of store and server. Nothing else.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server.h"

struct flags {
	struct server_config srv;
	struct pmkv_config kv;
	char region[256];
	int check;
	int maxmemory_given;
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: pmkv [--port N] [--bind ADDR] [--unixsocket PATH]\n"
	        "            [--unixsocketperm OCTAL] [--maxclients N]\n"
	        "            [--io-threads N] [--commit-delay US] [--hz N]\n"
	        "            [--region FILE] [--maxmemory BYTES]\n"
	        "            [--runtime undo|redo|redo-async|auto|cow|twin]\n"
	        "            [--domain pdom0|pdom1|pdom2]\n"
	        "            [--backend hardware|emulated|file|journal]\n"
	        "            [--opt | --wrapped] [--proto-max-bulk-len BYTES]\n"
	        "            [--fast-restart] [--check] [--version] [--help]\n"
	        "Defaults: port 6379 on 127.0.0.1, maxclients 10000, a thread\n"
	        "per client (--io-threads N: N event loops instead), region\n"
	        "/dev/shm/pmkv.<port>.region, maxmemory 4gb, runtime redo,\n"
	        "pdom1, hardware, proto-max-bulk-len 16mb; the version is the\n"
	        "region's own, and a new region's is opt (wrapped under cow).\n"
	        "cow runs the wrapped version only. twin creates a twin region\n"
	        "of exactly maxmemory bytes (default 1gb under twin), half of\n"
	        "it a back copy; it runs twin only (the default there), and\n"
	        "twin runs in it only. --fast-restart (with twin, when the\n"
	        "region is created): every transaction stores its MUTATING\n"
	        "word, a barrier more, and a restart after a kill -9 at rest\n"
	        "copies only the last commit's lines, not the heap in use.\n"
	        "file and journal are for ordinary\n"
	        "disks: journal appends each commit to FILE.pmtxj (pdom1).\n"
	        "--commit-delay: with --io-threads, how long a loop waits for\n"
	        "more of its connections' requests before a group commit\n"
	        "(default 50 us on file and journal, 0 on the others).\n"
	        "--hz: passes of active expiry per second, 1-500 (default\n"
	        "10): each removes expired keys a bucket range at a time.\n");
}

/* Redis's memory units: 1k = 1000, 1kb = 1024, ... */
static int parse_bytes(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	static const struct {
		const char *unit;
		unsigned long long mul;
	} units[] = {{"", 1},          {"b", 1},         {"k", 1000},
	             {"kb", 1024},     {"m", 1000000},   {"mb", 1 << 20},
	             {"g", 1000000000}, {"gb", 1ull << 30}};
	if (errno || end == s || *s == '-')
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(*units); i++)
		if (!strcasecmp(end, units[i].unit)) {
			if (v > SIZE_MAX / units[i].mul)
				return -1;
			*out = (size_t)(v * units[i].mul);
			return 0;
		}
	return -1;
}

static int parse_uint(const char *s, unsigned base, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, (int)base);
	if (errno || end == s || *end || *s == '-' || v > 0xffffffffUL)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* One "--name value" pair: 0, or -1 for a bad value or name. */
static int parse_opt(struct flags *f, const char *o, const char *v)
{
	unsigned u;
	size_t b;
	if (!strcmp(o, "--port") && !parse_uint(v, 10, &u) && u < 65536)
		f->srv.port = (int)u;
	else if (!strcmp(o, "--bind"))
		f->srv.bind = v;
	else if (!strcmp(o, "--unixsocket"))
		f->srv.unixsocket = v;
	else if (!strcmp(o, "--unixsocketperm") && !parse_uint(v, 8, &u))
		f->srv.unixsocketperm = u;
	else if (!strcmp(o, "--maxclients") && !parse_uint(v, 10, &u) && u)
		f->srv.maxclients = u;
	else if (!strcmp(o, "--io-threads") && !parse_uint(v, 10, &u) &&
	         u <= 64)
		f->srv.io_threads = u;
	else if (!strcmp(o, "--hz") && !parse_uint(v, 10, &u) && u >= 1 &&
	         u <= 500)
		f->srv.hz = u;
	else if (!strcmp(o, "--commit-delay") && !parse_uint(v, 10, &u) &&
	         u <= 100000)
		f->srv.commit_delay_us = (int)u;
	else if (!strcmp(o, "--region"))
		f->kv.path = v;
	else if (!strcmp(o, "--maxmemory") && !parse_bytes(v, &b) &&
	         b >= (16u << 20))
		f->kv.max_size = b, f->maxmemory_given = 1;
	else if (!strcmp(o, "--proto-max-bulk-len") && !parse_bytes(v, &b) &&
	         b >= 1024 && b <= (512u << 20))
		f->kv.max_value = f->kv.max_key = f->srv.lim.max_bulk = b;
	else if (!strcmp(o, "--runtime")) {
		f->kv.runtime_default = 0;
		return pmtx_runtime_parse(v, &f->kv.runtime) ? -1 : 0;
	}
	else if (!strcmp(o, "--domain"))
		return pmtx_domain_parse(v, &f->kv.domain) ? -1 : 0;
	else if (!strcmp(o, "--backend"))
		return pmtx_backend_parse(v, &f->kv.backend) ? -1 : 0;
	else
		return -1;
	return 0;
}

static int parse_flag(struct flags *f, const char *o)
{
	if (!strcmp(o, "--check"))
		f->check = 1;
	else if (!strcmp(o, "--opt"))
		f->kv.flavour = PMKV_OPT;
	else if (!strcmp(o, "--wrapped"))
		f->kv.flavour = PMKV_WRAPPED;
	else if (!strcmp(o, "--fast-restart"))
		f->kv.fast_restart = 1;
	else
		return -1;
	return 0;
}

static void defaults(struct flags *f)
{
	struct resp_limits lim = RESP_LIMITS_DEFAULT;
	memset(f, 0, sizeof(*f));
	pmkv_config_init(&f->kv);
	f->kv.runtime_default = 1;
	f->srv.bind = "127.0.0.1";
	f->srv.port = 6379;
	f->srv.maxclients = 10000;
	f->srv.commit_delay_us = -1;
	f->srv.hz = 10;
	f->srv.lim = lim;
	f->srv.lim.max_bulk = f->kv.max_value;
}

/* 0: run; 1: exit 0 (help, version); -1: usage error (printed). */
static int parse(struct flags *f, int argc, char **argv)
{
	defaults(f);
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
			usage(stdout);
			return 1;
		}
		if (!strcmp(o, "--version") || !strcmp(o, "-v")) {
			printf("pmkv 0.1.0 (pmtx %s)\n", pmtx_version(NULL, NULL, NULL));
			return 1;
		}
		if (!parse_flag(f, o))
			continue;
		if (i + 1 >= argc || parse_opt(f, o, argv[i + 1])) {
			fprintf(stderr, "pmkv: bad option %s%s%s\n", o,
			        i + 1 < argc ? " " : "",
			        i + 1 < argc ? argv[i + 1] : "");
			usage(stderr);
			return -1;
		}
		i++;
	}
	if (f->kv.fast_restart && f->kv.runtime != PMTX_RT_TWIN) {
		fprintf(stderr, "pmkv: --fast-restart is for a twin region "
		        "(--runtime twin)\n");
		return -1;
	}
	if (!f->kv.path) {
		snprintf(f->region, sizeof(f->region), "/dev/shm/pmkv.%d.region",
		         f->srv.port);
		f->kv.path = f->region;
	}
	/* a twin region is created at its full, fixed size: not 4gb unasked */
	if (f->kv.runtime == PMTX_RT_TWIN && !f->maxmemory_given)
		f->kv.max_size = 1u << 30;
	f->srv.region_path = f->kv.path;
	if (f->srv.commit_delay_us < 0)
		f->srv.commit_delay_us = f->kv.backend == PMTX_BACKEND_FILE ||
		                         f->kv.backend == PMTX_BACKEND_JOURNAL
		                                 ? 50
		                                 : 0;
	f->srv.qbuf_max = 2 * f->srv.lim.max_bulk + (1u << 20);
	return 0;
}

static struct server *g_srv;

static void on_signal(int sig)
{
	(void)sig;
	if (g_srv)
		server_stop(g_srv);
}

static void signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* --check: open (recovery runs), check every chain, close. */
static int check_only(struct pmkv_store *s, const char *path)
{
	char msg[256] = "";
	int rc = pmkv_check(s, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "pmkv: %s: %s\n", path, msg);
	else
		printf("%s: consistent, %llu keys\n", path,
		       (unsigned long long)pmkv_dbsize(s));
	pmkv_close(s);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	static struct server srv;
	struct flags f;
	struct pmkv_store *store = NULL;
	char msg[512] = "";
	int rc = parse(&f, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	if ((rc = pmkv_open(&f.kv, &store, msg, sizeof(msg)))) {
		fprintf(stderr, "pmkv: %s\n", msg);
		return 1;
	}
	if (f.check)
		return check_only(store, f.kv.path);
	srv.cfg = f.srv;
	srv.cfg.executable = argv[0];
	srv.store = store;
	if (server_listen(&srv, msg, sizeof(msg))) {
		fprintf(stderr, "pmkv: %s\n", msg);
		pmkv_close(store);
		return 1;
	}
	g_srv = &srv;
	signals();
	fprintf(stderr, "pmkv: ready, %llu keys in %s\n",
	        (unsigned long long)pmkv_dbsize(store), f.kv.path);
	server_run(&srv);
	rc = pmkv_close(store);
	if (rc)
		fprintf(stderr, "pmkv: closing %s: %s\n", f.kv.path,
		        pmtx_strerror(rc));
	return rc ? 1 : 0;
}
