/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_create.c - `pmtx create` and `pmtx recover`: the two subcommands
 * that write a region file (cmd.h rule 2).
 *
 *   pmtx create FILE --size N [--max-size N] [--layout NAME]
 *               [--runtime undo|redo|redo-async|cow|auto|twin]
 *               [--root-size N]
 *               [--ndesc N] [--fast-restart]
 *   pmtx recover FILE [--forget-journal]
 *
 * Invariants
 *  1. create only ever makes a new file (pmtx_create: O_EXCL); an
 *     argument the library refuses (PMTX_E_INVAL, PMTX_E_TOO_SMALL) is a
 *     usage error, anything else (the file exists, no space) a problem.
 *  2. recover opens the region with the file backend, so that every
 *     barrier of its recovery is an msync: the repaired region is on
 *     storage when the command exits, whatever the file system. What it
 *     reports is what changed in the file, read back with pread after the
 *     region is closed (cmd_raw.c), not what it meant to do.
 *  3. A region with a journal beside it (the journal backend's
 *     "<FILE>.pmtxj") is recovered by the same open, which applies the
 *     journal first; the file as stored before that open is not the
 *     state recovery starts from, so no descriptor comparison is printed
 *     for it. --forget-journal passes PMTX_OPEN_FORGET_JOURNAL to both
 *     opens: a region whose journal is due and missing is taken as of
 *     its last checkpoint.
 */
#include <getopt.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static const struct cmd_usage create_usage = {
	"create",
	"FILE --size N [--max-size N] [--layout NAME]\n"
	"            [--runtime undo|redo|redo-async|cow|auto|twin] [--root-size N] "
	"[--ndesc N]\n            [--fast-restart]",
	"  --size N       bytes of the region when created (suffixes K, M, "
	"G, T)\n"
	"  --max-size N   let the heap grow on demand up to N bytes "
	"(default: fixed)\n"
	"  --layout NAME  layout name, checked when a program opens the "
	"region\n"
	"  --runtime R    default transaction runtime (default undo)\n"
	"  --root-size N  bytes of the root object (default 0)\n"
	"  --ndesc N      transaction descriptors (default 64)\n"
	"  --fast-restart twin: a MUTATING barrier in every transaction, and "
	"after a\n"
	"                 crash at rest, recovery copies the last commit's "
	"lines only\n"
	"                 instead of a pass over the heap in use "
	"(PMTX_CREATE_TWIN_FAST_RESTART)\n",
};

enum {
	OPT_SIZE = 256,
	OPT_MAX,
	OPT_LAYOUT,
	OPT_RUNTIME,
	OPT_ROOT,
	OPT_NDESC,
	OPT_FAST_RESTART
};

static const struct option create_opts[] = {
	CMD_OPT_ARG("size", OPT_SIZE),
	CMD_OPT_ARG("max-size", OPT_MAX),
	CMD_OPT_ARG("layout", OPT_LAYOUT),
	CMD_OPT_ARG("runtime", OPT_RUNTIME),
	CMD_OPT_ARG("root-size", OPT_ROOT),
	CMD_OPT_ARG("ndesc", OPT_NDESC),
	CMD_OPT_FLAG("fast-restart", OPT_FAST_RESTART),
	CMD_OPT_END,
};

struct create_args {
	uint64_t size;
	int have_size;
	pmtx_options o;
};

static int bad_value(const char *opt, const char *v)
{
	fprintf(stderr, "pmtx create: bad value for --%s: '%s'\n", opt, v);
	return CMD_USAGE;
}

static int parse_count(const char *v, unsigned *out)
{
	uint64_t n;
	if (cmd_parse_size(v, &n) || n == 0 || n > 0xffffffffu)
		return PMTX_E_INVAL;
	*out = (unsigned)n;
	return 0;
}

/* The value v of option name, a size, into *out. */
static int size_option(const char *name, const char *v, size_t *out)
{
	uint64_t n;
	if (cmd_parse_size(v, &n))
		return bad_value(name, v);
	*out = (size_t)n;
	return 0;
}

static int set_option(struct create_args *a, int c, const char *v)
{
	switch (c) {
	case OPT_SIZE:
		a->have_size = 1;
		return cmd_parse_size(v, &a->size) ? bad_value("size", v) : 0;
	case OPT_MAX:
		return size_option("max-size", v, &a->o.max_size);
	case OPT_LAYOUT:
		a->o.layout = v;
		return strlen(v) > PMTX_LAYOUT_MAX ? bad_value("layout", v) : 0;
	case OPT_RUNTIME:
		if (pmtx_runtime_parse(v, &a->o.runtime) ||
		    a->o.runtime == PMTX_RT_DEFAULT)
			return bad_value("runtime", v);
		return 0;
	case OPT_ROOT:
		return size_option("root-size", v, &a->o.root_size);
	case OPT_NDESC:
		return parse_count(v, &a->o.ndesc) ? bad_value("ndesc", v) : 0;
	case OPT_FAST_RESTART:
		a->o.flags |= PMTX_CREATE_TWIN_FAST_RESTART;
		return 0;
	}
	return CMD_USAGE;
}

/* Options into *a and the file name into *path; CMD_OK to go on, or the
 * exit status (help printed, or a usage error). */
static int parse_create(int argc, char **argv, struct create_args *a,
                        const char **path)
{
	struct cmd_parser p;
	int c, rc = 0;
	memset(a, 0, sizeof(*a));
	pmtx_options_init(&a->o);
	cmd_parser_init(&p, "create", argc, argv, create_opts);
	while (!rc && (c = cmd_next_opt(&p)) != -1)
		rc = c == '?' ? CMD_USAGE : set_option(a, c, optarg);
	if ((rc = cmd_parse_file(&p, &create_usage, rc != 0, path)))
		return rc;
	const char *bad = NULL;
	if (a->o.max_size && a->o.max_size < a->size)
		bad = "--max-size is smaller than --size";
	else if (!a->have_size)
		bad = "--size is required";
	if (bad) {
		fprintf(stderr, "pmtx create: %s\n", bad);
		return cmd_usage(&create_usage, 0);
	}
	return CMD_OK;
}

static void print_created(const char *path, pmtx_region *r,
                          const pmtx_options *o)
{
	size_t root = 0, size = pmtx_region_size(r);
	size_t max = pmtx_region_max_size(r);
	pmtx_root(r, &root);
	printf("created %s: %zu bytes", path, size);
	if (max > size)
		printf(" (grows to at most %zu)", max);
	printf(", layout \"%s\", runtime %s, root %zu bytes, %u descriptors\n",
	       o->layout ? o->layout : "",
	       pmtx_runtime_name(pmtx_region_runtime(r)), root, o->ndesc);
}

int cmd_create(int argc, char **argv)
{
	struct create_args a;
	const char *path;
	int rc = parse_create(argc, argv, &a, &path);
	if (rc)
		return rc;
	pmtx_region *r;
	rc = pmtx_create(path, (size_t)a.size, &a.o, &r);
	if (rc) {
		cmd_report("create", path, rc, pmtx_errmsg());
		return rc == PMTX_E_INVAL || rc == PMTX_E_TOO_SMALL ? CMD_USAGE
		                                                     : CMD_PROBLEM;
	}
	print_created(path, r, &a.o);
	rc = pmtx_close(r);
	if (rc) {
		cmd_report("create", path, rc, pmtx_errmsg());
		return CMD_PROBLEM;
	}
	return CMD_OK;
}

/* ---- recover ---- */

static const struct cmd_usage recover_usage = {
	"recover", "FILE [--forget-journal]",
	"  --forget-journal  a region whose journal (FILE.pmtxj) is due and "
	"missing:\n"
	"                    take it as of its last checkpoint, without the "
	"commits\n"
	"                    that were only in the journal\n",
};

static const struct option recover_opts[] = {
	CMD_OPT_FLAG("forget-journal", 'f'),
	CMD_OPT_END,
};

static void print_recovered(const char *path, const struct cmd_snapshot *b,
                            const struct cmd_snapshot *a)
{
	struct cmd_recovery d;
	cmd_recovery_diff(b, a, &d);
	printf("%s: %u of %u descriptors were not IDLE before recovery\n",
	       path, d.not_idle, b->hdr.ndesc);
	for (unsigned i = 0; i < b->hdr.ndesc; i++) {
		uint64_t x = b->desc[i].statever, y = a->desc[i].statever;
		if (x == y)
			continue;
		printf("  descriptor %u: %s %s version %llu -> %s\n", i,
		       cmd_state_name(PMTX_SV_STATE(x)),
		       cmd_rt_name(PMTX_SV_RUNTIME(x)),
		       (unsigned long long)PMTX_SV_VERSION(x),
		       cmd_state_name(PMTX_SV_STATE(y)));
	}
	if (d.meta_changed)
		printf("  heap metadata repaired\n");
	printf(d.needed ? "recovered: %u descriptor(s) rolled back or forward\n"
	                : "nothing to recover: recovery changed nothing\n",
	       d.changed);
}

/* Open (which recovers) with the file backend, and close (invariant 2). */
static int recover_in_place(const char *path, unsigned flags)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.backend = PMTX_BACKEND_FILE;
	o.truncation = PMTX_TRUNC_LAZY;
	o.flags = flags;
	pmtx_region *r;
	int rc = pmtx_open(path, &o, &r);
	if (!rc && (rc = pmtx_close(r)) != 0)
		cmd_report("recover", path, rc, "closing the region");
	else if (rc)
		cmd_report("recover", path, rc, pmtx_errmsg());
	return rc;
}

/* The file as stored, read once the library has validated its header. */
static int snapshot_validated(const char *name, const char *path,
                              unsigned flags, struct cmd_snapshot *s)
{
	pmtx_region *v;
	int rc = cmd_open_view(name, path, flags, &v);
	if (rc)
		return rc;
	rc = cmd_snapshot_file(path, s);
	pmtx_close(v);
	if (rc)
		cmd_report(name, path, rc, "reading the metadata");
	return rc;
}

/* FILE and its flags: CMD_OK, CMD_HELP_DONE or CMD_USAGE. */
static int recover_args(int argc, char **argv, const char **path,
                        unsigned *flags)
{
	struct cmd_parser p;
	int c, bad = 0;
	cmd_parser_init(&p, recover_usage.name, argc, argv, recover_opts);
	while ((c = cmd_next_opt(&p)) != -1) {
		bad |= c == '?';
		if (c == 'f')
			*flags |= PMTX_OPEN_FORGET_JOURNAL;
	}
	return cmd_parse_file(&p, &recover_usage, bad, path);
}

/* Invariant 3: a journal beside the region, applied by the open. */
static int recover_journal(const char *path, unsigned flags)
{
	int rc = recover_in_place(path, flags);
	if (!rc)
		printf("%s: journal %s.pmtxj applied to the region and removed; "
		       "recovered\n", path, path);
	return rc ? CMD_PROBLEM : CMD_OK;
}

int cmd_recover(int argc, char **argv)
{
	const char *path;
	unsigned flags = 0;
	int rc = recover_args(argc, argv, &path, &flags);
	if (rc)
		return rc;
	char jpath[4200];
	snprintf(jpath, sizeof(jpath), "%s.pmtxj", path);
	if (access(jpath, F_OK) == 0)
		return recover_journal(path, flags);
	struct cmd_snapshot before, after;
	if (snapshot_validated("recover", path, flags, &before))
		return CMD_PROBLEM;
	rc = recover_in_place(path, flags);
	if (!rc && (rc = cmd_snapshot_file(path, &after)) != 0)
		cmd_report("recover", path, rc, "reading the metadata");
	if (!rc) {
		print_recovered(path, &before, &after);
		cmd_snapshot_free(&after);
	}
	cmd_snapshot_free(&before);
	return rc ? CMD_PROBLEM : CMD_OK;
}
