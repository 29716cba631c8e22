/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd.h - what the files of the pmtx command share: the subcommands'
 * entry points, option parsing, messages, and the raw (pread) view of a
 * region file next to its private, recovered view.
 *
 * Rules
 *  1. Exit status: CMD_OK (0) fine, CMD_PROBLEM (1) the region (or the
 *     operation on it) has a problem, CMD_USAGE (2) the command line is
 *     wrong. --help prints the usage on stdout and exits 0; a usage error
 *     prints it on stderr.
 *  2. Only create and recover open a region for writing. Every other
 *     subcommand reads the file with pread and through a private view
 *     (PMTX_OPEN_PRIVATE), so it never writes the file, whatever recovery
 *     would do.
 *  3. Bytes read from a file are used only after the library's open has
 *     validated the header they come from (or after a bounds check of
 *     their own): a corrupt file gives a message and CMD_PROBLEM, never a
 *     crash.
 */
#ifndef PMTX_CMD_H
#define PMTX_CMD_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "pmtx.h"
#include "region/layout.h"

enum { CMD_OK = 0, CMD_PROBLEM = 1, CMD_USAGE = 2 };
/* Returned by the parsers once --help is printed, and passed on by the
 * subcommands: main exits with CMD_OK. */
enum { CMD_HELP_DONE = -1 };

/* Subcommands: argc/argv hold the words after the subcommand's name; each
 * returns an exit status or CMD_HELP_DONE. */
int cmd_create(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_trace_dump(int argc, char **argv);
int cmd_trace_analyze(int argc, char **argv);
int cmd_trace_hops(int argc, char **argv);

/* ---- command line (cmd_util.c) ---- */

/* A subcommand's usage text: its synopsis line and option lines. */
struct cmd_usage {
	const char *name;     /* "create" */
	const char *synopsis; /* "FILE --size N [...]" */
	const char *options;  /* one option per line, or "" */
};

/* Print the usage on stdout (--help, returns CMD_OK) or stderr (returns
 * CMD_USAGE). */
int cmd_usage(const struct cmd_usage *u, int help);

/* getopt_long over a subcommand's words. Options are long only, plus
 * -h; "--help" sets *help. Returns the option's val, -1 at the end, or
 * '?' on an unknown option or a missing value (getopt said why). The
 * positional arguments are left in argv[*first .. argc). */
struct cmd_parser {
	int argc;
	char **argv;        /* argv[0] is the subcommand's name */
	const struct option *opts;
	int help;
};
void cmd_parser_init(struct cmd_parser *p, const char *name, int argc,
                     char **argv, const struct option *opts);
int cmd_next_opt(struct cmd_parser *p);
/* The positional arguments once cmd_next_opt returned -1. */
char **cmd_positional(struct cmd_parser *p, int *n);
void cmd_parser_free(struct cmd_parser *p);

/* Entries of a subcommand's option table: an option with a value, one
 * without, and the table's end (--help, then the terminator). */
#define CMD_OPT_ARG(name, val) {name, required_argument, NULL, val}
#define CMD_OPT_FLAG(name, val) {name, no_argument, NULL, val}
#define CMD_OPT_END {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}
/* The table of a subcommand whose only option is --help. */
extern const struct option cmd_help_opts[];

/* The one FILE argument of a subcommand whose only option is --help.
 * Returns CMD_OK with *path set, CMD_HELP_DONE, or CMD_USAGE. */
int cmd_parse_file_only(const struct cmd_usage *u, int argc, char **argv,
                        const char **path);

/* The end of the parse of a subcommand that takes one FILE, once
 * cmd_next_opt returned -1; bad: an option was wrong (already said). p
 * is freed. --help prints the usage on stdout and returns CMD_HELP_DONE;
 * bad, or not one file, prints it on stderr and returns CMD_USAGE;
 * CMD_OK: *path is the file. */
int cmd_parse_file(struct cmd_parser *p, const struct cmd_usage *u, int bad,
                   const char **path);

/* The end of the parse of a subcommand that takes FILE... (one or more),
 * once cmd_next_opt returned -1; bad: an option was wrong (already
 * said). --help prints the usage and then about on stdout and returns
 * CMD_HELP_DONE; bad or no file prints the usage on stderr and returns
 * CMD_USAGE; both free p. CMD_OK: *files (*n of them) are in p's copy of
 * argv, for the caller to free with cmd_parser_free once done. */
int cmd_parse_files(struct cmd_parser *p, const struct cmd_usage *u,
                    const char *about, int bad, char ***files, int *n);

/* "4096", "64K", "8M", "1G", "2T" (binary multiples), "0x1000". */
int cmd_parse_size(const char *s, uint64_t *out);

/* "pmtx NAME: FILE: <strerror>[ (PMTX_E_X)][: <detail>]" on stderr. */
void cmd_report(const char *name, const char *path, int status,
                const char *detail);
/* The symbolic name of a status ("PMTX_E_TRUNCATED"), or NULL. */
const char *cmd_status_name(int status);

/* JSON on stdout: a string, quoted and escaped; "key": v[, ]. */
void cmd_json_str(const char *s);
void cmd_json_u64(const char *key, uint64_t v, int comma);
/* "key": v[, ] with v printed %.6g. */
void cmd_json_dbl(const char *key, double v, int comma);
/* The opening of a file's JSON object: {"file": "path", */
void cmd_json_file(const char *path);

/* ---- the region file (cmd_raw.c) ---- */

/* What the file holds before recovery (pread), or what the private view
 * holds after it: the header, region state, descriptors and the heap
 * metadata of the superblocks in use. */
struct cmd_snapshot {
	struct pmtx_hdr hdr;
	struct pmtx_rstate rstate;
	uint64_t file_size;
	struct pmtx_desc *desc;  /* hdr.ndesc entries */
	unsigned char *meta;     /* meta_bytes bytes from hdr.meta_off */
	uint64_t meta_bytes;
};

/* Open a private, copy-on-write view (recovery runs in it only); a
 * failure is reported for subcommand name. */
int cmd_open_view(const char *name, const char *path, unsigned flags,
                  pmtx_region **out);
/* Read path's metadata with pread. Call after cmd_open_view succeeded,
 * which validated the header (rule 3); bounds are checked again here. */
int cmd_snapshot_file(const char *path, struct cmd_snapshot *s);
/* The same areas as the view r sees them (after its recovery). */
int cmd_snapshot_view(pmtx_region *r, const struct cmd_snapshot *file,
                      struct cmd_snapshot *s);
void cmd_snapshot_free(struct cmd_snapshot *s);

/* What recovery changes (or changed) between two snapshots. */
struct cmd_recovery {
	unsigned not_idle;      /* descriptors not IDLE in the first */
	unsigned changed;       /* descriptors whose statever changed */
	int meta_changed;       /* heap metadata changed */
	int needed;             /* anything changed */
};
void cmd_recovery_diff(const struct cmd_snapshot *before,
                       const struct cmd_snapshot *after,
                       struct cmd_recovery *out);

/* Names of persisted values, "?" when out of range. */
const char *cmd_state_name(unsigned state);
const char *cmd_rt_name(unsigned rt);
/* Bytes of the region in use (the file may be longer after a growth). */
uint64_t cmd_region_bytes(const struct cmd_snapshot *s);
void cmd_format_uuid(const uint8_t uuid[16], char out[37]);

#endif
