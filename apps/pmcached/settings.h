/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * settings.h - pmcached's command line: memcached 1.6's flags with the
 * same meaning, and pmcached's own (the region file, the pmtx runtime,
 * persistence domain and backend).
 *
 * Invariants:
 *  1. Settings are filled once, by settings_parse, before any thread
 *     starts; afterwards they are read only, but for the atomics that
 *     commands change ("verbosity", "stats detail", "lru_crawler").
 *  2. A flag memcached accepts is never fatal here unless pmcached cannot
 *     honour a promise it makes (TLS, SASL): those are refused with a
 *     message, the rest is warned about and ignored.
 */
#ifndef PMCACHED_SETTINGS_H
#define PMCACHED_SETTINGS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "store.h"

#define PMCACHED_VERSION "1.6.18"   /* the protocol version it speaks */
#define PMCACHED_DEFAULT_DIR "/dev/shm"
#define MC_MAX_LISTEN 16

/* -B: what a connection speaks. auto: binary if its first byte is the
 * binary protocol's magic (0x80), ascii (text and meta) otherwise. */
enum mc_protocol { MC_PROTO_AUTO = 0, MC_PROTO_ASCII, MC_PROTO_BINARY };

struct settings {
	int port;                 /* -p, 0 = no TCP */
	int udpport;              /* -U, 0 = off */
	const char *listen;       /* -l, comma-separated; default 127.0.0.1 */
	const char *socketpath;   /* -s */
	int access;               /* -a, octal mask */
	bool shutdown_enabled;    /* -A */
	bool daemonize;           /* -d */
	bool coredumps;           /* -r */
	bool lock_memory;         /* -k */
	const char *username;     /* -u */
	size_t maxbytes;          /* -m, bytes */
	bool evict_to_free;       /* !-M */
	int maxconns;             /* -c */
	_Atomic int verbose;      /* -v, -vv, -vvv; "verbosity" */
	const char *pidfile;      /* -P */
	int num_threads;          /* -t */
	int reqs_per_event;       /* -R */
	bool use_cas;             /* !-C */
	int backlog;              /* -b */
	enum mc_protocol protocol; /* -B */
	size_t item_size_max;     /* -I */
	bool flush_enabled;       /* !-F */
	bool maxconns_fast;       /* -o maxconns_fast (always on) */
	int idle_timeout;         /* -o idle_timeout, seconds; 0 = none */
	unsigned hashpower_init;  /* -o hashpower (at creation) */
	double factor;            /* -f: the size classes' growth factor */
	unsigned chunk_size;      /* -n: the smallest class's room */
	char prefix_delimiter;    /* -D: prefix statistics (stats detail) */
	_Atomic bool detail_enabled; /* -D, "stats detail on|off" */
	bool dump_enabled;        /* !-X: metadump, cachedump */
	_Atomic bool lru_crawler; /* "lru_crawler enable|disable" */
	_Atomic uint32_t lru_crawler_sleep, lru_crawler_tocrawl;
	/* pmcached's own */
	char region_path[4096];   /* -e, or the default */
	bool region_given;
	size_t region_max;        /* --region-max, 0 = from -m */
	pmtx_runtime runtime;
	pmtx_domain domain;
	pmtx_backend backend;
	bool check_only;          /* --check: verify the region and exit */
	bool fast_restart;        /* --fast-restart: a new twin region
	                           * without resealing */
};

extern struct settings settings;

/* Parse argv into settings. Returns 0 to run, 1 to exit successfully
 * (-h, -V, -i), 2 on a usage error (message already printed). */
int settings_parse(int argc, char **argv);
/* Size of the region for settings.maxbytes (create and maximum). */
void settings_region_sizes(size_t *initial, size_t *max);

#endif
