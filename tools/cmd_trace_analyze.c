/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_trace_analyze.c - `pmtx trace analyze FILE... [--json]
 * [--window-us N]`: WHISPER's epoch analysis of persistence traces
 * (trace_analyze.c), a text summary or one JSON object a line per file.
 *
 * Invariants
 *  1. Each file is analyzed on its own. A file that cannot be read whole
 *     (not a trace, another major version, truncated, corrupt) gets a
 *     message on stderr and no summary; the others are still analyzed,
 *     and the exit status is then CMD_PROBLEM.
 *  2. A share whose denominator is zero is printed as 0 (JSON: 0.0), so
 *     every JSON object has the same keys whatever the trace holds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "trace_analyze.h"

static const struct cmd_usage analyze_usage = {
	"trace analyze", "FILE... [--json] [--window-us N]",
	"  --json         print one JSON object a line per file\n"
	"  --window-us N  dependency window in microseconds (default 50)\n",
};

static const char analyze_about[] =
	"\nWHISPER's epoch metrics, per trace: epochs (stores of a thread up\n"
	"to its next barrier or the end of its transaction) and their sizes in\n"
	"64-byte lines, singleton epochs and the small ones (< 10 bytes),\n"
	"epochs per committed transaction (median, p95), epochs with a self\n"
	"or cross dependency (same line, within the window), non-temporal\n"
	"share of stored bytes, flushed lines per epoch, redundant flushes,\n"
	"lines flushed on each transaction's critical path (mean, p95),\n"
	"stored bytes by kind and write amplification (metadata bytes per\n"
	"data byte), and barriers by kind (ordering only, or durability).\n"
	"Definitions: man pmtx-trace-analyze.\n";

enum { OPT_JSON = 256, OPT_WINDOW };

static const struct option analyze_opts[] = {
	CMD_OPT_FLAG("json", OPT_JSON),
	CMD_OPT_ARG("window-us", OPT_WINDOW),
	CMD_OPT_END,
};

/* The buckets of the histograms: 0, 1, 2, 3-4, 5-8, ... powers of two. */
#define NBUCKETS 13

static void bucket(unsigned i, uint64_t *lo, uint64_t *hi)
{
	*lo = i < 2 ? i : (1ull << (i - 2)) + 1;
	*hi = i < 2 ? i : i == NBUCKETS - 1 ? UINT64_MAX : 1ull << (i - 1);
}

static double share(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

/* Bytes of every kind but data per data byte (trace_analyze.c 11). */
static double write_amplification(const struct ta_result *r)
{
	uint64_t meta = 0;
	for (unsigned k = 0; k < PMTX_TSK_COUNT; k++)
		meta += k == PMTX_TSK_DATA ? 0 : r->kind_bytes[k];
	return share(meta, r->kind_bytes[PMTX_TSK_DATA]);
}

static double per_second(const struct ta_result *r)
{
	uint64_t span = r->last_ns - r->first_ns;
	return span ? (double)r->epochs * 1e9 / (double)span : 0.0;
}

/* ---- text ---- */

static void text_hist(const char *name, const struct ta_dist *d)
{
	printf("%-17s", name);
	for (unsigned i = 0; i < NBUCKETS; i++) {
		uint64_t lo, hi, c;
		bucket(i, &lo, &hi);
		if ((c = ta_dist_count(d, lo, hi)) == 0)
			continue;
		if (lo == hi)
			printf(" %llu:%llu", (unsigned long long)lo,
			       (unsigned long long)c);
		else if (hi == UINT64_MAX)
			printf(" %llu+:%llu", (unsigned long long)lo,
			       (unsigned long long)c);
		else
			printf(" %llu-%llu:%llu", (unsigned long long)lo,
			       (unsigned long long)hi, (unsigned long long)c);
	}
	putchar('\n');
}

static void text_epochs(struct ta_result *r)
{
	printf("epochs            %llu (%llu outside transactions), "
	       "%.1f per second\n", (unsigned long long)r->epochs,
	       (unsigned long long)r->epochs_outside, per_second(r));
	text_hist("lines per epoch", &r->epoch_lines);
	printf("singletons        %.1f%% of epochs; %.1f%% of them write "
	       "fewer than 10 bytes\n",
	       100 * share(r->singletons, r->epochs),
	       100 * share(r->singletons_small, r->singletons));
	printf("epochs per tx     median %llu, p95 %llu, mean %.2f\n",
	       (unsigned long long)ta_dist_percentile(&r->tx_epochs, 50),
	       (unsigned long long)ta_dist_percentile(&r->tx_epochs, 95),
	       ta_dist_mean(&r->tx_epochs));
	text_hist("  histogram", &r->tx_epochs);
}

static void text_summary(const char *path, struct ta_result *r,
                         uint64_t window_us)
{
	printf("trace             %s\n", path);
	printf("records           %llu, %llu threads, %.6f s\n",
	       (unsigned long long)r->records, (unsigned long long)r->threads,
	       (double)(r->last_ns - r->first_ns) / 1e9);
	printf("transactions      %llu committed, %llu aborted, "
	       "%llu unfinished\n", (unsigned long long)r->tx_committed,
	       (unsigned long long)r->tx_aborted,
	       (unsigned long long)r->tx_unfinished);
	text_epochs(r);
	printf("dependencies      self %.1f%%, cross %.1f%% of epochs "
	       "(window %llu us)\n", 100 * share(r->self_dep, r->epochs),
	       100 * share(r->cross_dep, r->epochs),
	       (unsigned long long)window_us);
	printf("stored            %llu bytes, %.1f%% non-temporal\n",
	       (unsigned long long)(r->store_bytes + r->nt_bytes),
	       100 * share(r->nt_bytes, r->store_bytes + r->nt_bytes));
	printf("by kind          ");
	for (unsigned k = 0; k < PMTX_TSK_COUNT; k++)
		if (r->kind_bytes[k])
			printf(" %s %llu", pmtx_trace_store_kind_name(k),
			       (unsigned long long)r->kind_bytes[k]);
	printf("\nwrite ampl.       %.2f metadata bytes per data byte\n",
	       write_amplification(r));
	printf("barriers          %llu (%llu with no store before them): "
	       "%llu order, %llu durable, %llu unknown\n",
	       (unsigned long long)r->barriers,
	       (unsigned long long)r->empty_barriers,
	       (unsigned long long)r->barrier_kinds[PMTX_TBK_ORDER],
	       (unsigned long long)r->barrier_kinds[PMTX_TBK_DURABLE],
	       (unsigned long long)r->barrier_kinds[PMTX_TBK_UNKNOWN]);
	printf("flushes           %llu lines, %.2f per epoch; %llu redundant "
	       "(%.1f%%)\n", (unsigned long long)r->flushed_lines,
	       share(r->flushed_lines, r->epochs),
	       (unsigned long long)r->redundant_lines,
	       100 * share(r->redundant_lines, r->flushed_lines));
	if (r->pruned_lines)
		printf("line map          %llu entries dropped to bound "
		       "memory: redundant flushes are a lower bound\n",
		       (unsigned long long)r->pruned_lines);
	printf("critical path     %.2f lines mean, p95 %llu, flushed per "
	       "committed transaction\n", ta_dist_mean(&r->tx_crit_lines),
	       (unsigned long long)ta_dist_percentile(&r->tx_crit_lines, 95));
}

/* ---- JSON ---- */

static void json_dist(const char *key, struct ta_dist *d)
{
	printf("\"%s\": {", key);
	cmd_json_u64("n", d->n, 1);
	cmd_json_dbl("mean", ta_dist_mean(d), 1);
	cmd_json_u64("median", ta_dist_percentile(d, 50), 1);
	cmd_json_u64("p95", ta_dist_percentile(d, 95), 1);
	cmd_json_u64("max", d->max, 1);
	printf("\"hist\": [");
	for (unsigned i = 0; i < NBUCKETS; i++) {
		uint64_t lo, hi;
		bucket(i, &lo, &hi);
		printf("%s[%llu, %llu]", i ? ", " : "", (unsigned long long)lo,
		       (unsigned long long)ta_dist_count(d, lo, hi));
	}
	printf("]}, ");
}

static void json_summary(const char *path, struct ta_result *r,
                         uint64_t window_us)
{
	cmd_json_file(path);
	cmd_json_u64("records", r->records, 1);
	cmd_json_u64("threads", r->threads, 1);
	cmd_json_u64("span_ns", r->last_ns - r->first_ns, 1);
	cmd_json_u64("tx_committed", r->tx_committed, 1);
	cmd_json_u64("tx_aborted", r->tx_aborted, 1);
	cmd_json_u64("tx_unfinished", r->tx_unfinished, 1);
	cmd_json_u64("epochs", r->epochs, 1);
	cmd_json_u64("epochs_outside_tx", r->epochs_outside, 1);
	cmd_json_dbl("epochs_per_second", per_second(r), 1);
	json_dist("epoch_lines", &r->epoch_lines);
	cmd_json_dbl("singleton_share", share(r->singletons, r->epochs), 1);
	cmd_json_dbl("singleton_small_share",
	             share(r->singletons_small, r->singletons), 1);
	json_dist("epochs_per_tx", &r->tx_epochs);
	cmd_json_u64("window_us", window_us, 1);
	cmd_json_dbl("self_dep_share", share(r->self_dep, r->epochs), 1);
	cmd_json_dbl("cross_dep_share", share(r->cross_dep, r->epochs), 1);
	cmd_json_u64("store_bytes", r->store_bytes, 1);
	cmd_json_u64("nt_bytes", r->nt_bytes, 1);
	cmd_json_dbl("nt_share",
	             share(r->nt_bytes, r->store_bytes + r->nt_bytes), 1);
	printf("\"store_kinds\": {");
	for (unsigned k = 0; k < PMTX_TSK_COUNT; k++)
		cmd_json_u64(pmtx_trace_store_kind_name(k), r->kind_bytes[k],
		             k + 1 < PMTX_TSK_COUNT);
	printf("}, ");
	cmd_json_dbl("write_amplification", write_amplification(r), 1);
	cmd_json_u64("barriers", r->barriers, 1);
	printf("\"barrier_kinds\": {");
	for (unsigned k = 0; k < 3; k++)
		cmd_json_u64(pmtx_trace_barrier_kind_name(k), r->barrier_kinds[k], k < 2);
	printf("}, ");
	cmd_json_u64("empty_barriers", r->empty_barriers, 1);
	cmd_json_u64("flush_records", r->flush_recs, 1);
	cmd_json_u64("flushed_lines", r->flushed_lines, 1);
	cmd_json_dbl("flushes_per_epoch",
	             share(r->flushed_lines, r->epochs), 1);
	cmd_json_u64("redundant_flushed_lines", r->redundant_lines, 1);
	json_dist("critical_path_lines", &r->tx_crit_lines);
	cmd_json_u64("distinct_lines", r->distinct_lines, 1);
	cmd_json_u64("pruned_lines", r->pruned_lines, 0);
	printf("}\n");
}

/* ---- the command ---- */

struct analyze_args {
	int json;
	uint64_t window_us;
	char **files;       /* in p's copy of argv */
	int nfiles;
	struct cmd_parser p;
};

static int parse_window(const char *s, uint64_t *us)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > UINT64_MAX / 1000)
		return PMTX_E_INVAL;
	*us = v;
	return 0;
}

static int parse_args(int argc, char **argv, struct analyze_args *a)
{
	struct cmd_parser *p = &a->p;
	int c, bad = 0;
	memset(a, 0, sizeof(*a));
	a->window_us = 50;
	cmd_parser_init(p, analyze_usage.name, argc, argv, analyze_opts);
	while ((c = cmd_next_opt(p)) != -1) {
		if (c == OPT_JSON)
			a->json = 1;
		else if (c == OPT_WINDOW && parse_window(optarg, &a->window_us))
			bad = 1, fprintf(stderr, "pmtx trace analyze: bad "
			                         "--window-us '%s'\n", optarg);
		else
			bad |= c == '?';
	}
	return cmd_parse_files(p, &analyze_usage, analyze_about, bad,
	                       &a->files, &a->nfiles);
}

int cmd_trace_analyze(int argc, char **argv)
{
	struct analyze_args a;
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc;
	struct ta_opts o = {a.window_us * 1000, 0};
	struct ta_result *r = malloc(sizeof(*r));
	int status = r ? CMD_OK : CMD_PROBLEM;
	for (int i = 0; r && i < a.nfiles; i++) {
		if ((rc = ta_analyze_file(a.files[i], &o, r)) != 0) {
			cmd_report("trace analyze", a.files[i], rc, NULL);
			status = CMD_PROBLEM;
			continue;
		}
		if (a.json)
			json_summary(a.files[i], r, a.window_us);
		else
			text_summary(a.files[i], r, a.window_us);
		if (!a.json && i + 1 < a.nfiles)
			putchar('\n');
		ta_result_free(r);
	}
	free(r);
	cmd_parser_free(&a.p);
	return status;
}
