/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * settings.c - pmcached's command line (settings.h).
 *
 * Invariants:
 *  1. Every flag of memcached 1.6.18's usage text is accepted, with its
 *     long form, and means what it means there; -m is megabytes read as
 *     memcached reads it (atoi), -I takes k/m suffixes, 1 KiB to 1 GiB,
 *     at most half of -m.
 *  2. Unknown -o options are warned about on stderr and ignored.
 *  3. Nothing here touches the region: opening it is main.c's job, after
 *     privileges are dropped.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout.h"
#include "settings.h"

struct settings settings;

static void defaults(void)
{
	memset(&settings, 0, sizeof(settings));
	settings.port = 11211;
	settings.access = 0700;
	settings.maxbytes = 64u << 20;
	settings.evict_to_free = true;
	settings.maxconns = 1024;
	settings.num_threads = 4;
	settings.reqs_per_event = 20;
	settings.use_cas = true;
	settings.backlog = 1024;
	settings.item_size_max = 1u << 20;
	settings.flush_enabled = true;
	settings.maxconns_fast = true;
	settings.factor = 1.25;
	settings.chunk_size = 48;
	settings.prefix_delimiter = ':';
	settings.dump_enabled = true;
	settings.lru_crawler = true;
	settings.lru_crawler_sleep = 100;
	settings.runtime = PMTX_RT_REDO;
	settings.domain = PMTX_PDOM1;
	settings.backend = PMTX_BACKEND_HARDWARE;
}

static void usage(void)
{
	printf(
"pmcached " PMCACHED_VERSION " (pmtx): memcached whose whole cache lives in a\n"
"persistent pmtx region and comes back warm after a restart, kill -9 or\n"
"power loss.\n"
"-p, --port=<num>          TCP port to listen on (default: 11211, 0: off,\n"
"                          -1: any free port, see MEMCACHED_PORT_FILENAME)\n"
"-U, --udp-port=<num>      UDP port to listen on (default: 0, off)\n"
"-s, --unix-socket=<file>  UNIX socket to listen on (disables network support)\n"
"-a, --unix-mask=<mask>    access mask for UNIX socket, in octal (default: 700)\n"
"-A, --enable-shutdown     enable ascii \"shutdown\" command\n"
"-l, --listen=<addr>       interface(s) to listen on, comma-separated, with\n"
"                          an optional :port (default: 127.0.0.1)\n"
"-d, --daemon              run as a daemon\n"
"-r, --enable-coredumps    maximize core file limit\n"
"-u, --user=<user>         assume identity of <username> (only when run as root)\n"
"-m, --memory-limit=<num>  item memory in megabytes (default: 64)\n"
"-M, --disable-evictions   return error on memory exhausted instead of evicting\n"
"-c, --conn-limit=<num>    max simultaneous connections (default: 1024)\n"
"-k, --lock-memory         lock down all paged memory\n"
"-v, --verbose             verbose (print errors/warnings while in event loop)\n"
"-vv                       very verbose (also print client commands/responses)\n"
"-h, --help                print this help and exit\n"
"-i, --license             print the license and exit\n"
"-V, --version             print version and exit\n"
"-P, --pidfile=<file>      save PID in <file>, only used with -d option\n"
"-t, --threads=<num>       number of threads to use (default: 4, at most %d)\n"
"-R, --max-reqs-per-event  maximum number of requests per event (default: 20)\n"
"-C, --disable-cas         disable use of CAS\n"
"-b, --listen-backlog=<num> set the backlog queue limit (default: 1024)\n"
"-B, --protocol=<name>     protocol - one of ascii, binary, or auto (default: auto)\n"
"-I, --max-item-size=<num> adjusts max item size (default: 1m, min: 1k, max: 1024m)\n"
"-F, --disable-flush-all   disable flush_all command\n"
"-X, --disable-dumping     disable stats cachedump and lru_crawler metadump\n"
"-W, --disable-watch       accepted (pmcached has no watch)\n"
"-f, --slab-growth-factor=<num> the size classes' growth factor (default: 1.25)\n"
"-n, --slab-min-size=<bytes> the smallest size class's room for key, value\n"
"                          and flags (default: 48). pmcached has no slabs: the\n"
"                          classes are memcached's, for its statistics\n"
"-D <char>                 prefix delimiter for stats detail (default: \":\");\n"
"                          turns on the per-prefix statistics\n"
"-L, -N                    accepted and ignored (large pages, NAPI)\n"
"-o, --extended            comma separated list of extended options:\n"
"   - hashpower:           log2 of the initial hash table size, when the\n"
"                          region is created (default 16)\n"
"   - idle_timeout:        close connections idle this many seconds (0: never)\n"
"   - maxconns_fast:       refuse connections over -c at once (always on)\n"
"   - lru_crawler, no_lru_crawler: lru_crawler enabled (default) or not\n"
"   - lru_crawler_sleep, lru_crawler_tocrawl: as memcached's (reported)\n"
"                          other memcached options are warned about and ignored\n"
"pmcached's own:\n"
"-e, --memory-file=<file>  the region file that holds the whole cache.\n"
"                          default: " PMCACHED_DEFAULT_DIR "/pmcached.<port>.region\n"
"                          (<port>: -p, or the unix socket's name with -s)\n"
"    --runtime=<name>      pmtx runtime: undo, redo, redo-async or twin\n"
"                          (default: redo; twin needs a region created for it)\n"
"    --domain=<name>       persistence domain: pdom0, pdom1, pdom2 (default: pdom1)\n"
"    --backend=<name>      hardware (clwb/sfence; persistent or DRAM-backed memory),\n"
"                          emulated, file (msync: ordinary disks and SSDs), or\n"
"                          journal (each commit appended to <file>.pmtxj and\n"
"                          fdatasync'd; ordinary disks and SSDs, pdom1 only)\n"
"                          (default: hardware)\n"
"    --fast-restart        with --runtime=twin, when the region is created: a\n"
"                          twin region that does not reseal (a barrier more a\n"
"                          transaction; a restart after kill -9 at rest copies\n"
"                          only the last commit's lines)\n"
"    --region-max=<MB>     largest the region may grow (default: 2 x -m + 1024;\n"
"                          twin: the region's fixed size, default 3 x -m + 128)\n"
"    --check               check the region (-e) and exit: recovery in a private\n"
"                          view, heap, hash table, LRU lists, no leaked block;\n"
"                          the file is not written (but commits a crash left in\n"
"                          its journal are applied first). Exit 0 if consistent\n"
"A reply to a storage command is sent after its transaction has committed:\n"
"an acknowledged write survives kill -9 and (with a persistent domain)\n"
"power loss.\n", MC_NPENDING);
}

static int bad(const char *msg, const char *arg)
{
	fprintf(stderr, "%s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	return 2;
}

/* memcached's -I: a number with an optional k or m suffix. */
static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s)
		return -1;
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (*end)
		return -1;
	*out = (size_t)v;
	return 0;
}

static int parse_int(const char *s, int min, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v < min || v > 1 << 30)
		return -1;
	*out = (int)v;
	return 0;
}

/* One -o option, name[=value]. */
static int extended_one(char *opt)
{
	char *val = strchr(opt, '=');
	if (val)
		*val++ = '\0';
	int v;
	if (!strcmp(opt, "hashpower") && val && !parse_int(val, 0, &v) &&
	    v <= MC_HASHPOWER_MAX) {
		settings.hashpower_init = v < MC_HASHPOWER_MIN ? 0 : (unsigned)v;
		return 0;
	}
	if (!strcmp(opt, "idle_timeout") && val && !parse_int(val, 0, &v)) {
		settings.idle_timeout = v;
		return 0;
	}
	if (!strcmp(opt, "maxconns_fast"))
		return 0;
	if (!strcmp(opt, "lru_crawler") || !strcmp(opt, "no_lru_crawler")) {
		settings.lru_crawler = opt[0] == 'l';
		return 0;
	}
	if (!strcmp(opt, "lru_crawler_sleep") && val &&
	    !parse_int(val, 0, &v) && v <= 1000000) {
		settings.lru_crawler_sleep = (uint32_t)v;
		return 0;
	}
	if (!strcmp(opt, "lru_crawler_tocrawl") && val &&
	    !parse_int(val, 0, &v)) {
		settings.lru_crawler_tocrawl = (uint32_t)v;
		return 0;
	}
	if (!strcmp(opt, "hashpower") || !strcmp(opt, "idle_timeout") ||
	    !strncmp(opt, "lru_crawler_", 12))
		return bad("bad value for -o option", opt);
	fprintf(stderr, "pmcached: ignoring unknown or unsupported -o option "
	        "'%s'\n", opt);
	return 0;
}

static int extended(const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	int rc = copy ? 0 : 2;
	for (char *o = copy ? strtok_r(copy, ",", &save) : NULL; o && !rc;
	     o = strtok_r(NULL, ",", &save))
		rc = extended_one(o);
	free(copy);
	return rc;
}

static int own_option(int c, const char *arg)
{
	int rc = 0, mb = 0;
	switch (c) {
	case 1001: rc = pmtx_runtime_parse(arg, &settings.runtime); break;
	case 1002: rc = pmtx_domain_parse(arg, &settings.domain); break;
	case 1003: rc = pmtx_backend_parse(arg, &settings.backend); break;
	case 1004:
		rc = parse_int(arg, 1, &mb);
		settings.region_max = (size_t)mb << 20;
		break;
	}
	if (rc)
		return bad("bad value", arg);
	if (c == 1001 && settings.runtime != PMTX_RT_UNDO &&
	    settings.runtime != PMTX_RT_REDO &&
	    settings.runtime != PMTX_RT_REDO_ASYNC &&
	    settings.runtime != PMTX_RT_TWIN)
		return bad("--runtime must be undo, redo, redo-async or twin",
		           arg);
	return 0;
}

static int region_file(const char *arg)
{
	if (strlen(arg) >= sizeof(settings.region_path))
		return bad("-e: path too long", NULL);
	strcpy(settings.region_path, arg);
	settings.region_given = true;
	return 0;
}

static int ignored(int c)
{
	fprintf(stderr, "pmcached: -%c has no meaning here; ignored\n", c);
	return 0;
}

static int refused(const char *what)
{
	fprintf(stderr, "pmcached: %s is not supported\n", what);
	return 2;
}

static int numeric(int c, const char *arg)
{
	int v = 0;
	size_t sz;
	switch (c) {
	case 'p': if (!strcmp(arg, "-1")) { /* any free port */
			settings.port = -1;
			return 0;
		}
		if (parse_int(arg, 0, &v) || v > 65535) break;
		settings.port = v; return 0;
	case 'U': if (parse_int(arg, 0, &v) || v > 65535) break;
		settings.udpport = v; return 0;
	case 'a': settings.access = (int)strtol(arg, NULL, 8); return 0;
	case 'm': settings.maxbytes = (size_t)atoi(arg) << 20; return 0;
	case 'c': if (parse_int(arg, 1, &settings.maxconns))
			return bad("Maximum connections must be greater than 0",
			           NULL);
		return 0;
	case 't': if (parse_int(arg, 1, &settings.num_threads))
			return bad("Number of threads must be greater than 0",
			           NULL);
		return 0;
	case 'R': if (parse_int(arg, 1, &settings.reqs_per_event))
			return bad("Number of requests per event must be greater "
			           "than 0", NULL);
		return 0;
	case 'b': if (parse_int(arg, 1, &settings.backlog)) break;
		return 0;
	case 'I': if (parse_size(arg, &sz)) break;
		settings.item_size_max = sz; return 0;
	}
	return bad("bad value", arg);
}

/* -f and -n shape the size classes of the statistics (sizeclass.h), as
 * memcached's slabs; -D names the prefix delimiter and turns the prefix
 * statistics on, as memcached's does. memcached's checks and texts. */
static int classes_option(int c, const char *arg)
{
	int v;
	switch (c) {
	case 'f':
		settings.factor = atof(arg);
		if (settings.factor <= 1.0)
			return bad("Factor must be greater than 1", NULL);
		return 0;
	case 'n':
		if (parse_int(arg, 1, &v))
			return bad("Chunk size must be greater than 0", NULL);
		settings.chunk_size = (unsigned)v;
		return 0;
	default: /* memcached takes the first character */
		settings.prefix_delimiter = arg[0];
		settings.detail_enabled = true;
		return 0;
	}
}

static int protocol(const char *arg)
{
	static const char *const names[] = {"auto", "ascii", "binary"};
	for (int i = 0; i < 3; i++) {
		if (!strcmp(arg, names[i])) {
			settings.protocol = (enum mc_protocol)i;
			return 0;
		}
	}
	return bad("Invalid value for binding protocol", arg);
}

static int option(int c, const char *arg)
{
	switch (c) {
	case 'p': case 'U': case 'a': case 'm': case 'c': case 't': case 'R':
	case 'b': case 'I':
		return numeric(c, arg);
	case 'A': settings.shutdown_enabled = true; return 0;
	case 'l': settings.listen = arg; return 0;
	case 's': settings.socketpath = arg; return 0;
	case 'd': settings.daemonize = true; return 0;
	case 'r': settings.coredumps = true; return 0;
	case 'k': settings.lock_memory = true; return 0;
	case 'u': settings.username = arg; return 0;
	case 'M': settings.evict_to_free = false; return 0;
	case 'v': settings.verbose++; return 0;
	case 'P': settings.pidfile = arg; return 0;
	case 'C': settings.use_cas = false; return 0;
	case 'F': settings.flush_enabled = false; return 0;
	case 'X': settings.dump_enabled = false; return 0;
	case 'W': return 0;
	case 'B': return protocol(arg);
	case 'f': case 'n': case 'D': return classes_option(c, arg);
	case 'L': case 'N': return ignored(c);
	case 'S': return refused("SASL (-S)");
	case 'Z': return refused("TLS (-Z)");
	case 'Y': return refused("ascii authentication (-Y)");
	case 'o': return extended(arg);
	case 'e': return region_file(arg);
	case 'h': usage(); return 1;
	case 'V': printf("pmcached " PMCACHED_VERSION "\n"); return 1;
	case 'i': printf("pmcached is part of pmtx; see its LICENSE.\n");
		return 1;
	case 1001: case 1002: case 1003: case 1004: return own_option(c, arg);
	case 1005: settings.check_only = true; return 0;
	case 1006: settings.fast_restart = true; return 0;
	}
	return bad("Illegal argument. Try -h", NULL);
}

static const struct option longopts[] = {
	{"port", required_argument, 0, 'p'},
	{"udp-port", required_argument, 0, 'U'},
	{"unix-socket", required_argument, 0, 's'},
	{"unix-mask", required_argument, 0, 'a'},
	{"enable-shutdown", no_argument, 0, 'A'},
	{"listen", required_argument, 0, 'l'},
	{"daemon", no_argument, 0, 'd'},
	{"enable-coredumps", no_argument, 0, 'r'},
	{"user", required_argument, 0, 'u'},
	{"memory-limit", required_argument, 0, 'm'},
	{"disable-evictions", no_argument, 0, 'M'},
	{"conn-limit", required_argument, 0, 'c'},
	{"lock-memory", no_argument, 0, 'k'},
	{"verbose", optional_argument, 0, 'v'},
	{"help", no_argument, 0, 'h'},
	{"license", no_argument, 0, 'i'},
	{"version", no_argument, 0, 'V'},
	{"pidfile", required_argument, 0, 'P'},
	{"slab-growth-factor", required_argument, 0, 'f'},
	{"slab-min-size", required_argument, 0, 'n'},
	{"enable-largepages", no_argument, 0, 'L'},
	{"threads", required_argument, 0, 't'},
	{"max-reqs-per-event", required_argument, 0, 'R'},
	{"disable-cas", no_argument, 0, 'C'},
	{"listen-backlog", required_argument, 0, 'b'},
	{"protocol", required_argument, 0, 'B'},
	{"max-item-size", required_argument, 0, 'I'},
	{"enable-sasl", no_argument, 0, 'S'},
	{"disable-flush-all", no_argument, 0, 'F'},
	{"disable-dumping", no_argument, 0, 'X'},
	{"disable-watch", no_argument, 0, 'W'},
	{"auth-file", required_argument, 0, 'Y'},
	{"memory-file", required_argument, 0, 'e'},
	{"enable-ssl", no_argument, 0, 'Z'},
	{"extended", required_argument, 0, 'o'},
	{"napi-ids", required_argument, 0, 'N'},
	{"runtime", required_argument, 0, 1001},
	{"domain", required_argument, 0, 1002},
	{"backend", required_argument, 0, 1003},
	{"region-max", required_argument, 0, 1004},
	{"check", no_argument, 0, 1005},
	{"fast-restart", no_argument, 0, 1006},
	{0, 0, 0, 0},
};

static int check(void)
{
	if (settings.item_size_max < 1024)
		return bad("Item max size cannot be less than 1024 bytes.", NULL);
	if (settings.item_size_max > (1u << 30))
		return bad("Cannot set item size limit higher than 1 gigabyte.",
		           NULL);
	if (settings.maxbytes == 0 ||
	    settings.item_size_max > settings.maxbytes / 2)
		return bad("Cannot set item size limit higher than 1/2 of "
		           "memory max.", NULL);
	if (settings.num_threads > MC_NPENDING)
		return bad("Too many threads (-t): the most is 64", NULL);
	if (settings.fast_restart && settings.runtime != PMTX_RT_TWIN)
		return bad("--fast-restart is for a twin region "
		           "(--runtime=twin)", NULL);
	return 0;
}

/* The default region file: one per port (or unix socket), so that two
 * instances on one machine never share a cache. */
static void default_region(void)
{
	char tag[256];
	if (settings.socketpath) {
		const char *b = strrchr(settings.socketpath, '/');
		snprintf(tag, sizeof(tag), "%s", b ? b + 1 : settings.socketpath);
	} else {
		snprintf(tag, sizeof(tag), "%d", settings.port);
	}
	snprintf(settings.region_path, sizeof(settings.region_path),
	         PMCACHED_DEFAULT_DIR "/pmcached.%s.region", tag);
}

int settings_parse(int argc, char **argv)
{
	defaults();
	int c, rc = 0;
	const char *shortopts =
		"p:U:s:a:Al:drku:m:Mc:vhiVP:f:n:Lt:D:R:Cb:B:I:SFXWY:e:Zo:N:";
	opterr = 1;
	while (!rc && (c = getopt_long(argc, argv, shortopts, longopts,
	                               NULL)) != -1)
		rc = c == '?' ? 2 : option(c, optarg);
	if (!rc && optind < argc)
		rc = bad("unexpected argument", argv[optind]);
	if (!rc)
		rc = check();
	if (!rc && !settings.region_given)
		default_region();
	return rc;
}

void settings_region_sizes(size_t *initial, size_t *max)
{
	size_t m = settings.maxbytes;
	if (settings.runtime == PMTX_RT_TWIN) {
		/* fixed, and half of it is the back copy: a heap of 1.5 x -m
		 * plus 64 MB (hash table, pending lists, fragmentation) */
		*max = settings.region_max ? settings.region_max
		                           : 2 * (m + m / 2 + (64u << 20));
		*initial = *max;
		return;
	}
	*max = settings.region_max ? settings.region_max
	                           : 2 * m + (1024u << 20);
	*initial = m / 4 + (32u << 20);
	if (*initial > *max)
		*initial = *max;
}
