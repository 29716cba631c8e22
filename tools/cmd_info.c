/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_info.c - `pmtx info FILE [--json] [--all]`: what a region is, as
 * text for people or as one JSON object for scripts.
 *
 * It reports the header (magic, format version and feature masks,
 * layout, UUID, creation time, sizes, superblocks, descriptors, root,
 * default runtime), each descriptor's state as stored, whether the
 * region needs recovery, and the heap's usage by size class.
 *
 * Invariants
 *  1. The file is never written: the header and descriptors are read with
 *     pread, before any recovery, and the heap is read through a private
 *     view (cmd.h rule 2), in which recovery has run.
 *  2. "Needs recovery" means that recovery would change the file: the
 *     stored metadata differs from the recovered view's (cmd_raw.c
 *     invariant 1). A descriptor that is not IDLE is reported as such, but
 *     is not by itself a need (undo leaves COMMITTED behind, U6).
 *  3. The JSON object has the same fields whatever the region holds (every
 *     descriptor, every size class), so scripts need no special cases;
 *     strings are escaped, bytes outside ASCII as \u00XX.
 *  4. The exit status is CMD_PROBLEM when the region cannot be opened or
 *     its heap check fails, after printing whatever could be read.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"

struct info {
	const char *path;
	struct cmd_snapshot file;  /* as stored */
	struct cmd_recovery rec;   /* what recovery would change */
	pmtx_heap_stats heap;
	int heap_rc;
	int all;                   /* text: list IDLE descriptors too */
};

static const struct cmd_usage info_usage = {
	"info", "FILE [--json] [--all]",
	"  --json         print one JSON object\n"
	"  --all          list every descriptor, IDLE ones too (text)\n",
};

enum { OPT_JSON = 256, OPT_ALL };

static const struct option info_opts[] = {
	CMD_OPT_FLAG("json", OPT_JSON),
	CMD_OPT_FLAG("all", OPT_ALL),
	CMD_OPT_END,
};

static void format_time(uint64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (t > (uint64_t)INT32_MAX * 64 || !gmtime_r(&tt, &tm) ||
	    !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		strcpy(out, "?");
}

/* ---- text ---- */

static const char *twin_state_name(uint64_t w)
{
	static const char *const names[] = {"IDLE", "MUTATING", "COPYING"};
	return PMTX_TW_STATE(w) < 3 ? names[PMTX_TW_STATE(w)] : "?";
}

static void text_header(const struct info *in)
{
	const struct pmtx_hdr *h = &in->file.hdr;
	char uuid[37], when[32];
	cmd_format_uuid(h->uuid, uuid);
	format_time(h->create_time, when);
	printf("file             %s\n", in->path);
	printf("magic            0x%016llx (PMTXRGN1)\n",
	       (unsigned long long)h->magic);
	printf("format           %u.%u, features compat 0x%llx incompat "
	       "0x%llx ro-compat 0x%llx\n", h->major, h->minor,
	       (unsigned long long)h->feat_compat,
	       (unsigned long long)h->feat_incompat,
	       (unsigned long long)h->feat_ro_compat);
	printf("layout           \"%s\"\n", h->layout);
	printf("uuid             %s\n", uuid);
	printf("created          %s (%llu)\n", when,
	       (unsigned long long)h->create_time);
}

/* The most bytes the region can grow to: its largest heap's end. */
static uint64_t max_bytes(const struct pmtx_hdr *h)
{
	return h->max_nsb == h->nsb ? h->size
	                            : h->heap_off + h->max_nsb * PMTX_SB_SIZE;
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

static void text_sizes(const struct info *in)
{
	const struct pmtx_hdr *h = &in->file.hdr;
	printf("initial size     %llu\n", (unsigned long long)h->size);
	printf("current size     %llu\n",
	       (unsigned long long)cmd_region_bytes(&in->file));
	printf("maximum size     %llu (%s", (unsigned long long)h->max_size,
	       h->max_size == h->size ? "fixed" : "grows");
	if (max_bytes(h) != h->max_size)
		printf("; its heap ends at %llu",
		       (unsigned long long)max_bytes(h));
	printf(")\n");
	printf("file size        %llu\n",
	       (unsigned long long)in->file.file_size);
	printf("superblocks      %llu in use, at most %llu\n",
	       (unsigned long long)in->file.rstate.nsb,
	       (unsigned long long)h->max_nsb);
	printf("areas            rstate 0x%llx, descriptors 0x%llx, logs "
	       "0x%llx, root 0x%llx, heap metadata 0x%llx, heap 0x%llx\n",
	       (unsigned long long)h->rstate_off,
	       (unsigned long long)h->desc_off,
	       (unsigned long long)h->log0_off,
	       (unsigned long long)h->root_off,
	       (unsigned long long)h->meta_off,
	       (unsigned long long)h->heap_off);
	if (h->twin_off)
		printf("twin             back copy 0x%llx, seal 0x%llx, state %s "
		       "(%llu transactions)\n", (unsigned long long)h->twin_off,
		       (unsigned long long)h->seal_off,
		       twin_state_name(in->file.rstate.twin),
		       (unsigned long long)PMTX_TW_SEQ(in->file.rstate.twin));
	printf("closed           %s\n", in->file.rstate.open
	       ? "not cleanly: the next open first makes what recovery "
	         "reads durable" : "cleanly");
	printf("journal          %s\n", in->file.rstate.journal
	       ? "due: the newest commits are in <file>.pmtxj (journal "
	         "backend)" : "none due");
	printf("descriptors      %u\n", h->ndesc);
	printf("root size        %llu\n", (unsigned long long)h->root_size);
	printf("default runtime  %s\n", cmd_rt_name(h->default_runtime));
}

static void text_descriptors(const struct info *in)
{
	const struct cmd_recovery *rc = &in->rec;
	printf("needs recovery   %s", rc->needed ? "yes" : "no");
	if (rc->needed)
		printf(" (recovery would change %u descriptor%s%s)",
		       rc->changed, plural(rc->changed),
		       rc->meta_changed ? " and the heap metadata" : "");
	printf("\nnot IDLE         %u of %u descriptors\n", rc->not_idle,
	       in->file.hdr.ndesc);
	for (unsigned i = 0; i < in->file.hdr.ndesc; i++) {
		uint64_t sv = in->file.desc[i].statever;
		if (PMTX_SV_STATE(sv) == PMTX_DS_IDLE && !in->all)
			continue;
		printf("  descriptor %-4u %-9s %-10s version %llu\n", i,
		       cmd_state_name(PMTX_SV_STATE(sv)),
		       cmd_rt_name(PMTX_SV_RUNTIME(sv)),
		       (unsigned long long)PMTX_SV_VERSION(sv));
	}
}

static void text_heap(const struct info *in)
{
	const pmtx_heap_stats *st = &in->heap;
	printf("heap check       %s%s\n", in->heap_rc ? "FAILED: " : "ok",
	       in->heap_rc ? st->first_error : "");
	printf("heap             %llu superblocks, %llu free; %llu blocks "
	       "allocated (%llu bytes, %llu of them pmtx's logs), %llu bytes "
	       "free in small superblocks\n",
	       (unsigned long long)st->superblocks,
	       (unsigned long long)st->free_superblocks,
	       (unsigned long long)st->allocated_blocks,
	       (unsigned long long)st->allocated_bytes,
	       (unsigned long long)st->internal_blocks,
	       (unsigned long long)st->free_bytes);
	printf("  %10s %10s %10s %12s\n", "block size", "allocated", "free",
	       "bytes used");
	for (unsigned c = 0; c < st->nclasses; c++)
		if (st->cls[c].allocated || st->cls[c].free)
			printf("  %10u %10llu %10llu %12llu\n",
			       st->cls[c].block_size,
			       (unsigned long long)st->cls[c].allocated,
			       (unsigned long long)st->cls[c].free,
			       (unsigned long long)st->cls[c].allocated *
			               st->cls[c].block_size);
}

/* ---- JSON ---- */

static void json_header(const struct info *in)
{
	const struct pmtx_hdr *h = &in->file.hdr;
	char uuid[37];
	cmd_format_uuid(h->uuid, uuid);
	printf("\"file\": ");
	cmd_json_str(in->path);
	printf(", \"magic\": \"0x%016llx\", \"format\": {",
	       (unsigned long long)h->magic);
	cmd_json_u64("major", h->major, 1);
	cmd_json_u64("minor", h->minor, 1);
	cmd_json_u64("compat", h->feat_compat, 1);
	cmd_json_u64("incompat", h->feat_incompat, 1);
	cmd_json_u64("ro_compat", h->feat_ro_compat, 0);
	printf("}, \"layout\": ");
	cmd_json_str(h->layout);
	printf(", \"uuid\": \"%s\", ", uuid);
	cmd_json_u64("create_time", h->create_time, 1);
	cmd_json_u64("initial_size", h->size, 1);
	cmd_json_u64("size", cmd_region_bytes(&in->file), 1);
	cmd_json_u64("max_size", h->max_size, 1);
	cmd_json_u64("max_region_bytes", max_bytes(h), 1);
	cmd_json_u64("file_size", in->file.file_size, 1);
	cmd_json_u64("superblocks", in->file.rstate.nsb, 1);
	cmd_json_u64("max_superblocks", h->max_nsb, 1);
	cmd_json_u64("ndesc", h->ndesc, 1);
	cmd_json_u64("root_size", h->root_size, 1);
	printf("\"default_runtime\": \"%s\", \"areas\": {",
	       cmd_rt_name(h->default_runtime));
	cmd_json_u64("rstate_off", h->rstate_off, 1);
	cmd_json_u64("desc_off", h->desc_off, 1);
	cmd_json_u64("log0_off", h->log0_off, 1);
	cmd_json_u64("root_off", h->root_off, 1);
	cmd_json_u64("meta_off", h->meta_off, 1);
	cmd_json_u64("heap_off", h->heap_off, 1);
	cmd_json_u64("twin_off", h->twin_off, 1);
	cmd_json_u64("seal_off", h->seal_off, 0);
	printf("}, \"journal_due\": %s, \"closed_cleanly\": %s, ",
	       in->file.rstate.journal ? "true" : "false",
	       in->file.rstate.open ? "false" : "true");
	if (h->twin_off)
		printf("\"twin_state\": \"%s\", ",
		       twin_state_name(in->file.rstate.twin));
}

static void json_descriptors(const struct info *in)
{
	const struct cmd_recovery *rc = &in->rec;
	printf("\"needs_recovery\": %s, \"recovery\": {",
	       rc->needed ? "true" : "false");
	cmd_json_u64("descriptors_not_idle", rc->not_idle, 1);
	cmd_json_u64("descriptors_changed", rc->changed, 1);
	printf("\"heap_metadata_changed\": %s}, \"descriptors\": [",
	       rc->meta_changed ? "true" : "false");
	for (unsigned i = 0; i < in->file.hdr.ndesc; i++) {
		uint64_t sv = in->file.desc[i].statever;
		printf("%s{\"index\": %u, \"state\": \"%s\", \"runtime\": \"%s\", "
		       "\"version\": %llu}", i ? ", " : "", i,
		       cmd_state_name(PMTX_SV_STATE(sv)),
		       cmd_rt_name(PMTX_SV_RUNTIME(sv)),
		       (unsigned long long)PMTX_SV_VERSION(sv));
	}
	printf("], ");
}

static void json_heap(const struct info *in)
{
	const pmtx_heap_stats *st = &in->heap;
	printf("\"heap\": {\"ok\": %s, \"error\": ",
	       in->heap_rc ? "false" : "true");
	cmd_json_str(st->first_error);
	printf(", ");
	cmd_json_u64("superblocks", st->superblocks, 1);
	cmd_json_u64("free_superblocks", st->free_superblocks, 1);
	cmd_json_u64("allocated_blocks", st->allocated_blocks, 1);
	cmd_json_u64("allocated_bytes", st->allocated_bytes, 1);
	cmd_json_u64("internal_blocks", st->internal_blocks, 1);
	cmd_json_u64("free_bytes", st->free_bytes, 1);
	printf("\"classes\": [");
	for (unsigned c = 0; c < st->nclasses; c++)
		printf("%s{\"block_size\": %u, \"allocated\": %llu, \"free\": "
		       "%llu, \"allocated_bytes\": %llu}", c ? ", " : "",
		       st->cls[c].block_size,
		       (unsigned long long)st->cls[c].allocated,
		       (unsigned long long)st->cls[c].free,
		       (unsigned long long)st->cls[c].allocated *
		               st->cls[c].block_size);
	printf("]}");
}

/* ---- the subcommand ---- */

/* Everything info reports, from the view r and the file (invariant 1). */
static int gather(pmtx_region *r, struct info *in)
{
	struct cmd_snapshot view;
	int rc = cmd_snapshot_file(in->path, &in->file);
	if (rc) {
		cmd_report("info", in->path, rc, "reading the metadata");
		return rc;
	}
	if ((rc = cmd_snapshot_view(r, &in->file, &view)) != 0) {
		cmd_report("info", in->path, rc, "reading the private view");
		return rc;
	}
	cmd_recovery_diff(&in->file, &view, &in->rec);
	cmd_snapshot_free(&view);
	in->heap_rc = pmtx_heap_check(r, &in->heap);
	return 0;
}

static int parse_info(int argc, char **argv, struct info *in, int *json)
{
	struct cmd_parser p;
	int c, bad = 0;
	cmd_parser_init(&p, "info", argc, argv, info_opts);
	while ((c = cmd_next_opt(&p)) != -1) {
		*json |= c == OPT_JSON;
		in->all |= c == OPT_ALL;
		bad |= c == '?';
	}
	return cmd_parse_file(&p, &info_usage, bad, &in->path);
}

int cmd_info(int argc, char **argv)
{
	struct info in;
	int json = 0;
	memset(&in, 0, sizeof(in));
	int rc = parse_info(argc, argv, &in, &json);
	if (rc)
		return rc;
	pmtx_region *r;
	if (cmd_open_view("info", in.path, 0, &r))
		return CMD_PROBLEM;
	rc = gather(r, &in);
	pmtx_close(r);
	if (rc)
		return CMD_PROBLEM;
	if (json) {
		putchar('{');
		json_header(&in);
		json_descriptors(&in);
		json_heap(&in);
		printf("}\n");
	} else {
		text_header(&in);
		text_sizes(&in);
		text_descriptors(&in);
		text_heap(&in);
	}
	cmd_snapshot_free(&in.file);
	return in.heap_rc ? CMD_PROBLEM : CMD_OK;
}
