/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tpcc.c - psq-tpcc, a TPC-C client for SQLite: the nine tables, the
 * loader and the five transactions of the TPC-C specification (revision
 * 5.11; clause numbers below), on any VFS. The pmtx VFS is registered at
 * start, so --db may name it in a URI.
 *
 *   psq-tpcc --db URI_OR_PATH [--vfs NAME] [--journal MODE]
 *            [--sync off|normal|full] [--warehouses W] [--scale F]
 *            [--seconds T] [--max-tx N] [--seed S] [--label L]
 *            [--load-only] [--from TEMPLATE] [--cache-kb K] [--check]
 *            [--load-seconds T]                           (see usage())
 *
 * DESIGN
 * Phases: open the database and apply the pragmas; then copy a template
 * (--from, SQLite's backup API), or load (4.3) if the database has no
 * tpcc_meta table, or use the database as it is; then run (unless
 * --load-only); then check (--check). A load prints one JSON line; a run
 * prints one at its end. The check's result goes into the last line.
 * Between a load or a copy and the run, a file database is closed and
 * opened again, so the run starts as on a database loaded earlier: the
 * copy's state does not linger in SQLite's page cache or in the VFS.
 *
 * Schema. The spec's columns and primary keys, plus the indexes
 * customer(c_w_id, c_d_id, c_last, c_first) and
 * orders(o_w_id, o_d_id, o_c_id, o_id), built after the rows are in.
 * warehouse and item are keyed by their INTEGER PRIMARY KEY (the rowid).
 * district, new_order, orders and order_line are WITHOUT ROWID: their
 * rows are short (under 100 bytes), so the primary key b-tree is the
 * table. customer (about 650 bytes a row) and stock (about 300) are rowid
 * tables with a primary key index: a WITHOUT ROWID b-tree keeps whole
 * rows in its interior cells, and rows that long would make it deep.
 * history has no key (a rowid table). Money is REAL with two decimals,
 * dates are INTEGER Unix seconds. tpcc_meta (not a TPC-C table) holds
 * the warehouse count, the scale and C_LOAD, so that a run on a copy
 * knows them.
 *
 * Scale F (--scale, default 1.0: the spec's sizes). Items, customers per
 * district and orders per district are round(100,000 F), round(3,000 F)
 * and the same; stock follows items. The last 30% of each district's
 * orders are undelivered (in new_order), as 900 of 3,000 are. Last names
 * are numbered 0 .. min(999, customers - 1), so that every name drawn
 * exists. W_YTD and D_YTD start at 10.00 per history row (300,000.00 and
 * 30,000.00 at F = 1), so that conditions 8 and 9 hold at every scale.
 * Below 1 the database is not the spec's: the JSON says
 * "spec_compliant": false.
 *
 * Terminals. One thread plays the 10 W terminals of 5.2.2: each
 * transaction draws a terminal; its warehouse is the home W_ID, its
 * district the Stock-Level D_ID (2.8.1.1). No keying or think time.
 * The mix is a deck of 100 cards (45 New-Order, 43 Payment, 4 each of
 * Order-Status, Delivery, Stock-Level), reshuffled when used up (5.2.4.2).
 *
 * Invariants:
 *  1. One transaction of the mix is one SQLite transaction: BEGIN
 *     IMMEDIATE (New-Order, Payment, Delivery) or BEGIN (the read-only
 *     Order-Status and Stock-Level) ... COMMIT; Delivery serves all 10
 *     districts in one. On any failure every statement is reset and the
 *     transaction rolled back.
 *  2. Statements are prepared once (SQLITE_PREPARE_PERSISTENT), bound and
 *     reset at each use; every path out of a step resets the statement,
 *     so a bind never meets a running statement. The inputs of a
 *     transaction are drawn before its clock starts; its latency runs from
 *     just before BEGIN to just after COMMIT (or ROLLBACK) returns.
 *  3. NURand (2.1.6): C_LOAD (A = 255, C_LAST) is drawn at load and kept
 *     in tpcc_meta; at run C_RUN differs from it by 65..119, never 96 or
 *     112 (2.1.6.1). The constants for C_ID (1023) and OL_I_ID (8191) are
 *     drawn at run.
 *  4. New-Order's 1% rollbacks (2.4.1.4) use item id items + 1 as the last
 *     item; they count in the mix and in tpmC (the terminal got the answer
 *     the business expects, "Item number is not valid"), and in
 *     "rollbacks", so a reader can take them out. Every other failure is an
 *     error: counted in "errors" (not in the mix), its first message on
 *     stderr, and the exit status is 1.
 *  5. Every loop is bounded: the run by --seconds and --max-tx attempts;
 *     the load by its row counts, and it fails past --load-seconds; it
 *     commits every LOAD_BATCH rows, so no transaction holds more.
 *  6. Errors are int returns: 0, an SQLite result code, or one of this
 *     file's negative TPCC_* codes.
 *  7. Latencies go to fixed log-linear histograms (32 sub-buckets per
 *     power of two of nanoseconds: under 3.2% error), one per type.
 *  8. --check counts the rows that break consistency conditions 1-10 and
 *     12 of 3.3.2 (11 holds only until the first Delivery). Sums of REAL
 *     money are compared within half a cent.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <sqlite3.h>

#include "pmtx_sqlite.h"

#define TPCC_ROLLBACK (-1) /* New-Order met an unused item (2.4.2.3) */
#define TPCC_NOROW (-2)    /* a row the data must hold is not there */
#define TPCC_TIMEOUT (-3)  /* the load ran past --load-seconds */
#define TPCC_BADDB (-4)    /* not a database this client can run on */
#define TPCC_CHECK (-5)    /* a consistency condition fails */

#define DISTRICTS 10
#define MAX_OL 15
#define MAX_WAREHOUSES 4
#define SPEC_ITEMS 100000
#define SPEC_CUSTOMERS 3000
#define LOAD_BATCH 10000
#define DECK 100
#define NSEC 1000000000ull

/* ---- options ---- */

struct opts {
	const char *db, *vfs, *journal, *sync, *label, *from;
	int warehouses, cache_kb;
	double scale, seconds, load_seconds;
	uint64_t max_tx, seed;
	bool w_given, scale_given, load_only, check;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: psq-tpcc --db URI_OR_PATH [options]\n"
"  --db URI_OR_PATH   database: a path, \":memory:\" or a file: URI such as\n"
"                     file:/dev/shm/t.db?vfs=pmtx&runtime=redo&domain=pdom1\n"
"  --vfs NAME         VFS for a plain path (default: SQLite's default)\n"
"  --journal MODE     PRAGMA journal_mode (default: SQLite's)\n"
"  --sync MODE        PRAGMA synchronous: off, normal, full, extra\n"
"  --warehouses W     1 to %d (default 1; a loaded database says its own)\n"
"  --scale F          0.001 to 1: items, customers and orders times F\n"
"                     (default 1.0; below 1 is not spec-compliant)\n"
"  --seconds T        run for T seconds (default 10) ...\n"
"  --max-tx N         ... or N transactions, whichever comes first\n"
"                     (default 1000000000)\n"
"  --seed S           random seed (default 1)\n"
"  --label L          copied into the JSON lines\n"
"  --load-only        load (or copy) and stop\n"
"  --from TEMPLATE    copy a database made with --load-only (backup API)\n"
"                     instead of loading\n"
"  --cache-kb K       PRAGMA cache_size = -K (default 2000, SQLite's)\n"
"  --check            check consistency conditions 1-10, 12 (3.3.2) at\n"
"                     the end; exit 1 if one fails\n"
"  --load-seconds T   fail a load that takes longer (default 3600)\n"
"Output: JSON lines on stdout (a load, a run). Exit 0; 1 on errors or a\n"
"failed check; 2 on bad arguments.\n", MAX_WAREHOUSES);
}

static void opts_default(struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->label = "";
	o->warehouses = 1;
	o->cache_kb = 2000;
	o->scale = 1.0;
	o->seconds = 10;
	o->load_seconds = 3600;
	o->max_tx = 1000000000ull;
	o->seed = 1;
}

static bool parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v >= lo && v <= hi))
		return false;
	*out = v;
	return true;
}

enum { O_DB = 256, O_VFS, O_JOURNAL, O_SYNC, O_W, O_SCALE, O_SECONDS,
       O_MAXTX, O_SEED, O_LABEL, O_LOADONLY, O_FROM, O_CACHE, O_CHECK,
       O_LOADSEC, O_HELP };

/* In the order of the O_ values (parse_opts names an option by it). */
static const struct option long_opts[] = {
	{"db", 1, 0, O_DB}, {"vfs", 1, 0, O_VFS},
	{"journal", 1, 0, O_JOURNAL}, {"sync", 1, 0, O_SYNC},
	{"warehouses", 1, 0, O_W}, {"scale", 1, 0, O_SCALE},
	{"seconds", 1, 0, O_SECONDS}, {"max-tx", 1, 0, O_MAXTX},
	{"seed", 1, 0, O_SEED}, {"label", 1, 0, O_LABEL},
	{"load-only", 0, 0, O_LOADONLY}, {"from", 1, 0, O_FROM},
	{"cache-kb", 1, 0, O_CACHE}, {"check", 0, 0, O_CHECK},
	{"load-seconds", 1, 0, O_LOADSEC}, {"help", 0, 0, O_HELP},
	{0, 0, 0, 0}};

/* An option with a number: false if it is out of range. */
static bool opt_number(struct opts *o, int c, const char *arg)
{
	double v;
	switch (c) {
	case O_W:
		o->w_given = true;
		return parse_num(arg, 1, MAX_WAREHOUSES, &v) &&
		       (o->warehouses = (int)v) == v;
	case O_SCALE:
		o->scale_given = true;
		return parse_num(arg, 0.001, 1, &o->scale);
	case O_SECONDS:
		return parse_num(arg, 0, 1e7, &o->seconds);
	case O_LOADSEC:
		return parse_num(arg, 0, 1e7, &o->load_seconds);
	case O_MAXTX:
		return parse_num(arg, 0, 1e15, &v) && (o->max_tx = (uint64_t)v, 1);
	case O_SEED:
		return parse_num(arg, 0, 1e15, &v) && (o->seed = (uint64_t)v, 1);
	case O_CACHE:
		return parse_num(arg, 1, 1e9, &v) && (o->cache_kb = (int)v, 1);
	}
	return false;
}

static bool opt_one(struct opts *o, int c, const char *arg)
{
	switch (c) {
	case O_DB: o->db = arg; return true;
	case O_VFS: o->vfs = arg; return true;
	case O_JOURNAL: o->journal = arg; return true;
	case O_SYNC: o->sync = arg; return true;
	case O_LABEL: o->label = arg; return true;
	case O_FROM: o->from = arg; return true;
	case O_LOADONLY: o->load_only = true; return true;
	case O_CHECK: o->check = true; return true;
	}
	return opt_number(o, c, arg);
}

/* 0: run; 1: --help was printed; 2: bad arguments (message printed). */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	int c;
	opts_default(o);
	while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		if (c == 'h' || c == O_HELP) {
			usage(stdout);
			return 1;
		}
		if (c == '?' || !opt_one(o, c, optarg)) {
			if (c != '?')
				fprintf(stderr, "psq-tpcc: bad value for --%s: %s\n",
				        long_opts[c - O_DB].name, optarg);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !o->db) {
		fprintf(stderr, "psq-tpcc: %s\n", o->db ? "stray argument"
		                                        : "--db is required");
		usage(stderr);
		return 2;
	}
	return 0;
}

/* ---- sizes ---- */

struct dims {
	int w;
	double scale;
	int items, cust;   /* per warehouse; per district */
	int orders;        /* loaded per district (= cust) */
	int first_new;     /* the first undelivered order of the load */
	int nlast;         /* last names 0 .. nlast - 1 */
};

static void dims_set(struct dims *d, int w, double scale)
{
	d->w = w;
	d->scale = scale;
	d->items = (int)lround(SPEC_ITEMS * scale);
	d->cust = (int)lround(SPEC_CUSTOMERS * scale);
	if (d->items < 1)
		d->items = 1;
	if (d->cust < 1)
		d->cust = 1;
	d->orders = d->cust;
	d->first_new = d->orders - (int)lround(d->orders * 0.3) + 1;
	d->nlast = d->cust < 1000 ? d->cust : 1000;
}

/* ---- random numbers and strings (2.1.6, 4.3.2) ---- */

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r) /* splitmix64 */
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static int rnd(struct rng *r, int lo, int hi)
{
	uint64_t span = (uint64_t)(hi - lo) + 1;
	return lo + (int)(((rng_next(r) >> 32) * span) >> 32);
}

static int nurand(struct rng *r, int a, int c, int x, int y)
{
	return (((rnd(r, 0, a) | rnd(r, x, y)) + c) % (y - x + 1)) + x;
}

static const char alnum[] =
	"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/* A random a-string [lo .. hi] into out (hi + 1 bytes); its length. */
static int astring(struct rng *r, char *out, int lo, int hi)
{
	int n = rnd(r, lo, hi);
	for (int i = 0; i < n; i += 2) {
		uint64_t v = rng_next(r);
		out[i] = alnum[((v & 0xffffffffu) * 62) >> 32];
		if (i + 1 < n)
			out[i + 1] = alnum[((v >> 32) * 62) >> 32];
	}
	out[n] = 0;
	return n;
}

static void nstring(struct rng *r, char *out, int n)
{
	for (int i = 0; i < n; i++)
		out[i] = (char)('0' + rnd(r, 0, 9));
	out[n] = 0;
}

/* I_DATA, S_DATA: a-string [26 .. 50], "ORIGINAL" in 10% (4.3.3.1). */
static void data_string(struct rng *r, char *out)
{
	int n = astring(r, out, 26, 50);
	if (rnd(r, 1, 100) <= 10)
		memcpy(out + rnd(r, 0, n - 8), "ORIGINAL", 8);
}

/* C_LAST from the three digits of num (4.3.2.3); out holds 16 bytes. */
static void last_name(int num, char *out)
{
	static const char *const syl[10] = {"BAR", "OUGHT", "ABLE", "PRI",
		"PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"};
	snprintf(out, 16, "%s%s%s", syl[num / 100], syl[num / 10 % 10],
	         syl[num % 10]);
}

/* C_RUN for C_LAST: |C_RUN - C_LOAD| in 65..119 but not 96, 112. */
static int c_last_run(struct rng *r, int c_load)
{
	int delta = 65 + rnd(r, 0, 52);
	if (delta >= 96)
		delta++;
	if (delta >= 112)
		delta++;
	bool up = rnd(r, 0, 1);
	if (up ? c_load + delta > 255 : c_load - delta < 0)
		up = !up;
	return up ? c_load + delta : c_load - delta;
}

/* ---- latency histograms ---- */

#define HIST_SUB_BITS 5
#define HIST_SUB (1 << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

struct hist {
	uint64_t n, sum, max;
	uint64_t b[HIST_BUCKETS];
};

static unsigned hist_index(uint64_t v)
{
	if (v < HIST_SUB)
		return (unsigned)v;
	unsigned msb = 63u - (unsigned)__builtin_clzll(v);
	return (msb - HIST_SUB_BITS + 1) * HIST_SUB +
	       (unsigned)((v >> (msb - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

/* The middle of bucket i. */
static double hist_value(unsigned i)
{
	if (i < HIST_SUB)
		return i;
	unsigned g = i / HIST_SUB, sub = i % HIST_SUB;
	double width = ldexp(1.0, (int)g - 1);
	return (HIST_SUB + sub) * width + width / 2;
}

static void hist_add(struct hist *h, uint64_t ns)
{
	h->n++;
	h->sum += ns;
	if (ns > h->max)
		h->max = ns;
	h->b[hist_index(ns)]++;
}

static void hist_merge(struct hist *into, const struct hist *h)
{
	into->n += h->n;
	into->sum += h->sum;
	if (h->max > into->max)
		into->max = h->max;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		into->b[i] += h->b[i];
}

/* The q-quantile in microseconds; NAN if empty. */
static double hist_quantile_us(const struct hist *h, double q)
{
	if (!h->n)
		return NAN;
	uint64_t rank = (uint64_t)ceil(q * (double)h->n), seen = 0;
	if (rank < 1)
		rank = 1;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank)
			return fmin(hist_value(i), (double)h->max) / 1e3;
	}
	return (double)h->max / 1e3;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

/* ---- the client ---- */

enum tx_type { TX_NEW_ORDER, TX_PAYMENT, TX_ORDER_STATUS, TX_DELIVERY,
               TX_STOCK_LEVEL, TX_NTYPES };
static const char *const tx_name[TX_NTYPES] = {"new_order", "payment",
	"order_status", "delivery", "stock_level"};
static const int tx_cards[TX_NTYPES] = {45, 43, 4, 4, 4};

/* The statements of the five transactions, prepared once. */
enum stmt_id {
	S_W_TAX, S_D_NEXT, S_D_NEXT_UPD, S_C_NEWORD, S_O_INS, S_NO_INS,
	S_I_SEL, S_S_UPD, S_OL_INS,
	S_W_PAY, S_W_PAY_UPD, S_D_PAY, S_D_PAY_UPD, S_C_BY_NAME, S_C_PAY,
	S_C_DATA, S_C_PAY_UPD, S_C_PAY_UPD_DATA, S_H_INS,
	S_C_OS, S_O_LAST, S_OL_OS,
	S_NO_MIN, S_NO_DEL, S_O_CID, S_O_CARRIER, S_OL_DELIV, S_OL_SUM,
	S_C_DELIV,
	S_D_NEXT_SL, S_SL_COUNT,
	S_NSTMT
};

static const char *const stmt_sql[S_NSTMT] = {
	[S_W_TAX] = "SELECT w_tax FROM warehouse WHERE w_id = ?1",
	[S_D_NEXT] = "SELECT d_tax, d_next_o_id FROM district "
		"WHERE d_w_id = ?1 AND d_id = ?2",
	[S_D_NEXT_UPD] = "UPDATE district SET d_next_o_id = ?3 "
		"WHERE d_w_id = ?1 AND d_id = ?2",
	[S_C_NEWORD] = "SELECT c_discount, c_last, c_credit FROM customer "
		"WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
	[S_O_INS] = "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, "
		"o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) "
		"VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7)",
	[S_NO_INS] = "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) "
		"VALUES (?1, ?2, ?3)",
	[S_I_SEL] = "SELECT i_price, i_name, i_data FROM item WHERE i_id = ?1",
	[S_S_UPD] = "UPDATE stock SET s_quantity = ?1, s_ytd = s_ytd + ?2, "
		"s_order_cnt = s_order_cnt + 1, "
		"s_remote_cnt = s_remote_cnt + ?3 "
		"WHERE s_w_id = ?4 AND s_i_id = ?5",
	[S_OL_INS] = "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, "
		"ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, "
		"ol_dist_info, ol_delivery_d) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, NULL)",
	[S_W_PAY] = "SELECT w_name, w_street_1, w_street_2, w_city, w_state, "
		"w_zip FROM warehouse WHERE w_id = ?1",
	[S_W_PAY_UPD] = "UPDATE warehouse SET w_ytd = w_ytd + ?2 "
		"WHERE w_id = ?1",
	[S_D_PAY] = "SELECT d_name, d_street_1, d_street_2, d_city, d_state, "
		"d_zip FROM district WHERE d_w_id = ?1 AND d_id = ?2",
	[S_D_PAY_UPD] = "UPDATE district SET d_ytd = d_ytd + ?3 "
		"WHERE d_w_id = ?1 AND d_id = ?2",
	[S_C_BY_NAME] = "SELECT c_id FROM customer WHERE c_w_id = ?1 AND "
		"c_d_id = ?2 AND c_last = ?3 ORDER BY c_first",
	[S_C_PAY] = "SELECT c_first, c_middle, c_last, c_street_1, "
		"c_street_2, c_city, c_state, c_zip, c_phone, c_since, "
		"c_credit, c_credit_lim, c_discount, c_balance FROM customer "
		"WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
	[S_C_DATA] = "SELECT c_data FROM customer "
		"WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
	[S_C_PAY_UPD] = "UPDATE customer SET c_balance = c_balance - ?4, "
		"c_ytd_payment = c_ytd_payment + ?4, "
		"c_payment_cnt = c_payment_cnt + 1 "
		"WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
	[S_C_PAY_UPD_DATA] = "UPDATE customer SET c_balance = c_balance - ?4, "
		"c_ytd_payment = c_ytd_payment + ?4, "
		"c_payment_cnt = c_payment_cnt + 1, c_data = ?5 "
		"WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
	[S_H_INS] = "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, "
		"h_w_id, h_date, h_amount, h_data) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[S_C_OS] = "SELECT c_balance, c_first, c_middle, c_last FROM customer "
		"WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
	/* Without statistics SQLite 3.40 would walk the district's orders
	 * by primary key, from the last, to find the customer's. */
	[S_O_LAST] = "SELECT o_id, o_entry_d, o_carrier_id FROM orders "
		"INDEXED BY orders_customer WHERE o_w_id = ?1 AND o_d_id = ?2 "
		"AND o_c_id = ?3 ORDER BY o_id DESC LIMIT 1",
	[S_OL_OS] = "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, "
		"ol_delivery_d FROM order_line "
		"WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3",
	[S_NO_MIN] = "SELECT no_o_id FROM new_order WHERE no_w_id = ?1 AND "
		"no_d_id = ?2 ORDER BY no_o_id LIMIT 1",
	[S_NO_DEL] = "DELETE FROM new_order WHERE no_w_id = ?1 AND "
		"no_d_id = ?2 AND no_o_id = ?3",
	[S_O_CID] = "SELECT o_c_id FROM orders WHERE o_w_id = ?1 AND "
		"o_d_id = ?2 AND o_id = ?3",
	[S_O_CARRIER] = "UPDATE orders SET o_carrier_id = ?4 "
		"WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_id = ?3",
	[S_OL_DELIV] = "UPDATE order_line SET ol_delivery_d = ?4 "
		"WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3",
	[S_OL_SUM] = "SELECT sum(ol_amount) FROM order_line "
		"WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3",
	[S_C_DELIV] = "UPDATE customer SET c_balance = c_balance + ?4, "
		"c_delivery_cnt = c_delivery_cnt + 1 "
		"WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
	[S_D_NEXT_SL] = "SELECT d_next_o_id FROM district "
		"WHERE d_w_id = ?1 AND d_id = ?2",
	[S_SL_COUNT] = "SELECT count(DISTINCT s_i_id) FROM order_line, stock "
		"WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id < ?3 AND "
		"ol_o_id >= ?4 AND s_w_id = ?1 AND s_i_id = ol_i_id AND "
		"s_quantity < ?5",
};

struct stats {
	uint64_t count[TX_NTYPES];  /* completed, intended rollbacks included */
	uint64_t attempts, rollbacks, errors, delivery_skipped;
	double seconds;
	struct hist h[TX_NTYPES];
};

struct tpcc {
	const struct opts *o;
	sqlite3 *db;
	struct dims dm;
	struct rng rng;
	int c_load, c_last_c, c_id_c, ol_i_id_c; /* NURand constants */
	sqlite3_stmt *st[S_NSTMT];
	sqlite3_stmt *stock_sel[DISTRICTS]; /* S_DIST_xx of district xx */
	int *ids;                           /* by-name lookups, dm.cust */
	unsigned char deck[DECK];
	int deck_left;
	bool has_err;
	char err[600];
	double load_s, copy_s;              /* NAN if not done */
	const char *check_result;           /* NULL, "ok" or "failed" */
	double sink;                        /* outputs nobody reads */
	struct stats stats;
};

/* Keep the first error message (and print it); returns rc. */
static int fail_msg(struct tpcc *t, int rc, const char *what,
                    const char *why)
{
	if (!t->has_err) {
		const char *pm = pmtx_sqlite_errmsg();
		snprintf(t->err, sizeof(t->err), "%s: %s (%d)%s%s", what, why,
		         rc, *pm ? "; pmtx: " : "", pm);
		fprintf(stderr, "psq-tpcc: %s\n", t->err);
		t->has_err = true;
	}
	return rc;
}

static int fail(struct tpcc *t, int rc, const char *what)
{
	return fail_msg(t, rc, what, sqlite3_errmsg(t->db));
}

static int exec_sql(struct tpcc *t, const char *sql)
{
	int rc = sqlite3_exec(t->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? SQLITE_OK : fail(t, rc, sql);
}

static void bind_ints(sqlite3_stmt *s, const int64_t *v, int n)
{
	for (int i = 0; i < n; i++) {
		int rc = sqlite3_bind_int64(s, i + 1, v[i]);
		assert(rc == SQLITE_OK); /* invariant 2: s is reset */
		(void)rc;
	}
}

/* Bind integers to parameters 1, 2, ... of s. */
#define BIND_INTS(s, ...)                                                 \
	bind_ints((s), (const int64_t[]){__VA_ARGS__},                    \
	          (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

/* Run s to its end (no row expected); s is reset. */
static int st_exec(struct tpcc *t, sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		fail(t, rc, sqlite3_sql(s));
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Bind the integers to statement id of t, then run it as st_exec does. */
#define EXEC_INTS(t, id, ...)                                             \
	(BIND_INTS((t)->st[id], __VA_ARGS__), st_exec((t), (t)->st[id]))

/* Step s: SQLITE_ROW (s keeps the row: read it, then reset); otherwise
 * s is reset and the result is SQLITE_DONE or an error. */
static int st_step(struct tpcc *t, sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		return rc;
	if (rc != SQLITE_DONE)
		fail(t, rc, sqlite3_sql(s));
	sqlite3_reset(s);
	return rc;
}

/* Step s to a row that must be there: SQLITE_OK with the row, or an
 * error (TPCC_NOROW if there is none). */
static int st_one(struct tpcc *t, sqlite3_stmt *s)
{
	int rc = st_step(t, s);
	if (rc == SQLITE_ROW)
		return SQLITE_OK;
	if (rc == SQLITE_DONE)
		return fail_msg(t, TPCC_NOROW, sqlite3_sql(s), "no row");
	return rc;
}

/* Column i of the current row of s as text (never NULL), into out. */
static void col_text(sqlite3_stmt *s, int i, char *out, size_t len)
{
	const unsigned char *v = sqlite3_column_text(s, i);
	snprintf(out, len, "%s", v ? (const char *)v : "");
}

static int prepare(struct tpcc *t, const char *sql, sqlite3_stmt **s)
{
	int rc = sqlite3_prepare_v3(t->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
	                            s, NULL);
	return rc == SQLITE_OK ? SQLITE_OK : fail(t, rc, sql);
}

static int prepare_all(struct tpcc *t)
{
	char sql[200];
	int rc = SQLITE_OK;
	for (int i = 0; i < S_NSTMT && !rc; i++)
		rc = prepare(t, stmt_sql[i], &t->st[i]);
	for (int d = 0; d < DISTRICTS && !rc; d++) {
		snprintf(sql, sizeof(sql), "SELECT s_quantity, s_data, "
		         "s_dist_%02d FROM stock WHERE s_w_id = ?1 AND "
		         "s_i_id = ?2", d + 1);
		rc = prepare(t, sql, &t->stock_sel[d]);
	}
	return rc;
}

static void reset_all(struct tpcc *t)
{
	for (int i = 0; i < S_NSTMT; i++)
		sqlite3_reset(t->st[i]);
	for (int d = 0; d < DISTRICTS; d++)
		sqlite3_reset(t->stock_sel[d]);
}

static void finalize_all(struct tpcc *t)
{
	for (int i = 0; i < S_NSTMT; i++)
		sqlite3_finalize(t->st[i]);
	for (int d = 0; d < DISTRICTS; d++)
		sqlite3_finalize(t->stock_sel[d]);
	memset(t->st, 0, sizeof(t->st));
	memset(t->stock_sel, 0, sizeof(t->stock_sel));
}

/* ---- schema ---- */

static const char schema_sql[] =
	"CREATE TABLE warehouse (w_id INTEGER PRIMARY KEY, w_name TEXT, "
	"w_street_1 TEXT, w_street_2 TEXT, w_city TEXT, w_state TEXT, "
	"w_zip TEXT, w_tax REAL, w_ytd REAL);"
	"CREATE TABLE district (d_id INTEGER, d_w_id INTEGER, d_name TEXT, "
	"d_street_1 TEXT, d_street_2 TEXT, d_city TEXT, d_state TEXT, "
	"d_zip TEXT, d_tax REAL, d_ytd REAL, d_next_o_id INTEGER, "
	"PRIMARY KEY (d_w_id, d_id)) WITHOUT ROWID;"
	"CREATE TABLE customer (c_id INTEGER, c_d_id INTEGER, c_w_id INTEGER, "
	"c_first TEXT, c_middle TEXT, c_last TEXT, c_street_1 TEXT, "
	"c_street_2 TEXT, c_city TEXT, c_state TEXT, c_zip TEXT, "
	"c_phone TEXT, c_since INTEGER, c_credit TEXT, c_credit_lim REAL, "
	"c_discount REAL, c_balance REAL, c_ytd_payment REAL, "
	"c_payment_cnt INTEGER, c_delivery_cnt INTEGER, c_data TEXT, "
	"PRIMARY KEY (c_w_id, c_d_id, c_id));"
	"CREATE TABLE history (h_c_id INTEGER, h_c_d_id INTEGER, "
	"h_c_w_id INTEGER, h_d_id INTEGER, h_w_id INTEGER, h_date INTEGER, "
	"h_amount REAL, h_data TEXT);"
	"CREATE TABLE new_order (no_o_id INTEGER, no_d_id INTEGER, "
	"no_w_id INTEGER, PRIMARY KEY (no_w_id, no_d_id, no_o_id)) "
	"WITHOUT ROWID;"
	"CREATE TABLE orders (o_id INTEGER, o_d_id INTEGER, o_w_id INTEGER, "
	"o_c_id INTEGER, o_entry_d INTEGER, o_carrier_id INTEGER, "
	"o_ol_cnt INTEGER, o_all_local INTEGER, "
	"PRIMARY KEY (o_w_id, o_d_id, o_id)) WITHOUT ROWID;"
	"CREATE TABLE order_line (ol_o_id INTEGER, ol_d_id INTEGER, "
	"ol_w_id INTEGER, ol_number INTEGER, ol_i_id INTEGER, "
	"ol_supply_w_id INTEGER, ol_delivery_d INTEGER, "
	"ol_quantity INTEGER, ol_amount REAL, ol_dist_info TEXT, "
	"PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)) WITHOUT ROWID;"
	"CREATE TABLE item (i_id INTEGER PRIMARY KEY, i_im_id INTEGER, "
	"i_name TEXT, i_price REAL, i_data TEXT);"
	"CREATE TABLE stock (s_i_id INTEGER, s_w_id INTEGER, "
	"s_quantity INTEGER, s_dist_01 TEXT, s_dist_02 TEXT, s_dist_03 TEXT, "
	"s_dist_04 TEXT, s_dist_05 TEXT, s_dist_06 TEXT, s_dist_07 TEXT, "
	"s_dist_08 TEXT, s_dist_09 TEXT, s_dist_10 TEXT, s_ytd INTEGER, "
	"s_order_cnt INTEGER, s_remote_cnt INTEGER, s_data TEXT, "
	"PRIMARY KEY (s_w_id, s_i_id));"
	"CREATE TABLE tpcc_meta (warehouses INTEGER, scale REAL, "
	"c_load INTEGER, seed INTEGER, loaded_at INTEGER);";

static const char index_sql[] =
	"CREATE INDEX customer_name ON customer "
	"(c_w_id, c_d_id, c_last, c_first);"
	"CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);";

/* ---- the loader (4.3.3.1) ---- */

enum load_id { L_ITEM, L_WAREHOUSE, L_DISTRICT, L_CUSTOMER, L_HISTORY,
               L_STOCK, L_ORDER, L_ORDER_LINE, L_NEW_ORDER, L_META, L_N };

static const char *const load_sql[L_N] = {
	[L_ITEM] = "INSERT INTO item VALUES (?1, ?2, ?3, ?4, ?5)",
	[L_WAREHOUSE] = "INSERT INTO warehouse VALUES "
		"(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[L_DISTRICT] = "INSERT INTO district (d_id, d_w_id, d_next_o_id, "
		"d_name, d_street_1, d_street_2, d_city, d_state, d_zip, d_tax, "
		"d_ytd) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
	[L_CUSTOMER] = "INSERT INTO customer (c_id, c_d_id, c_w_id, c_since, "
		"c_payment_cnt, c_delivery_cnt, c_first, c_middle, c_last, "
		"c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, "
		"c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, "
		"c_data) VALUES (?1, ?2, ?3, ?4, 1, 0, ?5, 'OE', ?6, ?7, ?8, ?9, "
		"?10, ?11, ?12, ?13, 50000.0, ?14, -10.0, 10.0, ?15)",
	[L_HISTORY] = "INSERT INTO history VALUES "
		"(?1, ?2, ?3, ?2, ?3, ?4, 10.0, ?5)",
	[L_STOCK] = "INSERT INTO stock VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
		"?9, ?10, ?11, ?12, ?13, 0, 0, 0, ?14)",
	[L_ORDER] = "INSERT INTO orders VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1)",
	[L_ORDER_LINE] = "INSERT INTO order_line VALUES "
		"(?1, ?2, ?3, ?4, ?5, ?3, ?6, 5, ?7, ?8)",
	[L_NEW_ORDER] = "INSERT INTO new_order VALUES (?1, ?2, ?3)",
	[L_META] = "INSERT INTO tpcc_meta VALUES (?1, ?2, ?3, ?4, ?5)",
};

struct load {
	struct tpcc *t;
	sqlite3_stmt *ins[L_N];
	struct rng rng;
	int64_t now;              /* Unix seconds: the load's dates */
	uint64_t deadline;        /* now_ns() past which the load fails */
	long rows, in_tx;
};

struct addr {
	char st1[21], st2[21], city[21], state[3], zip[10];
};

static void addr_gen(struct rng *r, struct addr *a)
{
	astring(r, a->st1, 10, 20);
	astring(r, a->st2, 10, 20);
	astring(r, a->city, 10, 20);
	astring(r, a->state, 2, 2);
	nstring(r, a->zip, 4); /* 4.3.2.7: 4 random digits, then 11111 */
	memcpy(a->zip + 4, "11111", 6);
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
	int rc = sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
	assert(rc == SQLITE_OK);
	(void)rc;
}

/* Bind the address to parameters first .. first + 4. */
static void addr_bind(sqlite3_stmt *s, int first, const struct addr *a)
{
	bind_text(s, first, a->st1);
	bind_text(s, first + 1, a->st2);
	bind_text(s, first + 2, a->city);
	bind_text(s, first + 3, a->state);
	bind_text(s, first + 4, a->zip);
}

/* One row inserted: commit every LOAD_BATCH rows; fail past the
 * deadline (invariant 5). */
static int load_tick(struct load *l)
{
	l->rows++;
	if (++l->in_tx < LOAD_BATCH)
		return SQLITE_OK;
	l->in_tx = 0;
	if (now_ns() > l->deadline)
		return fail_msg(l->t, TPCC_TIMEOUT, "load",
		                "took longer than --load-seconds");
	int rc = exec_sql(l->t, "COMMIT");
	return rc ? rc : exec_sql(l->t, "BEGIN");
}

static int load_insert(struct load *l, sqlite3_stmt *s)
{
	int rc = st_exec(l->t, s);
	return rc ? rc : load_tick(l);
}

static int load_items(struct load *l)
{
	sqlite3_stmt *s = l->ins[L_ITEM];
	char name[25], data[51];
	int rc = SQLITE_OK;
	for (int i = 1; i <= l->t->dm.items && !rc; i++) {
		BIND_INTS(s, i, rnd(&l->rng, 1, 10000));
		astring(&l->rng, name, 14, 24);
		bind_text(s, 3, name);
		sqlite3_bind_double(s, 4, rnd(&l->rng, 100, 10000) / 100.0);
		data_string(&l->rng, data);
		bind_text(s, 5, data);
		rc = load_insert(l, s);
	}
	return rc;
}

static int load_warehouse_row(struct load *l, int w)
{
	sqlite3_stmt *s = l->ins[L_WAREHOUSE];
	char name[11];
	struct addr a;
	BIND_INTS(s, w);
	astring(&l->rng, name, 6, 10);
	bind_text(s, 2, name);
	addr_gen(&l->rng, &a);
	addr_bind(s, 3, &a);
	sqlite3_bind_double(s, 8, rnd(&l->rng, 0, 2000) / 10000.0);
	sqlite3_bind_double(s, 9, 10.0 * DISTRICTS * l->t->dm.cust);
	return load_insert(l, s);
}

static int load_stock_row(struct load *l, int w, int i)
{
	sqlite3_stmt *s = l->ins[L_STOCK];
	char dist[DISTRICTS][25], data[51];
	BIND_INTS(s, i, w, rnd(&l->rng, 10, 100));
	for (int d = 0; d < DISTRICTS; d++) {
		astring(&l->rng, dist[d], 24, 24);
		bind_text(s, 4 + d, dist[d]);
	}
	data_string(&l->rng, data);
	bind_text(s, 14, data);
	return load_insert(l, s);
}

static int load_district_row(struct load *l, int w, int d)
{
	sqlite3_stmt *s = l->ins[L_DISTRICT];
	char name[11];
	struct addr a;
	BIND_INTS(s, d, w, l->t->dm.orders + 1);
	astring(&l->rng, name, 6, 10);
	bind_text(s, 4, name);
	addr_gen(&l->rng, &a);
	addr_bind(s, 5, &a);
	sqlite3_bind_double(s, 10, rnd(&l->rng, 0, 2000) / 10000.0);
	sqlite3_bind_double(s, 11, 10.0 * l->t->dm.cust);
	return load_insert(l, s);
}

/* Customer c of district (w, d) and its history row. */
static int load_customer(struct load *l, int w, int d, int c)
{
	const struct dims *dm = &l->t->dm;
	sqlite3_stmt *s = l->ins[L_CUSTOMER];
	char first[17], last[16], phone[17], data[501];
	struct addr a;
	BIND_INTS(s, c, d, w, l->now);
	astring(&l->rng, first, 8, 16);
	bind_text(s, 5, first);
	last_name(c <= dm->nlast ? c - 1 : nurand(&l->rng, 255, l->t->c_load,
	                                          0, dm->nlast - 1), last);
	bind_text(s, 6, last);
	addr_gen(&l->rng, &a);
	addr_bind(s, 7, &a);
	nstring(&l->rng, phone, 16);
	bind_text(s, 12, phone);
	bind_text(s, 13, rnd(&l->rng, 1, 100) <= 10 ? "BC" : "GC");
	sqlite3_bind_double(s, 14, rnd(&l->rng, 0, 5000) / 10000.0);
	astring(&l->rng, data, 300, 500);
	bind_text(s, 15, data);
	int rc = load_insert(l, s);
	if (rc)
		return rc;
	s = l->ins[L_HISTORY];
	BIND_INTS(s, c, d, w, l->now);
	astring(&l->rng, data, 12, 24);
	bind_text(s, 5, data);
	return load_insert(l, s);
}

/* The order lines of order o; delivered ones have amount 0 (4.3.3.1). */
static int load_lines(struct load *l, int w, int d, int o, int n)
{
	sqlite3_stmt *s = l->ins[L_ORDER_LINE];
	bool delivered = o < l->t->dm.first_new;
	char dist[25];
	int rc = SQLITE_OK;
	for (int k = 1; k <= n && !rc; k++) {
		BIND_INTS(s, o, d, w, k, rnd(&l->rng, 1, l->t->dm.items));
		if (delivered)
			sqlite3_bind_int64(s, 6, l->now);
		else
			sqlite3_bind_null(s, 6);
		sqlite3_bind_double(s, 7, delivered ? 0.0
		                    : rnd(&l->rng, 1, 999999) / 100.0);
		astring(&l->rng, dist, 24, 24);
		bind_text(s, 8, dist);
		rc = load_insert(l, s);
	}
	return rc;
}

static int load_order(struct load *l, int w, int d, int o, int c)
{
	sqlite3_stmt *s = l->ins[L_ORDER];
	bool delivered = o < l->t->dm.first_new;
	int n = rnd(&l->rng, 5, 15);
	BIND_INTS(s, o, d, w, c, l->now);
	if (delivered)
		sqlite3_bind_int(s, 6, rnd(&l->rng, 1, 10));
	else
		sqlite3_bind_null(s, 6);
	sqlite3_bind_int(s, 7, n);
	int rc = load_insert(l, s);
	if (!rc)
		rc = load_lines(l, w, d, o, n);
	if (rc || delivered)
		return rc;
	BIND_INTS(l->ins[L_NEW_ORDER], o, d, w);
	return load_insert(l, l->ins[L_NEW_ORDER]);
}

/* The orders of district (w, d): O_C_ID a random permutation. */
static int load_orders(struct load *l, int w, int d)
{
	int n = l->t->dm.orders, *perm = l->t->ids, rc = SQLITE_OK;
	for (int i = 0; i < n; i++)
		perm[i] = i + 1;
	for (int i = n - 1; i > 0; i--) {
		int j = rnd(&l->rng, 0, i), x = perm[i];
		perm[i] = perm[j];
		perm[j] = x;
	}
	for (int o = 1; o <= n && !rc; o++)
		rc = load_order(l, w, d, o, perm[o - 1]);
	return rc;
}

static int load_warehouse(struct load *l, int w)
{
	int rc = load_warehouse_row(l, w);
	for (int i = 1; i <= l->t->dm.items && !rc; i++)
		rc = load_stock_row(l, w, i);
	for (int d = 1; d <= DISTRICTS && !rc; d++) {
		rc = load_district_row(l, w, d);
		for (int c = 1; c <= l->t->dm.cust && !rc; c++)
			rc = load_customer(l, w, d, c);
		if (!rc)
			rc = load_orders(l, w, d);
	}
	return rc;
}

static int load_meta(struct load *l)
{
	sqlite3_stmt *s = l->ins[L_META];
	BIND_INTS(s, l->t->dm.w);
	sqlite3_bind_double(s, 2, l->t->dm.scale);
	sqlite3_bind_int(s, 3, l->t->c_load);
	sqlite3_bind_int64(s, 4, (int64_t)l->t->o->seed);
	sqlite3_bind_int64(s, 5, l->now);
	return st_exec(l->t, s);
}

static int load_rows(struct load *l)
{
	int rc = load_items(l);
	for (int w = 1; w <= l->t->dm.w && !rc; w++)
		rc = load_warehouse(l, w);
	if (!rc)
		rc = exec_sql(l->t, index_sql);
	return rc ? rc : load_meta(l);
}

/* Create and fill the tables (4.3); one JSON line is printed later. */
static int load(struct tpcc *t)
{
	struct load l = {.t = t, .rng = {t->o->seed * 0x9e3779b97f4a7c15ull},
	                 .now = time(NULL)};
	uint64_t t0 = now_ns();
	l.deadline = t0 + (uint64_t)(t->o->load_seconds * 1e9);
	t->c_load = rnd(&l.rng, 0, 255);
	int rc = exec_sql(t, "BEGIN");
	if (!rc)
		rc = exec_sql(t, schema_sql);
	for (int i = 0; i < L_N && !rc; i++)
		rc = prepare(t, load_sql[i], &l.ins[i]);
	if (!rc)
		rc = load_rows(&l);
	if (!rc)
		rc = exec_sql(t, "COMMIT");
	if (rc && !sqlite3_get_autocommit(t->db))
		sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
	for (int i = 0; i < L_N; i++)
		sqlite3_finalize(l.ins[i]);
	t->load_s = (double)(now_ns() - t0) / 1e9;
	return rc;
}

/* ---- transaction inputs (2.4.1, 2.5.1, 2.6.1, 2.7.1, 2.8.1) ---- */

struct no_in {
	int w, d, c, ol_cnt, all_local;
	bool rbk;
	int i_id[MAX_OL], supply_w[MAX_OL], qty[MAX_OL];
};

struct cust_key {
	int w, d, c_id;   /* c_id 0: by last name */
	char last[16];
};

struct pay_in {
	int w, d;
	struct cust_key c;
	double amount;
};

struct os_in {
	struct cust_key c;
};

struct dl_in {
	int w, carrier;
};

struct sl_in {
	int w, d, threshold;
};

union tx_in {
	struct no_in no;
	struct pay_in pay;
	struct os_in os;
	struct dl_in dl;
	struct sl_in sl;
};

/* A warehouse other than w (w itself if there is only one). */
static int other_warehouse(struct tpcc *t, int w)
{
	if (t->dm.w == 1)
		return w;
	int o = rnd(&t->rng, 1, t->dm.w - 1);
	return o >= w ? o + 1 : o;
}

/* The customer of Payment and Order-Status: 60% by last name. */
static void gen_customer(struct tpcc *t, struct cust_key *c)
{
	if (rnd(&t->rng, 1, 100) <= 60) {
		c->c_id = 0;
		last_name(nurand(&t->rng, 255, t->c_last_c, 0, t->dm.nlast - 1),
		          c->last);
	} else {
		c->c_id = nurand(&t->rng, 1023, t->c_id_c, 1, t->dm.cust);
	}
}

static void gen_new_order(struct tpcc *t, int w, struct no_in *in)
{
	in->w = w;
	in->d = rnd(&t->rng, 1, DISTRICTS);
	in->c = nurand(&t->rng, 1023, t->c_id_c, 1, t->dm.cust);
	in->ol_cnt = rnd(&t->rng, 5, MAX_OL);
	in->rbk = rnd(&t->rng, 1, 100) == 1;
	in->all_local = 1;
	for (int i = 0; i < in->ol_cnt; i++) {
		in->i_id[i] = nurand(&t->rng, 8191, t->ol_i_id_c, 1, t->dm.items);
		in->supply_w[i] = rnd(&t->rng, 1, 100) > 1 ? w
		                  : other_warehouse(t, w);
		in->all_local &= in->supply_w[i] == w;
		in->qty[i] = rnd(&t->rng, 1, 10);
	}
	if (in->rbk)
		in->i_id[in->ol_cnt - 1] = t->dm.items + 1; /* unused */
}

static void gen_payment(struct tpcc *t, int w, struct pay_in *in)
{
	in->w = w;
	in->d = rnd(&t->rng, 1, DISTRICTS);
	if (rnd(&t->rng, 1, 100) <= 85) {
		in->c.w = w;
		in->c.d = in->d;
	} else {
		in->c.w = other_warehouse(t, w);
		in->c.d = rnd(&t->rng, 1, DISTRICTS);
	}
	gen_customer(t, &in->c);
	in->amount = rnd(&t->rng, 100, 500000) / 100.0;
}

/* A terminal (5.2.2) and the inputs of a transaction of type type. */
static void gen_input(struct tpcc *t, int type, union tx_in *in)
{
	int term = rnd(&t->rng, 0, t->dm.w * DISTRICTS - 1);
	int w = term / DISTRICTS + 1;
	switch (type) {
	case TX_NEW_ORDER:
		gen_new_order(t, w, &in->no);
		break;
	case TX_PAYMENT:
		gen_payment(t, w, &in->pay);
		break;
	case TX_ORDER_STATUS:
		in->os.c.w = w;
		in->os.c.d = rnd(&t->rng, 1, DISTRICTS);
		gen_customer(t, &in->os.c);
		break;
	case TX_DELIVERY:
		in->dl = (struct dl_in){w, rnd(&t->rng, 1, 10)};
		break;
	default:
		in->sl = (struct sl_in){w, term % DISTRICTS + 1,
		                        rnd(&t->rng, 10, 20)};
	}
}

/* ---- New-Order (2.4.2) ---- */

struct no_head {
	double w_tax, d_tax, discount;
	int o_id;
};

static int no_district(struct tpcc *t, const struct no_in *in,
                       struct no_head *h)
{
	sqlite3_stmt *s = t->st[S_D_NEXT];
	BIND_INTS(s, in->w, in->d);
	int rc = st_one(t, s);
	if (rc)
		return rc;
	h->d_tax = sqlite3_column_double(s, 0);
	h->o_id = sqlite3_column_int(s, 1);
	sqlite3_reset(s);
	return EXEC_INTS(t, S_D_NEXT_UPD, in->w, in->d, h->o_id + 1);
}

static int no_head(struct tpcc *t, const struct no_in *in,
                   struct no_head *h)
{
	sqlite3_stmt *s = t->st[S_W_TAX];
	BIND_INTS(s, in->w);
	int rc = st_one(t, s);
	if (rc)
		return rc;
	h->w_tax = sqlite3_column_double(s, 0);
	sqlite3_reset(s);
	if ((rc = no_district(t, in, h)))
		return rc;
	s = t->st[S_C_NEWORD];
	BIND_INTS(s, in->w, in->d, in->c);
	if ((rc = st_one(t, s)))
		return rc;
	h->discount = sqlite3_column_double(s, 0);
	sqlite3_reset(s);
	if ((rc = EXEC_INTS(t, S_O_INS, h->o_id, in->d, in->w, in->c,
	                    time(NULL), in->ol_cnt, in->all_local)))
		return rc;
	return EXEC_INTS(t, S_NO_INS, h->o_id, in->d, in->w);
}

/* The item of line i: its price, and whether I_DATA has "ORIGINAL".
 * TPCC_ROLLBACK if the item does not exist. */
static int no_item(struct tpcc *t, int i_id, double *price, bool *orig)
{
	sqlite3_stmt *s = t->st[S_I_SEL];
	BIND_INTS(s, i_id);
	int rc = st_step(t, s);
	if (rc == SQLITE_DONE)
		return TPCC_ROLLBACK;
	if (rc != SQLITE_ROW)
		return rc;
	const unsigned char *data = sqlite3_column_text(s, 2);
	*price = sqlite3_column_double(s, 0);
	*orig = data && strstr((const char *)data, "ORIGINAL");
	sqlite3_reset(s);
	return SQLITE_OK;
}

/* Take line i's quantity from its stock; S_DIST_xx into dist. */
static int no_stock(struct tpcc *t, const struct no_in *in, int i,
                    char *dist, bool *orig)
{
	sqlite3_stmt *s = t->stock_sel[in->d - 1];
	BIND_INTS(s, in->supply_w[i], in->i_id[i]);
	int rc = st_one(t, s);
	if (rc)
		return rc;
	int q = sqlite3_column_int(s, 0);
	const unsigned char *data = sqlite3_column_text(s, 1);
	*orig = *orig && data && strstr((const char *)data, "ORIGINAL");
	col_text(s, 2, dist, 25);
	sqlite3_reset(s);
	q = q >= in->qty[i] + 10 ? q - in->qty[i] : q - in->qty[i] + 91;
	return EXEC_INTS(t, S_S_UPD, q, in->qty[i], in->supply_w[i] != in->w,
	                 in->supply_w[i], in->i_id[i]);
}

static int no_line(struct tpcc *t, const struct no_in *in, int o_id, int i,
                   double *total)
{
	double price = 0;
	bool orig = false;
	char dist[25];
	int rc = no_item(t, in->i_id[i], &price, &orig);
	if (!rc)
		rc = no_stock(t, in, i, dist, &orig);
	if (rc)
		return rc;
	double amount = in->qty[i] * price;
	sqlite3_stmt *s = t->st[S_OL_INS];
	BIND_INTS(s, o_id, in->d, in->w, i + 1, in->i_id[i], in->supply_w[i],
	          in->qty[i]);
	sqlite3_bind_double(s, 8, amount);
	bind_text(s, 9, dist);
	*total += amount;
	t->sink += orig; /* brand-generic: 'B' if both data say ORIGINAL */
	return st_exec(t, s);
}

static int tx_new_order(struct tpcc *t, const struct no_in *in)
{
	struct no_head h = {0};
	double total = 0;
	int rc = no_head(t, in, &h);
	for (int i = 0; i < in->ol_cnt && !rc; i++)
		rc = no_line(t, in, h.o_id, i, &total);
	if (rc == TPCC_ROLLBACK && !in->rbk)
		fail_msg(t, rc, "New-Order", "an item that should exist is not");
	t->sink += total * (1 - h.discount) * (1 + h.w_tax + h.d_tax);
	return rc;
}

/* ---- Payment (2.5.2) and the customer lookup it shares ---- */

/* The customer named c->last: the ceil(n/2)-th of the n by C_FIRST. */
static int customer_by_name(struct tpcc *t, const struct cust_key *c,
                            int *c_id)
{
	sqlite3_stmt *s = t->st[S_C_BY_NAME];
	int n = 0, rc;
	BIND_INTS(s, c->w, c->d);
	bind_text(s, 3, c->last);
	while ((rc = st_step(t, s)) == SQLITE_ROW) {
		if (n < t->dm.cust)
			t->ids[n++] = sqlite3_column_int(s, 0);
	}
	if (rc != SQLITE_DONE)
		return rc;
	if (!n)
		return fail_msg(t, TPCC_NOROW, c->last, "no customer has it");
	*c_id = t->ids[(n - 1) / 2];
	return SQLITE_OK;
}

static int customer_id(struct tpcc *t, const struct cust_key *c, int *c_id)
{
	*c_id = c->c_id;
	return c->c_id ? SQLITE_OK : customer_by_name(t, c, c_id);
}

/* Select the name and address of a warehouse (sel) or district, then add
 * the amount to its YTD (upd); the name into name. */
static int pay_place(struct tpcc *t, int sel, int upd, const int64_t *key,
                     int nkey, double amount, char *name)
{
	sqlite3_stmt *s = t->st[sel];
	bind_ints(s, key, nkey);
	int rc = st_one(t, s);
	if (rc)
		return rc;
	col_text(s, 0, name, 11);
	sqlite3_reset(s);
	bind_ints(t->st[upd], key, nkey);
	sqlite3_bind_double(t->st[upd], nkey + 1, amount);
	return st_exec(t, t->st[upd]);
}

/* C_DATA of a bad-credit customer: the payment in front, 500 at most. */
static int pay_bad_credit(struct tpcc *t, const struct pay_in *in,
                          int c_id, char *data)
{
	sqlite3_stmt *s = t->st[S_C_DATA];
	BIND_INTS(s, in->c.w, in->c.d, c_id);
	int rc = st_one(t, s);
	if (rc)
		return rc;
	const unsigned char *old = sqlite3_column_text(s, 0);
	snprintf(data, 501, "%d %d %d %d %d %.2f|%s", c_id, in->c.d, in->c.w,
	         in->d, in->w, in->amount, old ? (const char *)old : "");
	sqlite3_reset(s);
	return SQLITE_OK;
}

static int pay_customer(struct tpcc *t, const struct pay_in *in, int c_id)
{
	sqlite3_stmt *s = t->st[S_C_PAY];
	char data[501];
	BIND_INTS(s, in->c.w, in->c.d, c_id);
	int rc = st_one(t, s);
	if (rc)
		return rc;
	const unsigned char *credit = sqlite3_column_text(s, 10);
	bool bc = credit && !strcmp((const char *)credit, "BC");
	sqlite3_reset(s);
	if (bc && (rc = pay_bad_credit(t, in, c_id, data)))
		return rc;
	s = t->st[bc ? S_C_PAY_UPD_DATA : S_C_PAY_UPD];
	BIND_INTS(s, in->c.w, in->c.d, c_id);
	sqlite3_bind_double(s, 4, in->amount);
	if (bc)
		bind_text(s, 5, data);
	return st_exec(t, s);
}

static int tx_payment(struct tpcc *t, const struct pay_in *in)
{
	char w_name[11], d_name[11], h_data[25];
	int c_id;
	int rc = pay_place(t, S_W_PAY, S_W_PAY_UPD, (const int64_t[]){in->w},
	                   1, in->amount, w_name);
	if (!rc)
		rc = pay_place(t, S_D_PAY, S_D_PAY_UPD,
		               (const int64_t[]){in->w, in->d}, 2, in->amount,
		               d_name);
	if (!rc)
		rc = customer_id(t, &in->c, &c_id);
	if (!rc)
		rc = pay_customer(t, in, c_id);
	if (rc)
		return rc;
	snprintf(h_data, sizeof(h_data), "%s    %s", w_name, d_name);
	sqlite3_stmt *s = t->st[S_H_INS];
	BIND_INTS(s, c_id, in->c.d, in->c.w, in->d, in->w, time(NULL));
	sqlite3_bind_double(s, 7, in->amount);
	bind_text(s, 8, h_data);
	return st_exec(t, s);
}

/* ---- Order-Status (2.6.2) ---- */

static int os_lines(struct tpcc *t, const struct cust_key *c, int o_id)
{
	sqlite3_stmt *s = t->st[S_OL_OS];
	int rc = SQLITE_DONE, n = 0;
	BIND_INTS(s, c->w, c->d, o_id);
	while (n <= MAX_OL && (rc = st_step(t, s)) == SQLITE_ROW) {
		t->sink += sqlite3_column_double(s, 3); /* OL_AMOUNT */
		n++;
	}
	sqlite3_reset(s);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static int tx_order_status(struct tpcc *t, const struct os_in *in)
{
	int c_id, rc = customer_id(t, &in->c, &c_id);
	sqlite3_stmt *s = t->st[S_C_OS];
	if (rc)
		return rc;
	BIND_INTS(s, in->c.w, in->c.d, c_id);
	if ((rc = st_one(t, s)))
		return rc;
	t->sink += sqlite3_column_double(s, 0); /* C_BALANCE */
	sqlite3_reset(s);
	s = t->st[S_O_LAST];
	BIND_INTS(s, in->c.w, in->c.d, c_id);
	if ((rc = st_one(t, s)))
		return rc;
	int o_id = sqlite3_column_int(s, 0);
	sqlite3_reset(s);
	return os_lines(t, &in->c, o_id);
}

/* ---- Delivery (2.7.4) ---- */

/* Deliver the oldest new order of district (w, d), if there is one. */
static int dl_district(struct tpcc *t, const struct dl_in *in, int d)
{
	sqlite3_stmt *s = t->st[S_NO_MIN];
	int64_t now = time(NULL);
	BIND_INTS(s, in->w, d);
	int rc = st_step(t, s);
	if (rc == SQLITE_DONE) {
		t->stats.delivery_skipped++;
		return SQLITE_OK;
	}
	if (rc != SQLITE_ROW)
		return rc;
	int o_id = sqlite3_column_int(s, 0);
	sqlite3_reset(s);
	if ((rc = EXEC_INTS(t, S_NO_DEL, in->w, d, o_id)))
		return rc;
	s = t->st[S_O_CID];
	BIND_INTS(s, in->w, d, o_id);
	if ((rc = st_one(t, s)))
		return rc;
	int c_id = sqlite3_column_int(s, 0);
	sqlite3_reset(s);
	if ((rc = EXEC_INTS(t, S_O_CARRIER, in->w, d, o_id, in->carrier)))
		return rc;
	if ((rc = EXEC_INTS(t, S_OL_DELIV, in->w, d, o_id, now)))
		return rc;
	s = t->st[S_OL_SUM];
	BIND_INTS(s, in->w, d, o_id);
	if ((rc = st_one(t, s)))
		return rc;
	double sum = sqlite3_column_double(s, 0);
	sqlite3_reset(s);
	BIND_INTS(t->st[S_C_DELIV], in->w, d, c_id);
	sqlite3_bind_double(t->st[S_C_DELIV], 4, sum);
	return st_exec(t, t->st[S_C_DELIV]);
}

static int tx_delivery(struct tpcc *t, const struct dl_in *in)
{
	int rc = SQLITE_OK;
	for (int d = 1; d <= DISTRICTS && !rc; d++)
		rc = dl_district(t, in, d);
	return rc;
}

/* ---- Stock-Level (2.8.2) ---- */

static int tx_stock_level(struct tpcc *t, const struct sl_in *in)
{
	sqlite3_stmt *s = t->st[S_D_NEXT_SL];
	BIND_INTS(s, in->w, in->d);
	int rc = st_one(t, s);
	if (rc)
		return rc;
	int next = sqlite3_column_int(s, 0);
	sqlite3_reset(s);
	s = t->st[S_SL_COUNT];
	BIND_INTS(s, in->w, in->d, next, next - 20, in->threshold);
	if ((rc = st_one(t, s)))
		return rc;
	t->sink += sqlite3_column_int(s, 0);
	sqlite3_reset(s);
	return SQLITE_OK;
}

/* ---- the run ---- */

static int tx_body(struct tpcc *t, int type, const union tx_in *in)
{
	switch (type) {
	case TX_NEW_ORDER: return tx_new_order(t, &in->no);
	case TX_PAYMENT: return tx_payment(t, &in->pay);
	case TX_ORDER_STATUS: return tx_order_status(t, &in->os);
	case TX_DELIVERY: return tx_delivery(t, &in->dl);
	default: return tx_stock_level(t, &in->sl);
	}
}

/* Roll back whatever is left of a failed transaction (invariant 1). */
static int tx_abort(struct tpcc *t)
{
	reset_all(t);
	if (sqlite3_get_autocommit(t->db))
		return SQLITE_OK;
	return exec_sql(t, "ROLLBACK");
}

/* One transaction, BEGIN to COMMIT: 0, TPCC_ROLLBACK when intended,
 * or an error. */
static int tx_one(struct tpcc *t, int type, const union tx_in *in)
{
	bool ro = type == TX_ORDER_STATUS || type == TX_STOCK_LEVEL;
	int rc = exec_sql(t, ro ? "BEGIN" : "BEGIN IMMEDIATE");
	if (!rc)
		rc = tx_body(t, type, in);
	if (!rc)
		rc = exec_sql(t, "COMMIT");
	if (rc) {
		int rb = tx_abort(t);
		if (rc == TPCC_ROLLBACK && rb)
			rc = rb;
	}
	return rc;
}

static int deck_draw(struct tpcc *t)
{
	if (!t->deck_left) {
		int n = 0;
		for (int type = 0; type < TX_NTYPES; type++)
			for (int k = 0; k < tx_cards[type]; k++)
				t->deck[n++] = (unsigned char)type;
		for (int i = DECK - 1; i > 0; i--) {
			int j = rnd(&t->rng, 0, i);
			unsigned char x = t->deck[i];
			t->deck[i] = t->deck[j];
			t->deck[j] = x;
		}
		t->deck_left = DECK;
	}
	return t->deck[--t->deck_left];
}

static void run_one(struct tpcc *t)
{
	union tx_in in;
	int type = deck_draw(t);
	gen_input(t, type, &in);
	uint64_t t0 = now_ns();
	int rc = tx_one(t, type, &in);
	uint64_t dt = now_ns() - t0;
	t->stats.attempts++;
	if (rc == TPCC_ROLLBACK && type == TX_NEW_ORDER && in.no.rbk)
		t->stats.rollbacks++;
	else if (rc) {
		t->stats.errors++;
		return;
	}
	t->stats.count[type]++;
	hist_add(&t->stats.h[type], dt);
}

static int run_setup(struct tpcc *t)
{
	t->rng.s = t->o->seed * 0xd1b54a32d192ed03ull + 1;
	t->c_last_c = c_last_run(&t->rng, t->c_load);
	t->c_id_c = rnd(&t->rng, 0, 1023);
	t->ol_i_id_c = rnd(&t->rng, 0, 8191);
	return prepare_all(t);
}

/* Transactions until --seconds or --max-tx (invariant 5). */
static int run(struct tpcc *t)
{
	int rc = run_setup(t);
	if (rc)
		return rc;
	uint64_t start = now_ns(), now = start;
	uint64_t end = start + (uint64_t)(t->o->seconds * 1e9);
	while (t->stats.attempts < t->o->max_tx && now < end) {
		run_one(t);
		now = now_ns();
	}
	t->stats.seconds = (double)(now - start) / 1e9;
	return SQLITE_OK;
}

/* ---- consistency conditions (3.3.2) ---- */

/* Each query counts the rows (warehouses, districts, orders, customers)
 * that break the condition. */
static const char *const check_sql[] = {
	/* 1: W_YTD = sum(D_YTD) */
	"SELECT count(*) FROM warehouse WHERE abs(w_ytd - (SELECT sum(d_ytd) "
	"FROM district WHERE d_w_id = w_id)) > 0.005",
	/* 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) */
	"SELECT count(*) FROM district WHERE d_next_o_id - 1 IS NOT "
	"(SELECT max(o_id) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id) "
	"OR d_next_o_id - 1 != coalesce((SELECT max(no_o_id) FROM new_order "
	"WHERE no_w_id = d_w_id AND no_d_id = d_id), d_next_o_id - 1)",
	/* 3: max(NO_O_ID) - min(NO_O_ID) + 1 = count of new orders */
	"SELECT count(*) FROM (SELECT max(no_o_id) - min(no_o_id) + 1 AS span, "
	"count(*) AS n FROM new_order GROUP BY no_w_id, no_d_id) WHERE span != n",
	/* 4: sum(O_OL_CNT) = count of order lines */
	"SELECT count(*) FROM district WHERE (SELECT sum(o_ol_cnt) FROM orders "
	"WHERE o_w_id = d_w_id AND o_d_id = d_id) IS NOT (SELECT count(*) FROM "
	"order_line WHERE ol_w_id = d_w_id AND ol_d_id = d_id)",
	/* 5: O_CARRIER_ID is null iff a new_order row exists */
	"SELECT count(*) FROM orders LEFT JOIN new_order ON no_w_id = o_w_id "
	"AND no_d_id = o_d_id AND no_o_id = o_id "
	"WHERE (o_carrier_id IS NULL) != (no_o_id IS NOT NULL)",
	/* 6: O_OL_CNT = the order's count of lines */
	"SELECT count(*) FROM orders WHERE o_ol_cnt != (SELECT count(*) FROM "
	"order_line WHERE ol_w_id = o_w_id AND ol_d_id = o_d_id AND "
	"ol_o_id = o_id)",
	/* 7: OL_DELIVERY_D is null iff O_CARRIER_ID is */
	"SELECT count(*) FROM order_line JOIN orders ON o_w_id = ol_w_id AND "
	"o_d_id = ol_d_id AND o_id = ol_o_id "
	"WHERE (ol_delivery_d IS NULL) != (o_carrier_id IS NULL)",
	/* 8: W_YTD = sum(H_AMOUNT) of the warehouse */
	"SELECT count(*) FROM warehouse LEFT JOIN (SELECT h_w_id, "
	"sum(h_amount) AS s FROM history GROUP BY h_w_id) ON h_w_id = w_id "
	"WHERE abs(w_ytd - coalesce(s, 0)) > 0.005",
	/* 9: D_YTD = sum(H_AMOUNT) of the district */
	"SELECT count(*) FROM district LEFT JOIN (SELECT h_w_id, h_d_id, "
	"sum(h_amount) AS s FROM history GROUP BY h_w_id, h_d_id) "
	"ON h_w_id = d_w_id AND h_d_id = d_id "
	"WHERE abs(d_ytd - coalesce(s, 0)) > 0.005",
	/* 10: C_BALANCE = delivered OL_AMOUNT - H_AMOUNT of the customer */
	"SELECT count(*) FROM customer LEFT JOIN (SELECT o_w_id, o_d_id, "
	"o_c_id, sum(ol_amount) AS ol FROM orders JOIN order_line ON "
	"ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id WHERE "
	"ol_delivery_d IS NOT NULL GROUP BY o_w_id, o_d_id, o_c_id) ON "
	"o_w_id = c_w_id AND o_d_id = c_d_id AND o_c_id = c_id "
	"LEFT JOIN (SELECT h_c_w_id, h_c_d_id, h_c_id, sum(h_amount) AS h "
	"FROM history GROUP BY h_c_w_id, h_c_d_id, h_c_id) ON "
	"h_c_w_id = c_w_id AND h_c_d_id = c_d_id AND h_c_id = c_id "
	"WHERE abs(c_balance - (coalesce(ol, 0) - coalesce(h, 0))) > 0.005",
	/* 12: C_BALANCE + C_YTD_PAYMENT = delivered OL_AMOUNT */
	"SELECT count(*) FROM customer LEFT JOIN (SELECT o_w_id, o_d_id, "
	"o_c_id, sum(ol_amount) AS ol FROM orders JOIN order_line ON "
	"ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id WHERE "
	"ol_delivery_d IS NOT NULL GROUP BY o_w_id, o_d_id, o_c_id) ON "
	"o_w_id = c_w_id AND o_d_id = c_d_id AND o_c_id = c_id "
	"WHERE abs(c_balance + c_ytd_payment - coalesce(ol, 0)) > 0.005",
};
static const int check_no[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12};

/* How many rows break check_sql[i] (-1 on an error). */
static int64_t check_one(struct tpcc *t, int i)
{
	sqlite3_stmt *s;
	if (prepare(t, check_sql[i], &s))
		return -1;
	int64_t bad = st_one(t, s) ? -1 : sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return bad;
}

/* Every condition in one read transaction; "failed" if one breaks. */
static int check(struct tpcc *t)
{
	int n = (int)(sizeof(check_no) / sizeof(check_no[0])), failed = 0;
	int rc = exec_sql(t, "BEGIN");
	for (int i = 0; i < n && !rc; i++) {
		int64_t bad = check_one(t, i);
		if (bad < 0)
			rc = SQLITE_ERROR;
		else if (bad > 0 && ++failed)
			fprintf(stderr, "psq-tpcc: consistency condition %d "
			        "(3.3.2.%d) fails for %" PRId64 " rows\n",
			        check_no[i], check_no[i], bad);
	}
	if (!sqlite3_get_autocommit(t->db))
		sqlite3_exec(t->db, "COMMIT", NULL, NULL, NULL);
	t->check_result = rc ? "error" : failed ? "failed" : "ok";
	return rc ? rc : failed ? TPCC_CHECK : SQLITE_OK;
}

/* ---- opening, copying, pragmas ---- */

static int pragma_text(struct tpcc *t, const char *sql, char *out,
                       size_t len)
{
	sqlite3_stmt *s;
	int rc = prepare(t, sql, &s);
	if (rc)
		return rc;
	rc = st_one(t, s);
	if (!rc)
		col_text(s, 0, out, len);
	sqlite3_finalize(s);
	return rc;
}

/* journal_mode answers with the mode it is in: it must be the one asked. */
static int set_journal(struct tpcc *t, const char *mode)
{
	char sql[80], got[32], why[64];
	snprintf(sql, sizeof(sql), "PRAGMA journal_mode = %s", mode);
	int rc = pragma_text(t, sql, got, sizeof(got));
	if (!rc && strcasecmp(got, mode)) {
		snprintf(why, sizeof(why), "not applied, the mode is %s", got);
		rc = fail_msg(t, TPCC_BADDB, sql, why);
	}
	return rc;
}

static int apply_pragmas(struct tpcc *t)
{
	const struct opts *o = t->o;
	char sql[80];
	int rc = o->journal ? set_journal(t, o->journal) : SQLITE_OK;
	if (!rc && o->sync) {
		snprintf(sql, sizeof(sql), "PRAGMA synchronous = %s", o->sync);
		rc = exec_sql(t, sql);
	}
	snprintf(sql, sizeof(sql), "PRAGMA cache_size = -%d", o->cache_kb);
	return rc ? rc : exec_sql(t, sql);
}

static int open_db(struct tpcc *t)
{
	int rc = sqlite3_open_v2(t->o->db, &t->db, SQLITE_OPEN_READWRITE |
	                         SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
	                         t->o->vfs);
	if (rc)
		return fail(t, rc, t->o->db);
	return apply_pragmas(t);
}

/* After a load or a copy a file database is closed and opened again, so
 * that the run starts as a process that opens a loaded database would:
 * with none of the load's state in SQLite or in the VFS. (:memory:
 * would be lost: it is kept open.) */
static int reopen(struct tpcc *t)
{
	const char *file = sqlite3_db_filename(t->db, "main");
	if (!file || !*file)
		return SQLITE_OK;
	int rc = sqlite3_close(t->db);
	if (rc)
		return fail(t, rc, "close after the load");
	t->db = NULL;
	return open_db(t);
}

/* Copy the template over the database (backup API), in one step. */
static int copy_from(struct tpcc *t, const char *from)
{
	sqlite3 *src;
	uint64_t t0 = now_ns();
	int rc = sqlite3_open_v2(from, &src, SQLITE_OPEN_READONLY |
	                         SQLITE_OPEN_URI, NULL);
	if (rc) {
		fail_msg(t, rc, from, sqlite3_errmsg(src));
		sqlite3_close(src);
		return rc;
	}
	sqlite3_backup *b = sqlite3_backup_init(t->db, "main", src, "main");
	if (!b) {
		sqlite3_close(src);
		return fail(t, sqlite3_errcode(t->db), "backup");
	}
	rc = sqlite3_backup_step(b, -1);
	int frc = sqlite3_backup_finish(b);
	if (rc == SQLITE_DONE)
		rc = frc;
	if (rc)
		fail(t, rc, "backup from the template");
	sqlite3_close(src);
	t->copy_s = (double)(now_ns() - t0) / 1e9;
	return rc;
}

/* *found: the database holds a load (a tpcc_meta table); then its
 * warehouses, scale and C_LOAD. */
static int read_meta(struct tpcc *t, bool *found, int *w, double *scale)
{
	sqlite3_stmt *s;
	int rc = prepare(t, "SELECT count(*) FROM sqlite_schema WHERE "
	                 "type = 'table' AND name = 'tpcc_meta'", &s);
	if (!rc && !(rc = st_one(t, s)))
		*found = sqlite3_column_int(s, 0) > 0;
	sqlite3_finalize(s);
	if (rc || !*found)
		return rc;
	rc = prepare(t, "SELECT warehouses, scale, c_load FROM tpcc_meta", &s);
	if (!rc && !(rc = st_one(t, s))) {
		*w = sqlite3_column_int(s, 0);
		*scale = sqlite3_column_double(s, 1);
		t->c_load = sqlite3_column_int(s, 2);
	}
	sqlite3_finalize(s);
	return rc;
}

/* Fix the sizes; the by-name buffer (also the loader's permutation)
 * holds one district's customers. */
static int set_dims(struct tpcc *t, int w, double scale)
{
	dims_set(&t->dm, w, scale);
	t->ids = malloc(sizeof(int) * (size_t)t->dm.cust);
	return t->ids ? SQLITE_OK
	              : fail_msg(t, SQLITE_NOMEM, "malloc", "out of memory");
}

/* The sizes of a loaded database; explicit options must agree. */
static int adopt_meta(struct tpcc *t, int w, double scale)
{
	const struct opts *o = t->o;
	if (w < 1 || w > MAX_WAREHOUSES || !(scale >= 0.001 && scale <= 1))
		return fail_msg(t, TPCC_BADDB, "tpcc_meta", "bad warehouses/scale");
	if ((o->w_given && o->warehouses != w) ||
	    (o->scale_given && fabs(o->scale - scale) > 1e-9))
		return fail_msg(t, TPCC_BADDB, "--warehouses/--scale",
		                "differ from the loaded database's");
	return set_dims(t, w, scale);
}

/* Copy, load or adopt the database, per the options. */
static int prepare_db(struct tpcc *t)
{
	int w = 0, rc = SQLITE_OK;
	double scale = 0;
	bool have = false;
	if (t->o->from)
		rc = copy_from(t, t->o->from);
	if (!rc)
		rc = read_meta(t, &have, &w, &scale);
	if (rc)
		return rc;
	if (have) {
		if (t->o->load_only && !t->o->from)
			return fail_msg(t, TPCC_BADDB, t->o->db, "already loaded");
		rc = adopt_meta(t, w, scale);
	} else if (t->o->from) {
		rc = fail_msg(t, TPCC_BADDB, t->o->from, "not a psq-tpcc load");
	} else {
		rc = set_dims(t, t->o->warehouses, t->o->scale);
		if (!rc)
			rc = load(t);
	}
	return rc;
}

/* ---- JSON ---- */

static void json_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_num(const char *key, double v)
{
	printf(",\"%s\":", key);
	if (isfinite(v))
		printf("%.6g", v);
	else
		printf("null");
}

static void json_kv(const char *key, const char *v)
{
	printf(",\"%s\":", key);
	if (v)
		json_str(v);
	else
		printf("null");
}

static const char *vfs_name(struct tpcc *t)
{
	sqlite3_vfs *v = NULL;
	sqlite3_file_control(t->db, "main", SQLITE_FCNTL_VFS_POINTER, &v);
	return v ? v->zName : NULL;
}

static int64_t db_bytes(struct tpcc *t)
{
	char n[32], size[32];
	if (pragma_text(t, "PRAGMA page_count", n, sizeof(n)) ||
	    pragma_text(t, "PRAGMA page_size", size, sizeof(size)))
		return -1;
	return strtoll(n, NULL, 10) * strtoll(size, NULL, 10);
}

/* The fields every line starts with. */
static void json_head(struct tpcc *t, const char *phase)
{
	static const char *const syncs[] = {"off", "normal", "full", "extra"};
	char journal[32] = "", sync[8] = "";
	pragma_text(t, "PRAGMA journal_mode", journal, sizeof(journal));
	pragma_text(t, "PRAGMA synchronous", sync, sizeof(sync));
	int si = atoi(sync);
	printf("{\"bench\":\"tpcc\",\"phase\":\"%s\"", phase);
	json_kv("label", t->o->label);
	json_kv("db", t->o->db);
	json_kv("vfs", vfs_name(t));
	json_kv("journal", journal);
	json_kv("sync", si >= 0 && si <= 3 ? syncs[si] : sync);
	printf(",\"cache_kb\":%d,\"warehouses\":%d", t->o->cache_kb, t->dm.w);
	json_num("scale", t->dm.scale);
	printf(",\"spec_compliant\":%s,\"items\":%d,\"customers_per_district\":"
	       "%d,\"seed\":%" PRIu64, t->dm.scale == 1.0 ? "true" : "false",
	       t->dm.items, t->dm.cust, t->o->seed);
}

static void json_tail(struct tpcc *t)
{
	json_kv("check", t->check_result);
	printf("}\n");
	fflush(stdout);
}

/* The load (or, with --load-only --from, the copy) line. */
static void print_load(struct tpcc *t)
{
	bool loaded = !isnan(t->load_s);
	json_head(t, loaded ? "load" : "copy");
	json_num("seconds", loaded ? t->load_s : t->copy_s);
	printf(",\"db_bytes\":%" PRId64, db_bytes(t));
	json_tail(t);
}

static void json_latency(const struct hist *h, bool all)
{
	json_num("p50_us", hist_quantile_us(h, 0.50));
	json_num("p99_us", hist_quantile_us(h, 0.99));
	if (!all)
		return;
	json_num("p999_us", hist_quantile_us(h, 0.999));
	json_num("mean_us", h->n ? (double)h->sum / (double)h->n / 1e3 : NAN);
	json_num("max_us", (double)h->max / 1e3);
}

static void print_mix(const struct stats *st)
{
	printf(",\"mix\":{");
	for (int i = 0; i < TX_NTYPES; i++)
		printf("%s\"%s\":%" PRIu64, i ? "," : "", tx_name[i], st->count[i]);
	printf("},\"by_tx\":{");
	for (int i = 0; i < TX_NTYPES; i++) {
		printf("%s\"%s\":{\"n\":%" PRIu64, i ? "," : "", tx_name[i],
		       st->count[i]);
		json_latency(&st->h[i], false);
		printf("}");
	}
	printf("}");
}

static void print_run(struct tpcc *t)
{
	static struct hist all;
	const struct stats *st = &t->stats;
	uint64_t tx = 0;
	for (int i = 0; i < TX_NTYPES; i++) {
		tx += st->count[i];
		hist_merge(&all, &st->h[i]);
	}
	double secs = st->seconds > 0 ? st->seconds : NAN;
	json_head(t, "run");
	json_num("seconds_requested", t->o->seconds);
	json_num("seconds", st->seconds);
	printf(",\"tx\":%" PRIu64, tx);
	json_num("tps", (double)tx / secs);
	json_num("tpmC", (double)st->count[TX_NEW_ORDER] * 60.0 / secs);
	print_mix(st);
	printf(",\"rollbacks\":%" PRIu64 ",\"delivery_skipped\":%" PRIu64
	       ",\"errors\":%" PRIu64, st->rollbacks, st->delivery_skipped,
	       st->errors);
	json_latency(&all, true);
	json_num("load_s", t->load_s);
	json_num("copy_s", t->copy_s);
	json_kv("first_error", t->has_err ? t->err : NULL);
	json_tail(t);
}

/* ---- main ---- */

/* Open, copy or load, run, check; each line printed when it is whole:
 * the check's result goes into the last one. */
static int tpcc_main(struct tpcc *t)
{
	const struct opts *o = t->o;
	int rc = pmtx_sqlite_register(0);
	if (rc)
		return fail_msg(t, rc, "pmtx_sqlite_register", "failed");
	if (!(rc = open_db(t)))
		rc = prepare_db(t);
	if (rc)
		return rc;
	bool fresh = !isnan(t->load_s) || !isnan(t->copy_s);
	if (!o->load_only && !isnan(t->load_s))
		print_load(t);
	if (!o->load_only && fresh && (rc = reopen(t)))
		return rc;
	if (!o->load_only && (rc = run(t)))
		return rc;
	if (o->check)
		rc = check(t);
	if (o->load_only)
		print_load(t);
	else
		print_run(t);
	return rc;
}

int main(int argc, char **argv)
{
	static struct tpcc t;
	struct opts o;
	int rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : 2;
	t.o = &o;
	t.load_s = t.copy_s = NAN;
	rc = tpcc_main(&t);
	finalize_all(&t);
	free(t.ids);
	sqlite3_close(t.db);
	return rc || t.stats.errors ? 1 : 0;
}
