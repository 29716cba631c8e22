/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_util.c - the command line of the pmtx subcommands: usage texts,
 * getopt_long over a subcommand's words, sizes with suffixes, and error
 * messages (cmd.h rule 1).
 *
 * Invariants
 *  1. Every subcommand parses with getopt_long over a private copy of its
 *     words (argv[0] = "pmtx NAME", so getopt's own messages name the
 *     subcommand); the caller's argv is never permuted.
 *  2. A size is a whole number of bytes that fits in 64 bits: a suffix
 *     that would overflow, a sign, or trailing garbage is a usage error,
 *     never a silent wrap.
 *  3. An error message names the file, says what pmtx_strerror says, the
 *     status's symbolic name, and the library's detail (pmtx_errmsg) when
 *     there is one, on one line.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

int cmd_usage(const struct cmd_usage *u, int help)
{
	FILE *f = help ? stdout : stderr;
	fprintf(f, "usage: pmtx %s %s\n", u->name, u->synopsis);
	if (u->options[0])
		fprintf(f, "\noptions:\n%s", u->options);
	fprintf(f, "  --help         print this help\n"
	           "\nexit status: 0 fine, 1 the region has a problem, "
	           "2 usage error\n");
	return help ? CMD_OK : CMD_USAGE;
}

void cmd_parser_init(struct cmd_parser *p, const char *name, int argc,
                     char **argv, const struct option *opts)
{
	static char prog[64];
	snprintf(prog, sizeof(prog), "pmtx %s", name);
	p->argc = argc + 1;
	p->argv = calloc((size_t)argc + 2, sizeof(char *));
	p->opts = opts;
	p->help = 0;
	if (!p->argv) {
		p->argc = 0;
		return;
	}
	p->argv[0] = prog;
	memcpy(p->argv + 1, argv, (size_t)argc * sizeof(char *));
	optind = 0; /* 0: getopt re-initialises itself for a new vector */
}

int cmd_next_opt(struct cmd_parser *p)
{
	if (p->argc == 0)
		return '?';
	int c = getopt_long(p->argc, p->argv, "h", p->opts, NULL);
	if (c == 'h') {
		p->help = 1;
		return cmd_next_opt(p);
	}
	return c;
}

char **cmd_positional(struct cmd_parser *p, int *n)
{
	*n = p->argc - optind;
	return p->argv + optind;
}

void cmd_parser_free(struct cmd_parser *p)
{
	free(p->argv);
	p->argv = NULL;
}

const struct option cmd_help_opts[] = {CMD_OPT_END};

int cmd_parse_file_only(const struct cmd_usage *u, int argc, char **argv,
                        const char **path)
{
	struct cmd_parser p;
	int c, bad = 0;
	cmd_parser_init(&p, u->name, argc, argv, cmd_help_opts);
	while ((c = cmd_next_opt(&p)) != -1)
		bad |= c == '?';
	return cmd_parse_file(&p, u, bad, path);
}

int cmd_parse_file(struct cmd_parser *p, const struct cmd_usage *u, int bad,
                   const char **path)
{
	int n;
	char **pos = cmd_positional(p, &n);
	*path = n == 1 ? pos[0] : NULL;
	int help = p->help;
	cmd_parser_free(p);
	if (help) {
		cmd_usage(u, 1);
		return CMD_HELP_DONE;
	}
	return bad || !*path ? cmd_usage(u, 0) : CMD_OK;
}

int cmd_parse_files(struct cmd_parser *p, const struct cmd_usage *u,
                    const char *about, int bad, char ***files, int *n)
{
	*files = cmd_positional(p, n);
	int help = p->help;
	if (help || bad || *n == 0)
		cmd_parser_free(p);
	if (help) {
		cmd_usage(u, 1);
		fputs(about, stdout);
		return CMD_HELP_DONE;
	}
	return bad || *n == 0 ? cmd_usage(u, 0) : CMD_OK;
}

static int suffix_shift(const char *s, unsigned *shift)
{
	static const char units[] = "KMGT";
	if (*s == 0) {
		*shift = 0;
		return 0;
	}
	const char *u = strchr(units, toupper((unsigned char)*s));
	if (!u || !*u)
		return PMTX_E_INVAL;
	*shift = 10u * (unsigned)(u - units + 1);
	s++;
	if (*s == 'i' && s[1] == 'B')
		s += 2;
	else if (*s == 'B')
		s++;
	return *s ? PMTX_E_INVAL : 0;
}

int cmd_parse_size(const char *s, uint64_t *out)
{
	if (!s || !isdigit((unsigned char)s[0]))
		return PMTX_E_INVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	unsigned shift;
	if (errno || suffix_shift(end, &shift))
		return PMTX_E_INVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return PMTX_E_INVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

const char *cmd_status_name(int status)
{
	static const char *const names[] = {
		"PMTX_E_INVAL", "PMTX_E_TOO_SMALL", "PMTX_E_BAD_MAGIC",
		"PMTX_E_BAD_VERSION", "PMTX_E_BAD_LAYOUT",
		"PMTX_E_BAD_CHECKSUM", "PMTX_E_LOCKED", "PMTX_E_NO_SPACE",
		"PMTX_E_CORRUPT", "PMTX_E_NOMEM", "PMTX_E_NO_TX",
		"PMTX_E_ABORTED", "PMTX_E_TX_STATE", "PMTX_E_BUSY",
		"PMTX_E_RANGE", "PMTX_E_UNSUPPORTED", "PMTX_E_IO",
		"PMTX_E_TRUNCATED", "PMTX_E_NOT_FOUND", "PMTX_E_EXISTS",
		"PMTX_E_TOO_BIG", "PMTX_E_NOT_CONTAINER",
	};
	_Static_assert(sizeof(names) / sizeof(names[0]) ==
	               PMTX_E_LAST - PMTX_E_FIRST, "a name for every status");
	if (status >= PMTX_E_FIRST && status < PMTX_E_LAST)
		return names[status - PMTX_E_FIRST];
	return NULL;
}

void cmd_report(const char *name, const char *path, int status,
                const char *detail)
{
	const char *sym = cmd_status_name(status);
	fprintf(stderr, "pmtx %s: %s: %s", name, path, pmtx_strerror(status));
	if (sym)
		fprintf(stderr, " (%s)", sym);
	if (detail && detail[0])
		fprintf(stderr, ": %s", detail);
	fputc('\n', stderr);
}

void cmd_json_str(const char *s)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

void cmd_json_u64(const char *key, uint64_t v, int comma)
{
	printf("\"%s\": %llu%s", key, (unsigned long long)v, comma ? ", " : "");
}

void cmd_json_dbl(const char *key, double v, int comma)
{
	printf("\"%s\": %.6g%s", key, v, comma ? ", " : "");
}

void cmd_json_file(const char *path)
{
	printf("{\"file\": ");
	cmd_json_str(path);
	printf(", ");
}
