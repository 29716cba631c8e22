/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_check.c - `pmtx check FILE` and `pmtx dump FILE OFFSET [LEN]`: the
 * read-only looks inside a region that go past its header.
 *
 * check runs every validation that opening the region runs (header,
 * geometry, region state, descriptors, logs, the recovery itself, the
 * rebuild of the heap from its bitmaps), then checks that the descriptors'
 * reserved words are zero, then the heap check, all in a private view
 * (cmd.h rule 2). dump prints bytes of the file as stored.
 *
 * Invariants
 *  1. A problem is reported with pmtx_strerror, the status's name and the
 *     library's detail (pmtx_errmsg, or pmtx_heap_stats.first_error for
 *     the heap check, which names the superblock), and exits CMD_PROBLEM.
 *  2. A region that needs recovery is not a problem: check says so, and
 *     that recovery succeeded in the private view; the file is unchanged.
 *  3. dump reads only [OFFSET, OFFSET + LEN) of the region in use, after
 *     the header was validated by open; a range outside it is refused
 *     before anything is read.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

static const struct cmd_usage check_usage = {"check", "FILE", ""};

static void say_recovery(const char *path, const struct cmd_recovery *rc)
{
	if (!rc->needed) {
		printf("recovery         not needed: it would change nothing "
		       "(%u descriptors not IDLE)\n", rc->not_idle);
		return;
	}
	printf("recovery         needed: it changes %u descriptor(s)%s; it "
	       "succeeded in a private view (run `pmtx recover %s`)\n",
	       rc->changed, rc->meta_changed ? " and the heap metadata" : "",
	       path);
}

#define NRESERVED (sizeof(((struct pmtx_desc *)0)->reserved) / 8)

/* Beyond what open validates: a descriptor's reserved words are never
 * written after create, so a nonzero one is damage (layout.h rule 4). */
static int check_reserved(const char *path, const struct cmd_snapshot *s)
{
	for (unsigned i = 0; i < s->hdr.ndesc; i++)
		for (unsigned k = 0; k < NRESERVED; k++) {
			uint64_t v = s->desc[i].reserved[k];
			if (!v)
				continue;
			char detail[128];
			snprintf(detail, sizeof(detail), "descriptor %u: reserved "
			         "word %u is 0x%llx, must be zero", i, k,
			         (unsigned long long)v);
			cmd_report("check", path, PMTX_E_CORRUPT, detail);
			return PMTX_E_CORRUPT;
		}
	return 0;
}

/* The stored metadata against the recovered view (cmd_raw.c). */
static int check_recovery(pmtx_region *r, const char *path)
{
	struct cmd_snapshot file, view;
	struct cmd_recovery rec;
	int rc = cmd_snapshot_file(path, &file);
	if (!rc && (rc = cmd_snapshot_view(r, &file, &view)) != 0)
		cmd_snapshot_free(&file);
	if (rc) {
		cmd_report("check", path, rc, "reading the metadata");
		return rc;
	}
	cmd_recovery_diff(&file, &view, &rec);
	rc = check_reserved(path, &file);
	if (!rc) {
		printf("header           ok: format %u.%u, layout \"%s\", %llu "
		       "bytes, %u descriptors\n", file.hdr.major,
		       file.hdr.minor, file.hdr.layout,
		       (unsigned long long)cmd_region_bytes(&file),
		       file.hdr.ndesc);
		say_recovery(path, &rec);
	}
	cmd_snapshot_free(&file);
	cmd_snapshot_free(&view);
	return rc;
}

static int check_heap(pmtx_region *r, const char *path)
{
	pmtx_heap_stats st;
	int rc = pmtx_heap_check(r, &st);
	if (rc) {
		char detail[200];
		snprintf(detail, sizeof(detail), "heap check: %s",
		         st.first_error);
		cmd_report("check", path, rc, detail);
		return rc;
	}
	printf("heap             ok: %llu superblocks, %llu blocks "
	       "allocated\n", (unsigned long long)st.superblocks,
	       (unsigned long long)st.allocated_blocks);
	return 0;
}

int cmd_check(int argc, char **argv)
{
	const char *path;
	int rc = cmd_parse_file_only(&check_usage, argc, argv, &path);
	if (rc)
		return rc;
	pmtx_region *r;
	if (cmd_open_view("check", path, 0, &r))
		return CMD_PROBLEM;
	rc = check_recovery(r, path);
	if (!rc)
		rc = check_heap(r, path);
	pmtx_close(r);
	if (rc)
		return CMD_PROBLEM;
	printf("%s: ok\n", path);
	return CMD_OK;
}

/* ---- dump ---- */

static const struct cmd_usage dump_usage = {
	"dump", "FILE OFFSET [LEN]",
	"  OFFSET and LEN are bytes (0x for hex; suffixes K, M, G). LEN\n"
	"  defaults to the usable size of the block at OFFSET when OFFSET is\n"
	"  an allocated block, else 64.\n",
};

struct dump_args {
	const char *path;
	uint64_t off, len;
	int have_len;
};

static int parse_dump_words(char **pos, int n, struct dump_args *a)
{
	if (n < 2 || n > 3)
		return CMD_USAGE;
	a->path = pos[0];
	if (cmd_parse_size(pos[1], &a->off)) {
		fprintf(stderr, "pmtx dump: bad offset '%s'\n", pos[1]);
		return CMD_USAGE;
	}
	a->have_len = n == 3;
	if (a->have_len && cmd_parse_size(pos[2], &a->len)) {
		fprintf(stderr, "pmtx dump: bad length '%s'\n", pos[2]);
		return CMD_USAGE;
	}
	return 0;
}

static int parse_dump(int argc, char **argv, struct dump_args *a)
{
	struct cmd_parser p;
	int c, bad = 0, n;
	cmd_parser_init(&p, "dump", argc, argv, cmd_help_opts);
	while ((c = cmd_next_opt(&p)) != -1)
		bad |= c == '?';
	char **pos = cmd_positional(&p, &n);
	if (!bad && !p.help)
		bad = parse_dump_words(pos, n, a);
	int help = p.help;
	cmd_parser_free(&p);
	if (help) {
		cmd_usage(&dump_usage, 1);
		return CMD_HELP_DONE;
	}
	return bad ? cmd_usage(&dump_usage, 0) : CMD_OK;
}

/* hexdump -C style: offset, 16 bytes in hex, the printable ones. */
static void dump_line(uint64_t off, const unsigned char *b, size_t n)
{
	printf("%012llx ", (unsigned long long)off);
	for (size_t i = 0; i < 16; i++) {
		if (i == 8)
			putchar(' ');
		if (i < n)
			printf(" %02x", b[i]);
		else
			printf("   ");
	}
	printf("  |");
	for (size_t i = 0; i < n; i++)
		putchar(b[i] >= 0x20 && b[i] < 0x7f ? b[i] : '.');
	printf("|\n");
}

static int dump_bytes(const char *path, uint64_t off, uint64_t len)
{
	unsigned char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int rc = 0;
	while (len && !rc) {
		size_t want = len < sizeof(buf) ? (size_t)len : sizeof(buf);
		ssize_t got = pread(fd, buf, want, (off_t)off);
		if (got <= 0) {
			rc = got < 0 ? errno : PMTX_E_TRUNCATED;
			break;
		}
		for (size_t i = 0; i < (size_t)got; i += 16)
			dump_line(off + i, buf + i,
			          (size_t)got - i < 16 ? (size_t)got - i : 16);
		off += (uint64_t)got, len -= (uint64_t)got;
	}
	close(fd);
	return rc;
}

/* The default length, or the refusal of a range outside the region
 * (invariant 3). */
static int dump_range(pmtx_region *r, struct dump_args *a)
{
	uint64_t size = pmtx_region_size(r);
	char why[128];
	if (a->off >= size) {
		snprintf(why, sizeof(why), "offset %llu (0x%llx) is outside "
		         "the region (%llu bytes)", (unsigned long long)a->off,
		         (unsigned long long)a->off, (unsigned long long)size);
		cmd_report("dump", a->path, PMTX_E_RANGE, why);
		return PMTX_E_RANGE;
	}
	if (!a->have_len) {
		a->len = pmtx_usable_size(r, a->off);
		a->len = a->len ? a->len : 64;
		a->len = a->len < size - a->off ? a->len : size - a->off;
	}
	if (a->len > size - a->off) {
		snprintf(why, sizeof(why), "%llu bytes at offset %llu end past "
		         "the region (%llu bytes)", (unsigned long long)a->len,
		         (unsigned long long)a->off, (unsigned long long)size);
		cmd_report("dump", a->path, PMTX_E_RANGE, why);
		return PMTX_E_RANGE;
	}
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	struct dump_args a;
	memset(&a, 0, sizeof(a));
	int rc = parse_dump(argc, argv, &a);
	if (rc)
		return rc;
	pmtx_region *r;
	if (cmd_open_view("dump", a.path, 0, &r))
		return CMD_PROBLEM;
	/* The view stays open while the file is read: its shared lock keeps
	 * writers out. */
	rc = dump_range(r, &a);
	if (!rc && (rc = dump_bytes(a.path, a.off, a.len)) != 0)
		cmd_report("dump", a.path, rc, "reading the file");
	pmtx_close(r);
	return rc ? CMD_PROBLEM : CMD_OK;
}
