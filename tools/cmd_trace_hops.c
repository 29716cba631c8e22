/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_trace_hops.c - `pmtx trace hops FILE... [--json] [options]`: the
 * run time of each persistence trace under x86 (clwb + sfence, durable at
 * NVM or at the controller's queue), HOPS (the same two), an ideal
 * machine and this machine's measured x86, normalized to x86 at NVM
 * (trace_hops.c has the model), as text or one JSON object a line.
 *
 * Invariants
 *  1. Each file is modelled on its own. A file that cannot be read whole
 *     gets a message on stderr and no summary; the others are still
 *     modelled, and the exit status is then CMD_PROBLEM.
 *  2. Parameters come from th_opts_default, then --costs FILE, then the
 *     options given on the command line (in that order, whatever their
 *     order on it), so an option overrides the costs file.
 *  3. A costs file that cannot be read, or lacks one of the four values
 *     it is read for, is CMD_PROBLEM before any trace is read. A malformed
 *     option value is a usage error.
 *  4. A normalized time whose denominator (x86_nvm) is zero is printed as
 *     0, so every JSON object has the same keys whatever the trace holds.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "trace_hops.h"

static const struct cmd_usage hops_usage = {
	"trace hops", "FILE... [--json] [options]",
	"  --json              print one JSON object a line per file\n"
	"  --ghz X             core clock, cycles per ns (default 2)\n"
	"  --pm-cycles N       PM write latency (default 160)\n"
	"  --pwq-cycles N      time to reach the controller's persistent\n"
	"                      write queue (default 40)\n"
	"  --pb-entries N      persist buffer entries per thread (default 32)\n"
	"  --pb-launch N       draining starts at N entries (default 16)\n"
	"  --trace-ns X        cost of writing one trace record (default 0)\n"
	"  --here-fence-ns X   measured barrier: X + line_ns per line\n"
	"  --here-line-ns X    (defaults 0)\n"
	"  --here-clwb-ns X    measured flush of one line (default 0)\n"
	"  --costs FILE        read trace_ns and the here_* costs from\n"
	"                      `pmtx-bench costs` output (JSON lines)\n",
};

static const char hops_about[] =
	"\nReplays each trace in time order and reports its run time under\n"
	"x86_nvm, x86_pwq (clwb + sfence), hops_nvm, hops_pwq (persist\n"
	"buffers, ofence/dfence), ideal (no flush, no fence) and x86_here\n"
	"(this machine's costs), normalized to x86_nvm as in WHISPER's\n"
	"Figure 10. Rules and assumptions: man pmtx-trace-hops.\n";

enum {
	OPT_JSON = 256, OPT_COSTS,
	/* the numeric options, in the order of num_opts */
	OPT_GHZ, OPT_PM, OPT_PWQ, OPT_ENTRIES, OPT_LAUNCH, OPT_TRACE,
	OPT_FENCE, OPT_LINE, OPT_CLWB, OPT_END
};
#define NNUM (OPT_END - OPT_GHZ)

static const struct option hops_opts[] = {
	CMD_OPT_FLAG("json", OPT_JSON),
	CMD_OPT_ARG("costs", OPT_COSTS),
	CMD_OPT_ARG("ghz", OPT_GHZ),
	CMD_OPT_ARG("pm-cycles", OPT_PM),
	CMD_OPT_ARG("pwq-cycles", OPT_PWQ),
	CMD_OPT_ARG("pb-entries", OPT_ENTRIES),
	CMD_OPT_ARG("pb-launch", OPT_LAUNCH),
	CMD_OPT_ARG("trace-ns", OPT_TRACE),
	CMD_OPT_ARG("here-fence-ns", OPT_FENCE),
	CMD_OPT_ARG("here-line-ns", OPT_LINE),
	CMD_OPT_ARG("here-clwb-ns", OPT_CLWB),
	CMD_OPT_END,
};

struct hops_args {
	int json;
	const char *costs;
	double num[NNUM];   /* values of the numeric options given */
	int given[NNUM];
	char **files;       /* in p's copy of argv */
	int nfiles;
	struct cmd_parser p;
};

/* ---- options ---- */

/* A number >= 0 (and whole, for the buffer sizes); ghz > 0. */
static int parse_num(int opt, const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || v > 1e15)
		return PMTX_E_INVAL;
	if ((opt == OPT_ENTRIES || opt == OPT_LAUNCH) && v != (uint64_t)v)
		return PMTX_E_INVAL;
	if ((opt == OPT_GHZ || opt == OPT_ENTRIES) && v == 0)
		return PMTX_E_INVAL;
	*out = v;
	return 0;
}

static int parse_one(struct hops_args *a, int c)
{
	if (c == OPT_JSON)
		a->json = 1;
	else if (c == OPT_COSTS)
		a->costs = optarg;
	else if (c >= OPT_GHZ && c < OPT_END) {
		if (parse_num(c, optarg, &a->num[c - OPT_GHZ])) {
			fprintf(stderr, "pmtx trace hops: bad --%s '%s'\n",
			        hops_opts[c - OPT_GHZ + 2].name, optarg);
			return 1;
		}
		a->given[c - OPT_GHZ] = 1;
	} else
		return c == '?';
	return 0;
}

static int parse_args(int argc, char **argv, struct hops_args *a)
{
	struct cmd_parser *p = &a->p;
	int c, bad = 0;
	memset(a, 0, sizeof(*a));
	cmd_parser_init(p, hops_usage.name, argc, argv, hops_opts);
	while ((c = cmd_next_opt(p)) != -1)
		bad |= parse_one(a, c);
	return cmd_parse_files(p, &hops_usage, hops_about, bad, &a->files,
	                       &a->nfiles);
}

static void apply_given(const struct hops_args *a, struct th_opts *o)
{
	double *dst[NNUM] = {
		&o->ghz, &o->pm_cycles, &o->pwq_cycles, NULL, NULL,
		&o->trace_ns, &o->here_fence_ns, &o->here_line_ns,
		&o->here_clwb_ns,
	};
	for (unsigned i = 0; i < NNUM; i++) {
		if (!a->given[i])
			continue;
		if (dst[i])
			*dst[i] = a->num[i];
		else if (i == OPT_ENTRIES - OPT_GHZ)
			o->pb_entries = (uint64_t)a->num[i];
		else
			o->pb_launch = (uint64_t)a->num[i];
	}
}

/* ---- the costs file (`pmtx-bench costs`, JSON lines) ---- */

/* The number after "key": in line, or -1 when absent or malformed. */
/* The number of key in a JSON line; NAN when there is none. */
static double json_num(const char *line, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\"", key);
	const char *s = strstr(line, pat);
	if (!s)
		return NAN;
	s += strlen(pat);
	s += strspn(s, " \t");
	if (*s++ != ':')
		return NAN;
	char *end;
	double v = strtod(s, &end);
	return end == s ? NAN : v;
}

/* Does line say "what": "name"? */
static int json_what(const char *line, const char *name)
{
	const char *s = strstr(line, "\"what\"");
	if (!s)
		return 0;
	s += 6;
	s += strspn(s, " \t");
	if (*s++ != ':')
		return 0;
	s += strspn(s, " \t");
	size_t n = strlen(name);
	return *s == '"' && !strncmp(s + 1, name, n) && s[n + 1] == '"';
}

/* fence, line, clwb, trace: the four values (-1 until found). */
static void costs_line(const char *line, double v[4])
{
	if (json_what(line, "barrier_fit")) {
		v[0] = json_num(line, "fence_ns");
		v[1] = json_num(line, "line_ns");
	} else if (json_what(line, "clwb_clean")) {
		v[2] = json_num(line, "ns");
	} else if (json_what(line, "trace_record")) {
		v[3] = json_num(line, "ns");
	}
}

static int read_costs(const char *path, struct th_opts *o)
{
	static const char *const names[4] = {
		"barrier_fit fence_ns", "barrier_fit line_ns", "clwb_clean ns",
		"trace_record ns",
	};
	FILE *f = fopen(path, "r");
	if (!f) {
		cmd_report("trace hops", path, errno, "the --costs file");
		return CMD_PROBLEM;
	}
	double v[4] = {NAN, NAN, NAN, NAN};
	char line[16384];
	while (fgets(line, sizeof(line), f))
		costs_line(line, v);
	fclose(f);
	for (unsigned i = 0; i < 4; i++)
		if (!(v[i] >= 0)) {
			fprintf(stderr, "pmtx trace hops: %s: %s %s\n", path,
			        isnan(v[i]) ? "no" : "a negative", names[i]);
			return CMD_PROBLEM;
		}
	o->here_fence_ns = v[0], o->here_line_ns = v[1];
	o->here_clwb_ns = v[2], o->trace_ns = v[3];
	return CMD_OK;
}

/* ---- output ---- */

static double norm(const struct th_result *r, unsigned m)
{
	double base = r->time_ns[TH_X86_NVM];
	return base > 0 ? r->time_ns[m] / base : 0.0;
}

static void json_times(const struct th_result *r, int normalized)
{
	printf("\"%s\": {", normalized ? "normalized" : "time_ns");
	for (unsigned m = 0; m < TH_NMACH; m++) {
		if (normalized)
			cmd_json_dbl(th_machine_name(m), norm(r, m),
			             m + 1 < TH_NMACH);
		else
			cmd_json_u64(th_machine_name(m),
			             (uint64_t)(r->time_ns[m] + 0.5),
			             m + 1 < TH_NMACH);
	}
	printf("}, ");
}

static void json_hops(const struct th_result *r)
{
	static const char *const var[2] = {"nvm", "pwq"};
	printf("\"hops\": {");
	for (unsigned v = 0; v < 2; v++) {
		const struct th_hops_stats *s = &r->hops[v];
		printf("\"%s\": {", var[v]);
		cmd_json_u64("dfence_stall_ns",
		             (uint64_t)(s->dfence_stall_ns + 0.5), 1);
		cmd_json_u64("full_stall_ns",
		             (uint64_t)(s->full_stall_ns + 0.5), 1);
		cmd_json_u64("epochs_drained", s->epochs_drained, 1);
		cmd_json_u64("splits", s->splits, 0);
		printf("}%s", v ? "}, " : ", ");
	}
}

static void json_params(const struct th_opts *o)
{
	printf("\"params\": {");
	cmd_json_dbl("ghz", o->ghz, 1);
	cmd_json_dbl("pm_cycles", o->pm_cycles, 1);
	cmd_json_dbl("pwq_cycles", o->pwq_cycles, 1);
	cmd_json_u64("pb_entries", o->pb_entries, 1);
	cmd_json_u64("pb_launch", o->pb_launch, 1);
	cmd_json_dbl("trace_ns", o->trace_ns, 1);
	cmd_json_dbl("here_fence_ns", o->here_fence_ns, 1);
	cmd_json_dbl("here_line_ns", o->here_line_ns, 1);
	cmd_json_dbl("here_clwb_ns", o->here_clwb_ns, 1);
	cmd_json_dbl("pm_ns", o->pm_cycles / o->ghz, 1);
	cmd_json_dbl("pwq_ns", o->pwq_cycles / o->ghz, 0);
	printf("}}\n");
}

static void json_summary(const char *path, const struct th_result *r,
                         const struct th_opts *o)
{
	cmd_json_file(path);
	cmd_json_u64("records", r->records, 1);
	cmd_json_u64("threads", r->threads, 1);
	cmd_json_u64("traced_ns", r->last_ns - r->first_ns, 1);
	printf("\"barriers\": {");
	cmd_json_u64("order", r->barriers[0], 1);
	cmd_json_u64("durable", r->barriers[1], 1);
	cmd_json_u64("unknown", r->barriers[2], 0);
	printf("}, ");
	cmd_json_u64("stores", r->stores, 1);
	cmd_json_u64("pm_lines_stored", r->pm_lines_stored, 1);
	json_times(r, 0);
	json_times(r, 1);
	json_hops(r);
	json_params(o);
}

static void text_summary(const char *path, const struct th_result *r,
                         const struct th_opts *o)
{
	printf("trace             %s\n", path);
	printf("records           %llu, %llu threads, %.6f s traced\n",
	       (unsigned long long)r->records, (unsigned long long)r->threads,
	       (double)(r->last_ns - r->first_ns) / 1e9);
	printf("barriers          %llu order, %llu durable, %llu unknown "
	       "(as durable)\n", (unsigned long long)r->barriers[0],
	       (unsigned long long)r->barriers[1],
	       (unsigned long long)r->barriers[2]);
	printf("stores            %llu, %llu lines\n",
	       (unsigned long long)r->stores,
	       (unsigned long long)r->pm_lines_stored);
	printf("machine           run time (ns)  normalized to x86_nvm\n");
	for (unsigned m = 0; m < TH_NMACH; m++)
		printf("  %-15s %13.0f  %.4f\n", th_machine_name(m),
		       r->time_ns[m], norm(r, m));
	for (unsigned v = 0; v < 2; v++)
		printf("hops %s          dfence stalls %.0f ns, full-buffer "
		       "stalls %.0f ns, %llu epochs drained, %llu splits\n",
		       v ? "pwq" : "nvm", r->hops[v].dfence_stall_ns,
		       r->hops[v].full_stall_ns,
		       (unsigned long long)r->hops[v].epochs_drained,
		       (unsigned long long)r->hops[v].splits);
	printf("params            %g GHz, PM %g cycles (%g ns), PWQ %g "
	       "cycles (%g ns), buffer %llu entries, launch at %llu\n",
	       o->ghz, o->pm_cycles, o->pm_cycles / o->ghz, o->pwq_cycles,
	       o->pwq_cycles / o->ghz, (unsigned long long)o->pb_entries,
	       (unsigned long long)o->pb_launch);
	printf("here              fence %g ns + %g ns a line, clwb %g ns, "
	       "trace record %g ns\n", o->here_fence_ns, o->here_line_ns,
	       o->here_clwb_ns, o->trace_ns);
}

/* ---- the command ---- */

int cmd_trace_hops(int argc, char **argv)
{
	struct hops_args a;
	struct th_opts o;
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc;
	th_opts_default(&o);
	int status = a.costs ? read_costs(a.costs, &o) : CMD_OK;
	apply_given(&a, &o);
	int costs_bad = status != CMD_OK;
	for (int i = 0; !costs_bad && i < a.nfiles; i++) {
		struct th_result r;
		if ((rc = th_model_file(a.files[i], &o, &r)) != 0) {
			cmd_report("trace hops", a.files[i], rc, NULL);
			status = CMD_PROBLEM;
			continue;
		}
		if (a.json)
			json_summary(a.files[i], &r, &o);
		else
			text_summary(a.files[i], &r, &o);
		if (!a.json && i + 1 < a.nfiles)
			putchar('\n');
	}
	cmd_parser_free(&a.p);
	return status;
}
