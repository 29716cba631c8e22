/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf.c - redis.conf as pmkv reads it: a file given as the first
 * argument (`pmkv /path/redis.conf [--flags]`, the flags after it win),
 * and the same directives as --flags. The directives are Redis's: port,
 * bind, unixsocket, unixsocketperm, requirepass, maxmemory,
 * maxmemory-policy, maxclients, timeout, hz, protected-mode, io-threads,
 * dir and dbfilename (the region file is dir/dbfilename). Any other
 * directive of a file is named on stderr and skipped, so that Redis's own
 * redis.conf can be given; a line that cannot be read, or a directive
 * with a wrong value, stops pmkv with the file, the line and why.
 *
 * A line is split as Redis splits it (sdssplitargs: blanks between
 * arguments, "double quotes" with \n \r \t \b \a \\ \" \xHH escapes,
 * 'single quotes' with \'): the protocol layer's inline parser (resp.c),
 * which splits so, reads it.
 *
 * CONFIG REWRITE (conf_rewrite) writes the file anew beside it and
 * renames it over the old one: a crash leaves the old file or the new,
 * never part of one.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"

#define BIND_MAX 16 /* addresses of one bind (Redis's CONFIG_BINDADDR_MAX) */

int conf_bytes(const char *s, size_t *out)
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
	if (errno || end == s || !isdigit((unsigned char)*s))
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

int conf_uint(const char *s, unsigned base, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, (int)base);
	if (errno || end == s || *end || *s == '-' || v > 0xffffffffUL)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* ---- the directives ---- */

static int why(char *err, size_t n, const char *text)
{
	snprintf(err, n, "%s", text);
	return -1;
}

/* An unsigned in [lo, hi] (base 8 or 10): 0, or -1 and why. */
static int uint_in(const char *s, unsigned base, unsigned lo, unsigned hi,
                   unsigned *out, char *err, size_t n)
{
	if (conf_uint(s, base, out))
		return why(err, n, "argument couldn't be parsed into an integer");
	if (*out < lo || *out > hi) {
		snprintf(err, n, "argument must be between %u and %u inclusive",
		         lo, hi);
		return -1;
	}
	return 0;
}

static char *copy(const char *s)
{
	char *p = strdup(s);
	if (!p) {
		fprintf(stderr, "pmkv: out of memory\n");
		exit(1);
	}
	return p;
}

/* bind addr [addr ...]: kept as one string, the addresses separated by a
 * space (server.c splits it); a flag's one argument may hold several. */
static int set_bind(struct conf *cf, size_t argc, char *const *argv,
                    char *err, size_t n)
{
	size_t total = 1, words = 0;
	for (size_t i = 1; i < argc; i++) {
		total += strlen(argv[i]) + 1;
		for (const char *p = argv[i]; *p;) {
			size_t w = strcspn(p, " ");
			words += w > 0;
			p += w + (p[w] == ' ');
		}
	}
	if (!words)
		return why(err, n, "wrong number of arguments");
	if (words > BIND_MAX)
		return why(err, n, "Too many bind addresses specified.");
	char *s = malloc(total);
	if (!s)
		return why(err, n, "out of memory");
	s[0] = 0;
	for (size_t i = 1; i < argc; i++) {
		if (i > 1)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	cf->srv->bind = s;
	return 0;
}

static int set_dir(struct conf *cf, const char *v, char *err, size_t n)
{
	struct stat st;
	if (stat(v, &st))
		return why(err, n, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return why(err, n, strerror(ENOTDIR));
	cf->dir = copy(v);
	return 0;
}

static int set_maxmemory(struct conf *cf, const char *v, char *err,
                         size_t n)
{
	size_t b;
	if (conf_bytes(v, &b))
		return why(err, n, "argument must be a memory value");
	if (!b) /* Redis: no limit; pmkv: the region's default size */
		return 0;
	if (b < (16u << 20))
		return why(err, n, "the region's maximum size is at least 16mb");
	cf->kv->max_size = b;
	cf->maxmemory_given = 1;
	return 0;
}

static int set_bool(const char *v, _Atomic int *out, char *err, size_t n)
{
	if (strcasecmp(v, "yes") && strcasecmp(v, "no"))
		return why(err, n, "argument must be 'yes' or 'no'");
	*out = !strcasecmp(v, "yes");
	return 0;
}

/* A directive of one argument, v. */
static int directive1(struct conf *cf, const char *name, const char *v,
                      char *err, size_t n)
{
	struct server_config *s = cf->srv;
	unsigned u;
	int rc;
	if (!strcasecmp(name, "port")) {
		if (!(rc = uint_in(v, 10, 0, 65535, &u, err, n)))
			s->port = (int)u;
	} else if (!strcasecmp(name, "unixsocket")) {
		s->unixsocket = *v ? copy(v) : NULL, rc = 0;
	} else if (!strcasecmp(name, "unixsocketperm")) {
		if (!(rc = uint_in(v, 8, 0, 0777, &u, err, n)))
			s->unixsocketperm = u;
	} else if (!strcasecmp(name, "requirepass")) {
		s->requirepass = copy(v), rc = 0;
	} else if (!strcasecmp(name, "maxmemory")) {
		rc = set_maxmemory(cf, v, err, n);
	} else if (!strcasecmp(name, "maxmemory-policy")) {
		int p = pmkv_policy_parse(v);
		rc = p < 0 ? why(err, n, "argument(s) must be one of the "
		                 "following: volatile-lru, volatile-lfu, "
		                 "volatile-random, volatile-ttl, allkeys-lru, "
		                 "allkeys-lfu, allkeys-random, noeviction")
		           : 0;
		if (!rc)
			s->maxmemory_policy = p;
	} else if (!strcasecmp(name, "maxclients")) {
		if (!(rc = uint_in(v, 10, 1, UINT_MAX, &u, err, n)))
			s->maxclients = u;
	} else if (!strcasecmp(name, "timeout")) {
		if (!(rc = uint_in(v, 10, 0, INT_MAX, &u, err, n)))
			s->timeout = u;
	} else if (!strcasecmp(name, "hz")) {
		if (!(rc = uint_in(v, 10, 1, 500, &u, err, n)))
			s->hz = u;
	} else if (!strcasecmp(name, "protected-mode")) {
		rc = set_bool(v, &s->protected_mode, err, n);
	} else if (!strcasecmp(name, "io-threads")) {
		if (!(rc = uint_in(v, 10, 0, 64, &u, err, n)))
			s->io_threads = u;
	} else if (!strcasecmp(name, "dir")) {
		rc = set_dir(cf, v, err, n);
	} else if (!strcasecmp(name, "dbfilename")) {
		rc = strchr(v, '/') || !*v
		             ? why(err, n, "dbfilename can't be a path, just a "
		                   "filename")
		             : 0;
		if (!rc)
			cf->dbfilename = copy(v);
	} else {
		return 1;
	}
	return rc;
}

int conf_directive(struct conf *cf, size_t argc, char *const *argv,
                   char *err, size_t errlen)
{
	static const char *const known[] = {
		"port", "unixsocket", "unixsocketperm", "requirepass",
		"maxmemory", "maxmemory-policy", "maxclients", "timeout", "hz",
		"protected-mode", "io-threads", "dir", "dbfilename"};
	if (!strcasecmp(argv[0], "bind"))
		return set_bind(cf, argc, argv, err, errlen);
	int is_known = 0;
	for (size_t i = 0; i < sizeof(known) / sizeof(*known); i++)
		is_known |= !strcasecmp(argv[0], known[i]);
	if (!is_known)
		return 1;
	if (argc != 2)
		return why(err, errlen, "wrong number of arguments");
	return directive1(cf, argv[0], argv[1], err, errlen);
}

/* ---- the file ---- */

/* Split line (NUL-terminated, no newline) into q as sdssplitargs does:
 * 0, or -1 (unbalanced quotes). */
static int split(const char *line, struct resp_req *q, char **buf,
                 size_t *cap)
{
	struct resp_limits lim = RESP_LIMITS_DEFAULT;
	size_t n = strlen(line), used;
	const char *e;
	if (n + 2 > *cap) {
		char *p = realloc(*buf, n + 2);
		if (!p)
			return -1;
		*buf = p, *cap = n + 2;
	}
	memcpy(*buf, line, n);
	(*buf)[n] = '\n';
	lim.max_inline = n + 2;
	/* a line's first byte is a directive's, never '*': inline */
	return line[0] != '*' &&
	               resp_parse(*buf, n + 1, &lim, q, &used, &e) == RESP_OK
	               ? 0
	               : -1;
}

/* The line without the blanks around it (in place). */
static char *trim(char *s)
{
	size_t n = strlen(s);
	while (n && strchr(" \t\r\n", s[n - 1]))
		s[--n] = 0;
	while (*s && strchr(" \t\r\n", *s))
		s++;
	return s;
}

int conf_load(struct conf *cf, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, *buf = NULL, err[256];
	size_t cap = 0, bufcap = 0;
	unsigned no = 0;
	int rc = 0;
	struct resp_req q;
	if (!f) {
		fprintf(stderr, "pmkv: %s: %s\n", path, strerror(errno));
		return -1;
	}
	resp_req_init(&q);
	while (!rc && getline(&line, &cap, f) >= 0) {
		char *s = trim(line);
		no++;
		if (!*s || *s == '#')
			continue;
		if (split(s, &q, &buf, &bufcap)) {
			fprintf(stderr, "pmkv: %s, line %u: unbalanced quotes in "
			        "configuration line: '%s'\n", path, no, s);
			rc = -1;
		} else if (q.argc) {
			int k = conf_directive(cf, q.argc, q.argv, err, sizeof(err));
			if (k > 0)
				fprintf(stderr, "pmkv: %s, line %u: directive '%s' is "
				        "not one pmkv has: ignored\n", path, no, q.argv[0]);
			else if (k < 0)
				fprintf(stderr, "pmkv: %s, line %u: '%s': %s\n", path,
				        no, s, err);
			rc = k < 0 ? -1 : 0;
		}
	}
	resp_req_free(&q);
	free(line);
	free(buf);
	fclose(f);
	return rc;
}

/* ---- CONFIG REWRITE ---- */

/* v as a value sdssplitargs reads back: bare if it can be, else in
 * double quotes with Redis's escapes (sdscatrepr). */
static void put_value(FILE *f, const char *v)
{
	int bare = *v != 0;
	for (const char *p = v; *p; p++)
		bare &= isgraph((unsigned char)*p) && !strchr("\"'\\", *p);
	if (bare) {
		fputs(v, f);
		return;
	}
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		const char *esc = *p == '\\' ? "\\\\" : *p == '"' ? "\\\""
		                  : *p == '\n' ? "\\n" : *p == '\r' ? "\\r"
		                  : *p == '\t' ? "\\t" : *p == '\a' ? "\\a"
		                  : *p == '\b' ? "\\b" : NULL;
		if (esc)
			fputs(esc, f);
		else if (isprint(*p))
			fputc(*p, f);
		else
			fprintf(f, "\\x%02x", *p);
	}
	fputc('"', f);
}

/* The index in l of the directive line s sets, or -1. */
static long directive_of(const char *s, const struct conf_line *l, size_t n,
                         struct resp_req *q, char **buf, size_t *cap)
{
	if (!*s || *s == '#' || split(s, q, buf, cap) || !q->argc)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!strcasecmp(q->argv[0], l[i].name))
			return (long)i;
	return -1;
}

/* Copy in to out with l's directives set (conf_rewrite). */
static int rewrite_lines(FILE *in, FILE *out, const struct conf_line *l,
                         size_t n, char *done)
{
	char *line = NULL, *buf = NULL, *copy_of = NULL;
	size_t cap = 0, bufcap = 0;
	struct resp_req q;
	int added = 0;
	resp_req_init(&q);
	while (getline(&line, &cap, in) >= 0) {
		free(copy_of);
		if (!(copy_of = strdup(line)))
			break;
		long i = directive_of(trim(copy_of), l, n, &q, &buf, &bufcap);
		if (i < 0) {
			fputs(line, out);
			if (!strchr(line, '\n'))
				fputc('\n', out);
		} else if (!done[i]) {
			fprintf(out, "%s ", l[i].name);
			put_value(out, l[i].value);
			fputc('\n', out);
			done[i] = 1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (done[i] || !strcmp(l[i].value, l[i].dflt))
			continue;
		if (!added++)
			fputs("# Generated by CONFIG REWRITE\n", out);
		fprintf(out, "%s ", l[i].name);
		put_value(out, l[i].value);
		fputc('\n', out);
	}
	resp_req_free(&q);
	free(copy_of);
	free(line);
	free(buf);
	return ferror(in) ? -1 : 0;
}

int conf_rewrite(const char *path, const struct conf_line *l, size_t n,
                 char *err, size_t errlen)
{
	char tmp[PATH_MAX], done[64] = {0};
	FILE *in = NULL, *out = NULL;
	int rc = -1;
	if (n > sizeof(done) ||
	    snprintf(tmp, sizeof(tmp), "%s.rewrite-%ld", path,
	             (long)getpid()) >= (int)sizeof(tmp))
		return why(err, errlen, strerror(ENAMETOOLONG));
	if (!(in = fopen(path, "r")) || !(out = fopen(tmp, "w")))
		goto out;
	if (rewrite_lines(in, out, l, n, done) || fflush(out) ||
	    fsync(fileno(out)))
		goto out;
	rc = 0;
out:
	if (rc)
		why(err, errlen, strerror(errno ? errno : EIO));
	if (in)
		fclose(in);
	if (out && fclose(out) && !rc)
		rc = why(err, errlen, strerror(errno));
	if (!rc && rename(tmp, path))
		rc = why(err, errlen, strerror(errno));
	if (rc && out)
		unlink(tmp);
	return rc;
}
