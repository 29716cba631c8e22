/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf.h - redis.conf (conf.c): the directives pmkv reads from a file
 * given first on its command line and as --flags, and CONFIG REWRITE's
 * writer of that file.
 */
#ifndef PMKV_CONF_H
#define PMKV_CONF_H

#include <stddef.h>

#include "server.h"

/* What the directives set. */
struct conf {
	struct server_config *srv;
	struct pmkv_config *kv;
	int maxmemory_given;
	const char *dir, *dbfilename; /* NULL: not given (the region's path:
	                               * main.c) */
};

/* Apply one directive, argv[0] its name (any case): 0; 1 if pmkv has no
 * such directive; -1 if its arguments are wrong (why in err). String
 * values are copied. */
int conf_directive(struct conf *cf, size_t argc, char *const *argv,
                   char *err, size_t errlen);
/* Read the file at path, a directive a line (Redis's syntax: '#'
 * comments, arguments quoted as sdssplitargs does): 0, or -1 after
 * printing what is wrong and where. A directive pmkv does not have is
 * named on stderr and skipped. */
int conf_load(struct conf *cf, const char *path);

/* Redis's memory units (1k = 1000, 1kb = 1024, ...): 0 and *out, or -1.
 * An unsigned in base: 0 and *out, or -1. */
int conf_bytes(const char *s, size_t *out);
int conf_uint(const char *s, unsigned base, unsigned *out);

/* CONFIG REWRITE: each directive name set to value in the file at path:
 * its first line rewritten, later ones removed, or, if it has none and
 * value is not dflt, a line added at the end. 0, or -1 (why in err). */
struct conf_line {
	const char *name, *value, *dflt;
};
int conf_rewrite(const char *path, const struct conf_line *l, size_t n,
                 char *err, size_t errlen);

#endif
