/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * leaderboard.c - players' scores, ranked, that survive kill -9: two
 * crash-safe containers (pmtx_containers.h) changed in one transaction.
 *
 *   ranking  an ordered map of kind PMTX_MAP_SCORE: (score, player) -> the
 *            sequence number of the update that set it (8 bytes, kept in
 *            the leaf: PMTX_MAP_VAL_U64). Its order is a sorted set's: by
 *            score, then by name; ranks come from the tree's counts.
 *   players  a hash map: player -> { score, seq }.
 * An update reads the player's old score from the hash map, deletes the
 * old key from the ranking, puts the new one, puts the new entry, and
 * counts the update in the root (seq), all in one transaction: after a
 * crash the two maps agree, whatever the moment of the crash.
 *
 *   pmtx-leaderboard [--path FILE] add PLAYER SCORE
 *                                  top N
 *                                  rank PLAYER
 *                                  between LO HI
 *                                  stress COUNT [PLAYERS [SEED]]
 *                                  check
 *                                  dump
 *
 * Ranks count from 1, the best score first. stress makes COUNT random
 * updates and prints "ack SEQ PLAYER SCORE" after each commit (the update
 * is durable by then); check verifies that the maps agree and that the
 * ranks are consistent. examples/leaderboard.cpp is the same program on
 * the C++ header, with the same region layout: either one opens the
 * other's file.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmtx.h"
#include "pmtx_containers.h"

#define LB_LAYOUT "pmtx-leaderboard"
#define LB_NAME_MAX 64
#define LB_KEY_MAX (sizeof(double) + LB_NAME_MAX)

struct lb_root {
	pmtx_off ranking; /* ordered map, (score, player) -> seq */
	pmtx_off players; /* hash map, player -> struct lb_entry */
	uint64_t seq;     /* updates made so far */
};

struct lb_entry {
	double score;
	uint64_t seq;
};

struct lb {
	pmtx_region *r;
	struct lb_root *root;
	pmtx_map *ranking;
	pmtx_hmap *players;
};

static int fail(const char *what, int rc)
{
	fprintf(stderr, "pmtx-leaderboard: %s: %s\n", what, pmtx_strerror(rc));
	return 1;
}

/* A ranking key: the score's 8 bytes, then the name. */
static size_t lb_key(unsigned char *key, double score, const char *name)
{
	size_t n = strlen(name);
	memcpy(key, &score, sizeof score);
	memcpy(key + sizeof score, name, n);
	return sizeof score + n;
}

/* Shortest of %.15g and %.17g that reads back as the same double. */
static const char *fmt_score(double s, char buf[32])
{
	snprintf(buf, 32, "%.15g", s);
	if (strtod(buf, NULL) != s)
		snprintf(buf, 32, "%.17g", s);
	return buf;
}

/* ------------------------------------------------------------------------
 * Opening: the region, then both maps, created together the first time.
 * ---------------------------------------------------------------------- */
static int lb_create_maps(struct lb *lb)
{
	pmtx_tx *tx;
	pmtx_off ranking, players;
	int rc = pmtx_begin(lb->r, PMTX_RT_DEFAULT, &tx);
	if (rc)
		return rc;
	rc = pmtx_map_create(tx, PMTX_MAP_SCORE | PMTX_MAP_VAL_U64, &ranking);
	if (!rc)
		rc = pmtx_hmap_create(tx, 0, &players);
	if (!rc)
		rc = TXN_SET(tx, lb->root, ranking, ranking);
	if (!rc)
		rc = TXN_SET(tx, lb->root, players, players);
	if (rc) {
		pmtx_abort(tx);
		return rc;
	}
	return pmtx_commit(tx);
}

static int lb_open(struct lb *lb, const char *path)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.layout = LB_LAYOUT;
	o.root_size = sizeof(struct lb_root);
	o.max_size = (size_t)1 << 30;
	int rc = pmtx_open(path, &o, &lb->r);
	if (rc == ENOENT)
		rc = pmtx_create(path, (size_t)16 << 20, &o, &lb->r);
	if (rc) {
		fprintf(stderr, "pmtx-leaderboard: %s: %s %s\n", path,
		        pmtx_strerror(rc), pmtx_errmsg());
		return rc;
	}
	lb->root = pmtx_root(lb->r, NULL);
	if (!lb->root->ranking && (rc = lb_create_maps(lb)))
		return fail("create", rc);
	rc = pmtx_map_open(lb->r, lb->root->ranking, NULL, &lb->ranking);
	if (!rc)
		rc = pmtx_hmap_open(lb->r, lb->root->players, NULL, &lb->players);
	return rc ? fail("open", rc) : 0;
}

static void lb_close(struct lb *lb)
{
	pmtx_map_close(lb->ranking);
	pmtx_hmap_close(lb->players);
	pmtx_close(lb->r);
}

/* ------------------------------------------------------------------------
 * The update: both maps and the root, in one transaction.
 * ---------------------------------------------------------------------- */
static int lb_update(pmtx_tx *tx, struct lb *lb, const char *name,
                     double score, uint64_t seq)
{
	unsigned char key[LB_KEY_MAX];
	size_t nlen = strlen(name);
	pmtx_bytes v;
	int rc = pmtx_hmap_get(tx, lb->players, name, nlen, &v);
	if (rc == 0) {
		struct lb_entry old;
		memcpy(&old, v.p, sizeof old);
		rc = pmtx_map_del(tx, lb->ranking, key,
		                  lb_key(key, old.score, name));
	} else if (rc == PMTX_E_NOT_FOUND) {
		rc = 0;
	}
	if (!rc)
		rc = pmtx_map_put(tx, lb->ranking, key, lb_key(key, score, name),
		                  &seq, sizeof seq, 0, NULL);
	struct lb_entry e = {score, seq};
	if (!rc)
		rc = pmtx_hmap_put(tx, lb->players, name, nlen, &e, sizeof e, 0,
		                   NULL);
	if (!rc)
		rc = TXN_SET(tx, lb->root, seq, seq);
	return rc;
}

static int lb_set(struct lb *lb, const char *name, double score,
                  uint64_t *seq)
{
	if (strlen(name) > LB_NAME_MAX || isnan(score))
		return PMTX_E_INVAL;
	pmtx_tx *tx;
	int rc = pmtx_begin(lb->r, PMTX_RT_DEFAULT, &tx);
	if (rc)
		return rc;
	rc = pmtx_read(tx, seq, &lb->root->seq, sizeof *seq);
	*seq += 1;
	if (!rc)
		rc = lb_update(tx, lb, name, score, *seq);
	if (rc) {
		pmtx_abort(tx);
		return rc;
	}
	return pmtx_commit(tx);
}

/* ------------------------------------------------------------------------
 * Queries.
 * ---------------------------------------------------------------------- */
static uint64_t lb_count(struct lb *lb)
{
	uint64_t n = 0;
	pmtx_map_len(NULL, lb->ranking, &n);
	return n;
}

/* Print the entry at c as "RANK PLAYER SCORE" (rank 1: the best). */
static void lb_print(const pmtx_map_cursor *c, uint64_t n, int with_seq)
{
	pmtx_bytes k, v;
	if (pmtx_map_cursor_get(c, &k, &v))
		return;
	double score;
	uint64_t seq;
	char buf[32];
	memcpy(&score, k.p, sizeof score);
	memcpy(&seq, v.p, sizeof seq);
	printf("%llu %.*s %s", (unsigned long long)(n - c->rank),
	       (int)(k.n - sizeof score), (const char *)k.p + sizeof score,
	       fmt_score(score, buf));
	if (with_seq)
		printf(" %llu", (unsigned long long)seq);
	printf("\n");
}

static int cmd_top(struct lb *lb, uint64_t count)
{
	uint64_t n = lb_count(lb);
	pmtx_map_cursor c;
	int rc = pmtx_map_seek(NULL, lb->ranking, PMTX_SEEK_LAST, NULL, 0, &c);
	for (uint64_t i = 0; !rc && i < count; i++) {
		lb_print(&c, n, 0);
		rc = pmtx_map_prev(&c);
	}
	return rc && rc != PMTX_E_NOT_FOUND ? fail("top", rc) : 0;
}

static int cmd_rank(struct lb *lb, const char *name)
{
	pmtx_bytes v;
	int rc = pmtx_hmap_get(NULL, lb->players, name, strlen(name), &v);
	if (rc == PMTX_E_NOT_FOUND) {
		printf("%s: no score\n", name);
		return 0;
	}
	struct lb_entry e;
	memcpy(&e, v.p, sizeof e);
	unsigned char key[LB_KEY_MAX];
	pmtx_map_cursor c;
	rc = rc ? rc : pmtx_map_seek(NULL, lb->ranking, PMTX_SEEK_GE, key,
	                             lb_key(key, e.score, name), &c);
	if (rc)
		return fail("rank", rc);
	lb_print(&c, lb_count(lb), 0);
	return 0;
}

/* Players with lo <= score <= hi, best first. */
static int cmd_between(struct lb *lb, double lo, double hi)
{
	uint64_t n = lb_count(lb);
	unsigned char key[LB_KEY_MAX];
	pmtx_map_cursor c;
	/* the last key below (next double above hi, "") */
	double above = nextafter(hi, INFINITY);
	int rc = isinf(hi) && hi > 0
	                 ? pmtx_map_seek(NULL, lb->ranking, PMTX_SEEK_LAST,
	                                 NULL, 0, &c)
	                 : pmtx_map_seek(NULL, lb->ranking, PMTX_SEEK_LT, key,
	                                 lb_key(key, above, ""), &c);
	while (!rc) {
		pmtx_bytes k, v;
		double score;
		if ((rc = pmtx_map_cursor_get(&c, &k, &v)))
			break;
		memcpy(&score, k.p, sizeof score);
		if (score < lo)
			break;
		lb_print(&c, n, 0);
		rc = pmtx_map_prev(&c);
	}
	return rc && rc != PMTX_E_NOT_FOUND ? fail("between", rc) : 0;
}

static int cmd_dump(struct lb *lb)
{
	uint64_t n = lb_count(lb);
	pmtx_map_cursor c;
	int rc = pmtx_map_seek(NULL, lb->ranking, PMTX_SEEK_LAST, NULL, 0, &c);
	while (!rc) {
		lb_print(&c, n, 1);
		rc = pmtx_map_prev(&c);
	}
	return rc && rc != PMTX_E_NOT_FOUND ? fail("dump", rc) : 0;
}

/* ------------------------------------------------------------------------
 * check: the maps agree and the ranks are consistent.
 * ---------------------------------------------------------------------- */
struct scan_state {
	struct lb *lb;
	uint64_t seen;
	const char *bad;
};

/* Every player's entry has its key in the ranking, with the same seq. */
static int check_player(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	struct scan_state *s = arg;
	struct lb_entry e;
	unsigned char key[LB_KEY_MAX];
	char name[LB_NAME_MAX + 1];
	pmtx_bytes got;
	if (v->n != sizeof e || k->n > LB_NAME_MAX) {
		s->bad = "a player's entry has a wrong size";
		return 1;
	}
	memcpy(&e, v->p, sizeof e);
	memcpy(name, k->p, k->n);
	name[k->n] = '\0';
	if (pmtx_map_get(NULL, s->lb->ranking, key, lb_key(key, e.score, name),
	                 &got) ||
	    memcmp(got.p, &e.seq, sizeof e.seq) != 0) {
		s->bad = "a player's score is not in the ranking";
		return 1;
	}
	if (e.seq > s->lb->root->seq) {
		s->bad = "a player's update is newer than the root's count";
		return 1;
	}
	s->seen++;
	return 0;
}

/* Walk the ranking in order: entry i has rank i by the cursor, by
 * pmtx_map_rank and by pmtx_map_seek_rank, and its player's entry. */
static const char *check_ranking(struct lb *lb, uint64_t n)
{
	pmtx_map_cursor c, d;
	uint64_t i = 0;
	int rc = pmtx_map_seek(NULL, lb->ranking, PMTX_SEEK_FIRST, NULL, 0, &c);
	for (; !rc; i++, rc = pmtx_map_next(&c)) {
		pmtx_bytes k, v, dk, dv, pv;
		uint64_t r;
		struct lb_entry e;
		double score;
		if (pmtx_map_cursor_get(&c, &k, &v) || c.rank != i)
			return "a cursor's rank is not its position";
		if (pmtx_map_rank(NULL, lb->ranking, k.p, k.n, 0, &r) || r != i)
			return "pmtx_map_rank is not the position";
		if (pmtx_map_seek_rank(NULL, lb->ranking, i, &d) ||
		    pmtx_map_cursor_get(&d, &dk, &dv) || dk.n != k.n ||
		    memcmp(dk.p, k.p, k.n) != 0)
			return "pmtx_map_seek_rank finds another key";
		memcpy(&score, k.p, sizeof score);
		if (pmtx_hmap_get(NULL, lb->players, (const char *)k.p + 8,
		                  k.n - 8, &pv) || pv.n != sizeof e)
			return "a ranked player has no entry";
		memcpy(&e, pv.p, sizeof e);
		if (memcmp(&e.score, &score, sizeof score) != 0 ||
		    memcmp(&e.seq, v.p, sizeof e.seq) != 0)
			return "a ranked player's entry differs";
	}
	if (rc != PMTX_E_NOT_FOUND)
		return "the walk failed";
	return i == n ? NULL : "the walk's length is not the count";
}

static int cmd_check(struct lb *lb)
{
	uint64_t nmap = 0, nhash = 0, next = 0;
	pmtx_map_len(NULL, lb->ranking, &nmap);
	pmtx_hmap_len(NULL, lb->players, &nhash);
	const char *bad = nmap != nhash ? "the two maps' counts differ" : NULL;
	if (!bad)
		bad = check_ranking(lb, nmap);
	struct scan_state s = {lb, 0, NULL};
	uint64_t cursor = 0;
	do {
		if (!bad && pmtx_hmap_scan(NULL, lb->players, cursor, 64,
		                           check_player, &s, &next))
			bad = s.bad ? s.bad : "the scan failed";
		cursor = next;
	} while (!bad && cursor);
	if (!bad && s.seen != nhash)
		bad = "the scan does not return every player once";
	if (bad) {
		printf("FAIL: %s\n", bad);
		return 1;
	}
	printf("ok %llu players, %llu updates\n", (unsigned long long)nmap,
	       (unsigned long long)lb->root->seq);
	return 0;
}

static int usage(void)
{
	fprintf(stderr,
	        "usage: pmtx-leaderboard [--path FILE] add PLAYER SCORE | "
	        "top N | rank PLAYER | between LO HI |\n"
	        "       stress COUNT [PLAYERS [SEED]] | check | dump\n");
	return 2;
}

/* ------------------------------------------------------------------------
 * stress: random updates, each acknowledged once durable.
 * ---------------------------------------------------------------------- */
static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int cmd_stress(struct lb *lb, uint64_t count, unsigned players,
                      uint64_t seed)
{
	uint64_t s = seed ^ lb->root->seq; /* a restart draws anew */
	if (players == 0)
		return usage();
	for (uint64_t i = 0; i < count; i++) {
		char name[32], buf[32];
		snprintf(name, sizeof name, "player-%u",
		         (unsigned)(splitmix(&s) % players));
		double score =
			(double)((int64_t)(splitmix(&s) % 20001) - 10000) / 10;
		uint64_t seq;
		int rc = lb_set(lb, name, score, &seq);
		if (rc)
			return fail("stress", rc);
		printf("ack %llu %s %s\n", (unsigned long long)seq, name,
		       fmt_score(score, buf));
		fflush(stdout);
	}
	return 0;
}

static int run(struct lb *lb, int argc, char **argv)
{
	const char *cmd = argv[0];
	if (!strcmp(cmd, "add") && argc == 3) {
		uint64_t seq;
		int rc = lb_set(lb, argv[1], strtod(argv[2], NULL), &seq);
		return rc ? fail("add", rc) : cmd_rank(lb, argv[1]);
	}
	if (!strcmp(cmd, "top") && argc == 2)
		return cmd_top(lb, strtoull(argv[1], NULL, 10));
	if (!strcmp(cmd, "rank") && argc == 2)
		return cmd_rank(lb, argv[1]);
	if (!strcmp(cmd, "between") && argc == 3)
		return cmd_between(lb, strtod(argv[1], NULL),
		                   strtod(argv[2], NULL));
	if (!strcmp(cmd, "stress") && argc >= 2 && argc <= 4)
		return cmd_stress(lb, strtoull(argv[1], NULL, 10),
		                  argc > 2 ? (unsigned)atoi(argv[2]) : 100,
		                  argc > 3 ? strtoull(argv[3], NULL, 10) : 1);
	if (!strcmp(cmd, "check") && argc == 1)
		return cmd_check(lb);
	if (!strcmp(cmd, "dump") && argc == 1)
		return cmd_dump(lb);
	return usage();
}

int main(int argc, char **argv)
{
	const char *path = "leaderboard.pmtx";
	int a = 1;
	if (a + 1 < argc && !strcmp(argv[a], "--path")) {
		path = argv[a + 1];
		a += 2;
	}
	if (a >= argc)
		return usage();
	struct lb lb;
	if (lb_open(&lb, path))
		return 1;
	int rc = run(&lb, argc - a, argv + a);
	lb_close(&lb);
	return rc;
}
