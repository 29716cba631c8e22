/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c - pmkv's flags, spelled as Redis spells its own where it has
 * one (Redis's directives, from a redis.conf given first or as flags, are
 * conf.c's), and the wiring of store and server. Nothing else.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf.h"
#include "server.h"

struct flags {
	struct server_config srv;
	struct pmkv_config kv;
	struct conf conf; /* Redis's directives (conf.c): into srv and kv */
	char region[PATH_MAX];
	char why[256];    /* what is wrong with a directive given as a flag */
	int check;
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: pmkv [CONFIG-FILE] [--port N] [--bind ADDR]\n"
	        "            [--unixsocket PATH]\n"
	        "            [--unixsocketperm OCTAL] [--maxclients N]\n"
	        "            [--io-threads N] [--commit-delay US] [--hz N]\n"
	        "            [--region FILE] [--maxmemory BYTES]\n"
	        "            [--maxmemory-policy noeviction|allkeys-lru|...]\n"
	        "            [--requirepass PASSWORD] [--protected-mode yes|no]\n"
	        "            [--timeout SECONDS] [--dir DIR] [--dbfilename NAME]\n"
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
	        "10): each removes expired keys a bucket range at a time.\n"
	        "CONFIG-FILE: a redis.conf; its directives port, bind,\n"
	        "unixsocket, unixsocketperm, requirepass, maxmemory,\n"
	        "maxmemory-policy, maxclients, timeout, hz, protected-mode,\n"
	        "io-threads, dir and dbfilename are read (each is a flag too),\n"
	        "others named and skipped; flags after it win. The region is\n"
	        "DIR/NAME (default /dev/shm, pmkv.<port>.region) unless\n"
	        "--region names it. protected-mode (default yes): with no\n"
	        "password, clients but 127.0.0.1, ::1 and the unix socket are\n"
	        "refused.\n");
}

/* One "--name value" pair: 0, or -1 for a bad value or name (why in
 * f->why, if a directive's). */
static int parse_opt(struct flags *f, const char *o, const char *v)
{
	unsigned u;
	size_t b;
	if (!strcmp(o, "--commit-delay") && !conf_uint(v, 10, &u) &&
	    u <= 100000)
		f->srv.commit_delay_us = (int)u;
	else if (!strcmp(o, "--region"))
		f->kv.path = v;
	else if (!strcmp(o, "--maxmemory-policy") &&
	         pmkv_policy_parse(v) >= 0)
		f->srv.maxmemory_policy = pmkv_policy_parse(v);
	else if (!strcmp(o, "--proto-max-bulk-len") && !conf_bytes(v, &b) &&
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
	else if (!strncmp(o, "--", 2)) { /* Redis's directives (conf.c) */
		char *av[2] = {(char *)o + 2, (char *)v};
		return conf_directive(&f->conf, 2, av, f->why, sizeof(f->why))
		               ? -1
		               : 0;
	} else
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
	f->srv.protected_mode = 1;
	f->srv.lim = lim;
	f->srv.lim.max_bulk = f->kv.max_value;
	f->conf = (struct conf){&f->srv, &f->kv, 0, NULL, NULL};
}

/* The region dir/dbfilename names (conf.c), unless --region named one: 0,
 * or -1 (printed). */
static int region_of(struct flags *f)
{
	char name[64];
	snprintf(name, sizeof(name), "pmkv.%d.region", f->srv.port);
	if (f->kv.path)
		return 0;
	if (snprintf(f->region, sizeof(f->region), "%s/%s",
	             f->conf.dir ? f->conf.dir : "/dev/shm",
	             f->conf.dbfilename ? f->conf.dbfilename : name) >=
	    (int)sizeof(f->region)) {
		fprintf(stderr, "pmkv: dir/dbfilename: %s\n",
		        strerror(ENAMETOOLONG));
		return -1;
	}
	f->kv.path = f->region;
	return 0;
}

/* A redis.conf as the first argument (conf.c): 1 if there is one, 0 if
 * not, -1 if it cannot be read (printed). */
static int conf_file(struct flags *f, int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-')
		return 0;
	if (conf_load(&f->conf, argv[1]))
		return -1;
	f->srv.conf_file = realpath(argv[1], NULL);
	return f->srv.conf_file ? 1 : -1;
}

/* 0: run; 1: exit 0 (help, version); -1: usage error, -2: a bad
 * configuration file (printed). */
static int parse(struct flags *f, int argc, char **argv)
{
	defaults(f);
	int file = conf_file(f, argc, argv);
	if (file < 0)
		return -2;
	for (int i = 1 + file; i < argc; i++) {
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
			fprintf(stderr, "pmkv: bad option %s%s%s%s%s\n", o,
			        i + 1 < argc ? " " : "",
			        i + 1 < argc ? argv[i + 1] : "",
			        f->why[0] ? ": " : "", f->why);
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
	if (region_of(f))
		return -2;
	/* a twin region is created at its full, fixed size: not 4gb unasked */
	if (f->kv.runtime == PMTX_RT_TWIN && !f->conf.maxmemory_given)
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
	pmtx_heap_stats st;
	int rc = pmkv_check(s, msg, sizeof(msg));
	if (!rc && (rc = pmtx_heap_check(pmkv_region(s), &st)))
		snprintf(msg, sizeof(msg), "the heap: %s", st.first_error);
	if (rc)
		fprintf(stderr, "pmkv: %s: %s\n", path, msg);
	else /* database 0's keys; the bytes of every block in use */
		printf("%s: consistent, %llu keys, %llu heap bytes in %llu "
		       "blocks\n", path, (unsigned long long)pmkv_dbsize(s),
		       (unsigned long long)st.allocated_bytes,
		       (unsigned long long)st.allocated_blocks);
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
		return rc > 0 ? 0 : rc == -2 ? 1 : 2;
	if ((rc = pmkv_open(&f.kv, &store, msg, sizeof(msg)))) {
		fprintf(stderr, "pmkv: %s\n", msg);
		return 1;
	}
	if (f.check)
		return check_only(store, f.kv.path);
	srv.cfg = f.srv;
	srv.cfg.executable = argv[0];
	srv.store = store;
	if ((rc = pmkv_track_access(store, srv.cfg.maxmemory_policy))) {
		fprintf(stderr, "pmkv: %s\n", pmtx_strerror(rc));
		pmkv_close(store);
		return 1;
	}
	if (server_conf_init(&srv) || server_listen(&srv, msg, sizeof(msg))) {
		fprintf(stderr, "pmkv: %s\n", msg[0] ? msg : "out of memory");
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
