/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_containers.c - libFuzzer harness: the input is a program of
 * container operations, checked against a model in DRAM.
 *
 * Design
 *  FC1. Two regions are made once per process (in /dev/shm, their files
 *       removed once they are open and mapped): an ordinary one
 *       (emulated backend, no barrier delay, lazy redo-async truncation,
 *       auto in rotation: an execution is deterministic) and a twin
 *       one. The input's first byte chooses the runtime (undo, redo,
 *       redo-async, auto, twin) and whether the hash map is made with
 *       PMTX_HMAP_LOCKED (opened with 4 stripes).
 *  FC2. Each execution creates a hash map, an ordered map (byte keys) and
 *       a list in one transaction, runs the input's operations on them
 *       and on NSTR strings of the root, and destroys them at the end:
 *       the heap then holds exactly the user blocks it held before (no
 *       leak), and pmtx_heap_check passes.
 *  FC3. Operations run alone (tx NULL: a transaction of their own) or
 *       inside a transaction the input begins; it commits or aborts it.
 *       BEGIN copies the model, ABORT restores the copy. Reads inside a
 *       transaction must see its writes.
 *  FC4. Every status is predicted by the model: a refusal (NOT_FOUND,
 *       EXISTS) where the model says so, 0 elsewhere; and every value
 *       read (get, pop, index, range, scan, a string) equals the model's.
 *       Anything else aborts (libFuzzer keeps the input), after a line on
 *       stderr saying what differed.
 *  FC5. The checkers (hmap_check, map_check, list_check) run at a CHECK
 *       op and at the end, with the whole contents compared (the ordered
 *       map's by a cursor both ways).
 *  FC6. Keys come from a universe of HKEYS (their bytes fixed by their
 *       number), so that puts meet present keys; values and elements take
 *       their length from the input and their bytes from it while it
 *       lasts (a pattern after), up to BIG bytes: larger than a list
 *       chunk, so that an element gets a chunk of its own. The ordered
 *       map's keys come from a universe of MKEYS, with values of up to
 *       MVAL bytes, and ops that put or delete a run of keys, so that its
 *       leaves split and merge.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmtx.h"
#include "pmtx_containers.h"
#include "containers/hmap.h"
#include "containers/list.h"
#include "containers/map.h"
#include "fuzz_options.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HKEYS 24
#define LMAX 48
#define NSTR 2
#define BIG 1200        /* longest value or element */
#define SMAX 6000       /* longest string */
#define MKEYS 256       /* the ordered map's keys */
#define MVAL 64         /* and its longest value */
#define REGION (4u << 20)

/* ---- the input ---- */

struct in {
	const uint8_t *p;
	size_t n, at;
};

static unsigned get8(struct in *in)
{
	return in->at < in->n ? in->p[in->at++] : 0;
}

static unsigned get16(struct in *in)
{
	unsigned a = get8(in);
	return a | get8(in) << 8;
}

/* A byte string: its length from one byte (below 192: that many bytes
 * mod 64; else up to BIG), its bytes from the input, then a pattern. */
static size_t get_bytes(struct in *in, unsigned char *b)
{
	unsigned l = get8(in);
	size_t n = l < 192 ? l % 64 : (size_t)(l - 192) * BIG / 63;
	for (size_t j = 0; j < n; j++)
		b[j] = in->at < in->n ? in->p[in->at++]
		                      : (unsigned char)(j * 7 + n);
	return n;
}

/* ---- failures (FC4) ---- */

static _Noreturn void fail(const char *what, int got, int want)
{
	fprintf(stderr, "fuzz_containers: %s: status %d (%s), the model says "
	        "%d; %s\n", what, got, pmtx_strerror(got), want,
	        pmtx_errmsg());
	abort();
}

static void expect(const char *what, int got, int want)
{
	if (got != want)
		fail(what, got, want);
}

static void same(const char *what, const void *a, size_t an, const void *b,
                 size_t bn)
{
	if (an != bn || (an && memcmp(a, b, an)))
		fail(what, (int)an, (int)bn);
}

/* ---- the model ---- */

struct val {
	uint32_t n;
	unsigned char b[BIG];
};

struct mval {
	uint8_t n;
	unsigned char b[MVAL];
};

struct model {
	uint8_t mp[MKEYS];
	struct mval mv[MKEYS];
	uint8_t present[HKEYS];
	struct val hv[HKEYS];
	unsigned ln;
	struct val l[LMAX];
	size_t sn[NSTR];
	unsigned char s[NSTR][SMAX];
};

static struct model M, saved; /* saved: at BEGIN (FC3) */

static size_t key_of(unsigned k, unsigned char *b)
{
	size_t n = 1 + k % 9;
	for (size_t j = 0; j < n; j++)
		b[j] = (unsigned char)(k * 31 + j * 5 + 1);
	return n;
}

/* The ordered map's key k: 1 to 6 bytes, so that prefixes happen; and
 * the keys in the map's order (memcmp, a prefix first). */
static size_t mkey_of(unsigned k, unsigned char *b)
{
	size_t n = 1 + k % 6;
	for (size_t j = 0; j < n; j++)
		b[j] = (unsigned char)((k >> (j % 3 * 3)) * 37 + j);
	return n;
}

static unsigned morder[MKEYS];

static int mkey_cmp(const void *a, const void *b)
{
	unsigned char x[8], y[8];
	size_t xn = mkey_of(*(const unsigned *)a, x);
	size_t yn = mkey_of(*(const unsigned *)b, y);
	int c = memcmp(x, y, xn < yn ? xn : yn);
	return c ? c : (xn > yn) - (xn < yn);
}

static unsigned mlen(void)
{
	unsigned n = 0;
	for (unsigned k = 0; k < MKEYS; k++)
		n += M.mp[k];
	return n;
}

static unsigned hlen(void)
{
	unsigned n = 0;
	for (unsigned k = 0; k < HKEYS; k++)
		n += M.present[k];
	return n;
}

static int val_eq(const struct val *v, const void *p, size_t n)
{
	return v->n == n && (!n || !memcmp(v->b, p, n));
}

/* The first element equal to (p, n) from the head, or ln. */
static unsigned l_find(const void *p, size_t n)
{
	unsigned j = 0;
	while (j < M.ln && !val_eq(&M.l[j], p, n))
		j++;
	return j;
}

static void val_set(struct val *x, const void *p, size_t n)
{
	x->n = (uint32_t)n;
	memcpy(x->b, p, n);
}

static void l_insert(unsigned at, const void *p, size_t n)
{
	memmove(&M.l[at + 1], &M.l[at], (M.ln - at) * sizeof(M.l[0]));
	val_set(&M.l[at], p, n);
	M.ln++;
}

static void l_erase(unsigned at)
{
	memmove(&M.l[at], &M.l[at + 1], (M.ln - at - 1) * sizeof(M.l[0]));
	M.ln--;
}

/* Redis's index: negative from the tail; -1 if outside. */
static long l_index(int64_t i)
{
	int64_t n = M.ln;
	if (i < 0)
		i += n;
	return i < 0 || i >= n ? -1 : (long)i;
}

/* LRANGE/LTRIM's [start, stop]: negative from the tail, then clipped to
 * the list; 0 if nothing is left. */
static int l_range(int64_t start, int64_t stop, unsigned *s, unsigned *e)
{
	int64_t n = M.ln;
	int64_t first = start < 0 ? start + n : start;
	int64_t last = stop < 0 ? stop + n : stop;
	first = first < 0 ? 0 : first;
	last = last < n ? last : n - 1;
	if (first > last)
		return 0;
	*s = (unsigned)first;
	*e = (unsigned)last;
	return 1;
}

/* The status a put with flags (NX, XX) returns, and the *existed it
 * sets, checked against the model's key (present); 1 if the put took
 * place (the key is then present) (FC4). */
static int put_done(const char *what, int rc, int existed, unsigned flags,
                    uint8_t *present)
{
	int want = (flags & PMTX_HMAP_NX) && *present    ? PMTX_E_EXISTS
	         : (flags & PMTX_HMAP_XX) && !*present ? PMTX_E_NOT_FOUND
	                                               : 0;
	expect(what, rc, want);
	if (want)
		return 0;
	if (existed != *present) {
		char label[32];
		snprintf(label, sizeof(label), "%s: existed", what);
		fail(label, existed, *present);
	}
	*present = 1;
	return 1;
}

/* ---- the regions and the containers ---- */

struct reg {
	pmtx_region *r;
	char path[64];
	pmtx_runtime rt;
};

static struct reg plain, twin;
static struct reg *R;        /* this execution's region */
static pmtx_runtime RT;      /* its transactions' runtime */
static pmtx_hmap *H;
static pmtx_map *O;
static pmtx_list *L;
static pmtx_tx *TX;          /* the input's transaction, or NULL */

struct root {
	pmtx_off hmap, list, map;
	pmtx_str s[NSTR];
};

static struct root *root(void)
{
	return pmtx_root(R->r, NULL);
}

static void remove_files(void)
{
	if (plain.path[0])
		unlink(plain.path);
	if (twin.path[0])
		unlink(twin.path);
}

static void make_region(struct reg *g, pmtx_runtime rt, size_t size)
{
	pmtx_options o = fuzz_options(sizeof(struct root), 4);
	o.runtime = rt;
	o.flags |= PMTX_OPEN_AUTO_ROTATE;
	snprintf(g->path, sizeof(g->path), "/dev/shm/pmtx-fuzz-cont-%d-%d.pmtx",
	         (int)getpid(), (int)rt);
	unlink(g->path);
	int rc = pmtx_create(g->path, size, &o, &g->r);
	if (rc)
		fail("create a region", rc, 0);
	unlink(g->path); /* mapped: nothing left, however the process ends */
	g->path[0] = '\0';
	g->rt = rt;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	atexit(remove_files);
	for (unsigned k = 0; k < MKEYS; k++)
		morder[k] = k;
	qsort(morder, MKEYS, sizeof(*morder), mkey_cmp);
	make_region(&plain, PMTX_RT_UNDO, REGION);
	make_region(&twin, PMTX_RT_TWIN, 2 * REGION);
	return 0;
}

static int count_block(pmtx_off off, size_t usable, void *arg)
{
	(void)off, (void)usable;
	++*(uint64_t *)arg;
	return 0;
}

static uint64_t user_blocks(void)
{
	uint64_t n = 0;
	pmtx_heap_walk(R->r, count_block, &n);
	return n;
}

/* The hash map and the list, made in one transaction (FC2). */
static void containers_make(unsigned locked)
{
	pmtx_cont_options o;
	pmtx_off h, l, m;
	pmtx_tx *tx;
	pmtx_cont_options_init(&o);
	o.runtime = RT;
	expect("begin", pmtx_begin(R->r, RT, &tx), 0);
	expect("hmap create", pmtx_hmap_create(tx, locked ? PMTX_HMAP_LOCKED
	                                                 : 0, &h), 0);
	expect("map create", pmtx_map_create(tx, PMTX_MAP_BYTES, &m), 0);
	expect("list create", pmtx_list_create(tx, &l), 0);
	expect("set", PMTX_SET(tx, root()->hmap, h), 0);
	expect("set", PMTX_SET(tx, root()->map, m), 0);
	expect("set", PMTX_SET(tx, root()->list, l), 0);
	expect("commit", pmtx_commit(tx), 0);
	expect("map open", pmtx_map_open(R->r, m, &o, &O), 0);
	o.stripes = locked ? 4 : 0;
	expect("hmap open", pmtx_hmap_open(R->r, h, &o, &H), 0);
	o.stripes = 0;
	expect("list open", pmtx_list_open(R->r, l, &o, &L), 0);
}

static void containers_drop(void)
{
	pmtx_tx *tx;
	pmtx_off h = root()->hmap, l = root()->list, m = root()->map;
	pmtx_hmap_close(H);
	pmtx_map_close(O);
	pmtx_list_close(L);
	H = NULL, O = NULL, L = NULL;
	expect("begin", pmtx_begin(R->r, PMTX_RT_DEFAULT, &tx), 0);
	expect("hmap destroy", pmtx_hmap_destroy(tx, h), 0);
	expect("map destroy", pmtx_map_destroy(tx, m), 0);
	expect("list destroy", pmtx_list_destroy(tx, l), 0);
	for (unsigned s = 0; s < NSTR; s++)
		expect("str clear", pmtx_str_clear(R->r, tx, &root()->s[s]), 0);
	expect("set", PMTX_SET(tx, root()->hmap, 0), 0);
	expect("set", PMTX_SET(tx, root()->map, 0), 0);
	expect("set", PMTX_SET(tx, root()->list, 0), 0);
	expect("commit", pmtx_commit(tx), 0);
}

/* ---- checks of the whole contents (FC5) ---- */

struct seen {
	uint8_t key[HKEYS];
	unsigned n;
};

static int scan_one(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	struct seen *s = arg;
	for (unsigned key = 0; key < HKEYS; key++) {
		unsigned char kb[16];
		size_t kn = key_of(key, kb);
		if (kn != k->n || memcmp(kb, k->p, kn))
			continue;
		if (!M.present[key])
			fail("scan: a key the model has not", (int)key, -1);
		same("scan: value", v->p, v->n, M.hv[key].b, M.hv[key].n);
		s->n += !s->key[key];
		s->key[key] = 1;
		return 0;
	}
	fail("scan: a key of no number", (int)k->n, -1);
}

static void check_hmap(void)
{
	struct seen s;
	uint64_t cur = 0, n;
	char why[200];
	memset(&s, 0, sizeof(s));
	if (!TX && hmap_check(H, why, sizeof(why)))
		fail(why, PMTX_E_CORRUPT, 0);
	do
		expect("scan", pmtx_hmap_scan(TX, H, cur, 5, scan_one, &s, &cur),
		       0);
	while (cur);
	expect("scan: keys", (int)s.n, (int)hlen());
	expect("hmap len", pmtx_hmap_len(TX, H, &n), 0);
	expect("hmap len: value", (int)n, (int)hlen());
}

struct lwalk {
	unsigned at;
};

static int range_one(const pmtx_bytes *v, void *arg)
{
	struct lwalk *w = arg;
	if (w->at >= M.ln)
		fail("range: more elements than the model", (int)w->at, -1);
	same("range: element", v->p, v->n, M.l[w->at].b, M.l[w->at].n);
	w->at++;
	return 0;
}

static void check_list(void)
{
	struct lwalk w = {0};
	char why[200];
	uint64_t n;
	if (!TX && list_check(L, why, sizeof(why)))
		fail(why, PMTX_E_CORRUPT, 0);
	expect("list len", pmtx_list_len(TX, L, &n), 0);
	expect("list len: value", (int)n, (int)M.ln);
	expect("range", pmtx_list_range(TX, L, 0, -1, range_one, &w), 0);
	expect("range: count", (int)w.at, (int)M.ln);
}

static void check_strings(void)
{
	for (unsigned s = 0; s < NSTR; s++) {
		pmtx_bytes v;
		expect("str get", pmtx_str_get(R->r, TX, &root()->s[s], &v), 0);
		same("str get: bytes", v.p, v.n, M.s[s], M.sn[s]);
	}
}

/* The ordered map: the checker, its length, and a cursor from each end
 * against the model in key order. */
static void check_map(void)
{
	pmtx_map_cursor c;
	char why[200];
	uint64_t n;
	int rc;
	if (!TX && map_check(O, why, sizeof(why)))
		fail(why, PMTX_E_CORRUPT, 0);
	expect("map len", pmtx_map_len(TX, O, &n), 0);
	expect("map len: value", (int)n, (int)mlen());
	for (int back = 0; back < 2; back++) {
		unsigned j = 0, seen = 0;
		rc = pmtx_map_seek(TX, O, back ? PMTX_SEEK_LAST
		                               : PMTX_SEEK_FIRST, NULL, 0, &c);
		for (; !rc; rc = back ? pmtx_map_prev(&c) : pmtx_map_next(&c)) {
			pmtx_bytes k, v;
			unsigned char kb[8];
			while (j < MKEYS &&
			       !M.mp[morder[back ? MKEYS - 1 - j : j]])
				j++;
			if (j == MKEYS)
				fail("map cursor: past the model's keys", 0, 0);
			unsigned key = morder[back ? MKEYS - 1 - j : j];
			expect("map cursor get", pmtx_map_cursor_get(&c, &k, &v),
			       0);
			same("map cursor: key", k.p, k.n, kb, mkey_of(key, kb));
			same("map cursor: value", v.p, v.n, M.mv[key].b,
			     M.mv[key].n);
			expect("map cursor: rank", (int)c.rank,
			       back ? (int)(mlen() - 1 - seen) : (int)seen);
			j++, seen++;
		}
		expect("map cursor: end", rc, PMTX_E_NOT_FOUND);
		expect("map cursor: entries", (int)seen, (int)mlen());
	}
}

static void check_all(void)
{
	check_hmap();
	check_map();
	check_list();
	check_strings();
}

/* ---- operations ---- */

enum {
	OP_BEGIN, OP_COMMIT, OP_ABORT, OP_HPUT, OP_HDEL, OP_HGET, OP_HCLEAR,
	OP_LPUSH, OP_LPOP, OP_LINDEX, OP_LSET, OP_LINSERT, OP_LREMOVE,
	OP_LTRIM, OP_LRANGE, OP_SSET, OP_SAPPEND, OP_SRANGE, OP_SCLEAR,
	OP_SREAD, OP_CHECK, OP_MPUT, OP_MDEL, OP_MGET, OP_MRANK, OP_MSEEK,
	OP_MFILL, OP_MDROP, NOPS
};

static void op_begin(void)
{
	if (TX)
		return;
	expect("begin", pmtx_begin(R->r, RT, &TX), 0);
	saved = M;
}

static void op_end(int commit)
{
	if (!TX)
		return;
	check_all();
	if (commit) {
		expect("commit", pmtx_commit(TX), 0);
	} else {
		expect("abort", pmtx_abort(TX), 0);
		M = saved;
	}
	TX = NULL;
}

static void op_hput(struct in *in)
{
	static unsigned char v[BIG];
	unsigned char kb[16];
	unsigned key = get8(in) % HKEYS, f = get8(in) % 3;
	size_t kn = key_of(key, kb), vn = get_bytes(in, v);
	unsigned flags = f == 1 ? PMTX_HMAP_NX : f == 2 ? PMTX_HMAP_XX : 0;
	int existed = -1;
	int rc = pmtx_hmap_put(TX, H, kb, kn, v, vn, flags, &existed);
	if (put_done("hput", rc, existed, flags, &M.present[key]))
		val_set(&M.hv[key], v, vn);
}

static void op_hdel(struct in *in)
{
	unsigned char kb[16];
	unsigned key = get8(in) % HKEYS;
	size_t kn = key_of(key, kb);
	expect("hdel", pmtx_hmap_del(TX, H, kb, kn),
	       M.present[key] ? 0 : PMTX_E_NOT_FOUND);
	M.present[key] = 0;
}

static void op_hget(struct in *in)
{
	unsigned char kb[16];
	unsigned key = get8(in) % HKEYS;
	size_t kn = key_of(key, kb);
	pmtx_bytes v;
	expect("hget", pmtx_hmap_get(TX, H, kb, kn, &v),
	       M.present[key] ? 0 : PMTX_E_NOT_FOUND);
	if (M.present[key])
		same("hget: value", v.p, v.n, M.hv[key].b, M.hv[key].n);
}

static void op_lpush(struct in *in)
{
	static unsigned char v[BIG];
	int end = get8(in) & 1;
	size_t n = get_bytes(in, v);
	if (M.ln == LMAX)
		return;
	expect("lpush", pmtx_list_push(TX, L, end, v, n), 0);
	l_insert(end == PMTX_LIST_TAIL ? M.ln : 0, v, n);
}

static void op_lpop(struct in *in)
{
	static unsigned char b[BIG];
	int end = get8(in) & 1;
	size_t n = 0;
	unsigned cap = get8(in) % 4 == 0 ? 5 : BIG; /* sometimes cut */
	expect("lpop", pmtx_list_pop(TX, L, end, b, cap, &n),
	       M.ln ? 0 : PMTX_E_NOT_FOUND);
	if (!M.ln)
		return;
	unsigned at = end == PMTX_LIST_TAIL ? M.ln - 1 : 0;
	expect("lpop: length", (int)n, (int)M.l[at].n);
	same("lpop: bytes", b, n < cap ? n : cap, M.l[at].b,
	     n < cap ? n : cap);
	l_erase(at);
}

static int64_t get_index(struct in *in)
{
	return (int64_t)(int8_t)get8(in);
}

static void op_lindex(struct in *in)
{
	int64_t i = get_index(in);
	long j = l_index(i);
	pmtx_bytes v;
	expect("lindex", pmtx_list_index(TX, L, i, &v),
	       j < 0 ? PMTX_E_NOT_FOUND : 0);
	if (j >= 0)
		same("lindex: element", v.p, v.n, M.l[j].b, M.l[j].n);
}

static void op_lset(struct in *in)
{
	static unsigned char v[BIG];
	int64_t i = get_index(in);
	long j = l_index(i);
	size_t n = get_bytes(in, v);
	expect("lset", pmtx_list_set(TX, L, i, v, n),
	       j < 0 ? PMTX_E_NOT_FOUND : 0);
	if (j >= 0)
		val_set(&M.l[j], v, n);
}

/* A value to look for: element number (byte) of the list, or bytes of
 * the input (odd selector). */
static size_t get_probe(struct in *in, unsigned char *b)
{
	unsigned sel = get8(in);
	if (sel & 1 || !M.ln)
		return get_bytes(in, b);
	const struct val *x = &M.l[(sel >> 1) % M.ln];
	memcpy(b, x->b, x->n);
	return x->n;
}

static void op_linsert(struct in *in)
{
	static unsigned char p[BIG], v[BIG];
	size_t pn = get_probe(in, p), n;
	int after = get8(in) & 1;
	n = get_bytes(in, v);
	if (M.ln == LMAX)
		return;
	unsigned j = l_find(p, pn);
	expect("linsert", pmtx_list_insert(TX, L, p, pn, after, v, n),
	       j == M.ln ? PMTX_E_NOT_FOUND : 0);
	if (j < M.ln)
		l_insert(j + (after != 0), v, n);
}

static void op_lremove(struct in *in)
{
	static unsigned char p[BIG];
	size_t pn = get_probe(in, p);
	int64_t count = (int64_t)(int8_t)get8(in) % 4;
	uint64_t left = count == 0 ? UINT64_MAX
	              : count < 0 ? (uint64_t)-count : (uint64_t)count;
	uint64_t removed = 0, want = 0;
	expect("lremove", pmtx_list_remove(TX, L, p, pn, count, &removed), 0);
	if (count >= 0) {
		for (unsigned j = 0; j < M.ln && left;)
			if (val_eq(&M.l[j], p, pn))
				l_erase(j), left--, want++;
			else
				j++;
	} else {
		for (unsigned j = M.ln; j-- > 0 && left;)
			if (val_eq(&M.l[j], p, pn))
				l_erase(j), left--, want++;
	}
	expect("lremove: removed", (int)removed, (int)want);
}

static void op_ltrim(struct in *in)
{
	int64_t a = get_index(in) % 16, b = get_index(in) % 16;
	unsigned s, e;
	expect("ltrim", pmtx_list_trim(TX, L, a, b), 0);
	if (!l_range(a, b, &s, &e)) {
		M.ln = 0;
		return;
	}
	memmove(M.l, &M.l[s], (e - s + 1) * sizeof(M.l[0]));
	M.ln = e - s + 1;
}

struct rwalk {
	unsigned at, end;
};

static int lrange_one(const pmtx_bytes *v, void *arg)
{
	struct rwalk *w = arg;
	if (w->at > w->end)
		fail("lrange: past the range", (int)w->at, (int)w->end);
	same("lrange: element", v->p, v->n, M.l[w->at].b, M.l[w->at].n);
	w->at++;
	return 0;
}

static void op_lrange(struct in *in)
{
	int64_t a = get_index(in), b = get_index(in);
	unsigned s = 0, e = 0;
	int some = l_range(a, b, &s, &e);
	struct rwalk w = {s, some ? e : 0};
	expect("lrange", pmtx_list_range(TX, L, a, b, lrange_one, &w), 0);
	expect("lrange: count", (int)(w.at - s), some ? (int)(e - s + 1) : 0);
}

/* String s's new bytes: [at, at + n) of b, zeros between its end and at
 * (setrange), or clear when it would pass SMAX. 0 if it changes. */
static int s_model(unsigned s, size_t at, const unsigned char *b, size_t n)
{
	if (at + n > SMAX)
		return -1;
	if (at > M.sn[s])
		memset(M.s[s] + M.sn[s], 0, at - M.sn[s]);
	memcpy(M.s[s] + at, b, n);
	if (at + n > M.sn[s])
		M.sn[s] = at + n;
	return 0;
}

static void op_string(struct in *in, int kind)
{
	static unsigned char b[BIG];
	unsigned s = get8(in) % NSTR;
	size_t at = get16(in) % (SMAX / 2), n;
	pmtx_str *v = &root()->s[s];
	n = get_bytes(in, b);
	switch (kind) {
	case OP_SSET:
		expect("sset", pmtx_str_set(R->r, TX, v, b, n), 0);
		M.sn[s] = 0;
		s_model(s, 0, b, n);
		return;
	case OP_SAPPEND:
		if (M.sn[s] + n > SMAX)
			return;
		expect("sappend", pmtx_str_append(R->r, TX, v, b, n), 0);
		s_model(s, M.sn[s], b, n);
		return;
	case OP_SRANGE:
		if (at + n > SMAX)
			return;
		expect("ssetrange", pmtx_str_setrange(R->r, TX, v, at, b, n), 0);
		if (n)
			s_model(s, at, b, n);
		return;
	default:
		expect("sclear", pmtx_str_clear(R->r, TX, v), 0);
		M.sn[s] = 0;
		return;
	}
}

static void op_sread(struct in *in)
{
	static unsigned char b[SMAX];
	unsigned s = get8(in) % NSTR;
	size_t at = get16(in) % (SMAX / 2), n = get16(in) % SMAX, got = 0,
	       want = at < M.sn[s] ? M.sn[s] - at : 0;
	size_t len;
	want = want < n ? want : n;
	expect("sread", pmtx_str_read(R->r, TX, &root()->s[s], at, b, n, &got),
	       0);
	same("sread: bytes", b, got, M.s[s] + at, want);
	expect("slen", pmtx_str_len(R->r, TX, &root()->s[s], &len), 0);
	expect("slen: value", (int)len, (int)M.sn[s]);
}

static void m_put(unsigned key, unsigned flags, const unsigned char *v,
                  size_t vn)
{
	unsigned char kb[8];
	size_t kn = mkey_of(key, kb);
	int existed = -1;
	int rc = pmtx_map_put(TX, O, kb, kn, v, vn, flags, &existed);
	if (!put_done("mput", rc, existed, flags, &M.mp[key]))
		return;
	M.mv[key].n = (uint8_t)vn;
	memcpy(M.mv[key].b, v, vn);
}

static void m_del(unsigned key)
{
	unsigned char kb[8];
	size_t kn = mkey_of(key, kb);
	expect("mdel", pmtx_map_del(TX, O, kb, kn),
	       M.mp[key] ? 0 : PMTX_E_NOT_FOUND);
	M.mp[key] = 0;
}

/* MPUT, MDEL, MGET, MRANK, MSEEK on one key; MFILL and MDROP on a run
 * of keys in the map's order (so that leaves split and merge). */
static void op_map(struct in *in, int op)
{
	static unsigned char v[BIG];
	unsigned key = get8(in) % MKEYS, f = get8(in) % 3, n;
	unsigned flags = f == 1 ? PMTX_HMAP_NX : f == 2 ? PMTX_HMAP_XX : 0;
	unsigned char kb[8];
	size_t kn = mkey_of(key, kb), vn;
	pmtx_bytes got;
	uint64_t rank, want = 0;
	pmtx_map_cursor c;
	switch (op) {
	case OP_MPUT:
		vn = get_bytes(in, v) % (MVAL + 1);
		m_put(key, flags, v, vn);
		return;
	case OP_MDEL:
		m_del(key);
		return;
	case OP_MGET:
		expect("mget", pmtx_map_get(TX, O, kb, kn, &got),
		       M.mp[key] ? 0 : PMTX_E_NOT_FOUND);
		if (M.mp[key])
			same("mget: value", got.p, got.n, M.mv[key].b,
			     M.mv[key].n);
		return;
	case OP_MRANK: /* keys below (or at, INCL) */
		expect("mrank", pmtx_map_rank(TX, O, kb, kn, f & 1, &rank), 0);
		for (unsigned j = 0; j < MKEYS; j++) {
			unsigned k = morder[j];
			if (k == key) {
				want += (f & 1) && M.mp[k];
				break;
			}
			want += M.mp[k];
		}
		expect("mrank: value", (int)rank, (int)want);
		return;
	case OP_MSEEK: { /* the first key >= key */
		unsigned j = 0;
		while (morder[j] != key)
			j++;
		while (j < MKEYS && !M.mp[morder[j]])
			j++;
		int rc = pmtx_map_seek(TX, O, PMTX_SEEK_GE, kb, kn, &c);
		expect("mseek", rc, j < MKEYS ? 0 : PMTX_E_NOT_FOUND);
		if (j < MKEYS) {
			expect("mseek get", pmtx_map_cursor_get(&c, &got, NULL),
			       0);
			same("mseek: key", got.p, got.n, kb,
			     mkey_of(morder[j], kb));
		}
		return;
	}
	default: { /* MFILL, MDROP: n keys from key on, in key order */
		unsigned at = 0;
		n = 1 + get8(in) % 64;
		while (morder[at] != key)
			at++;
		for (unsigned j = 0; at < MKEYS && j < n; at++, j++) {
			unsigned k = morder[at];
			unsigned char b[4] = {(unsigned char)k, (unsigned char)j,
			                      1, 2};
			if (op == OP_MFILL)
				m_put(k, 0, b, 1 + (k + j) % 4);
			else if (M.mp[k])
				m_del(k);
		}
		return;
	}
	}
}

static void run_op(struct in *in)
{
	int op = (int)(get8(in) % NOPS);
	switch (op) {
	case OP_BEGIN: op_begin(); break;
	case OP_COMMIT: op_end(1); break;
	case OP_ABORT: op_end(0); break;
	case OP_HPUT: op_hput(in); break;
	case OP_HDEL: op_hdel(in); break;
	case OP_HGET: op_hget(in); break;
	case OP_HCLEAR:
		expect("hclear", pmtx_hmap_clear(TX, H), 0);
		memset(M.present, 0, sizeof(M.present));
		break;
	case OP_LPUSH: op_lpush(in); break;
	case OP_LPOP: op_lpop(in); break;
	case OP_LINDEX: op_lindex(in); break;
	case OP_LSET: op_lset(in); break;
	case OP_LINSERT: op_linsert(in); break;
	case OP_LREMOVE: op_lremove(in); break;
	case OP_LTRIM: op_ltrim(in); break;
	case OP_LRANGE: op_lrange(in); break;
	case OP_SREAD: op_sread(in); break;
	case OP_CHECK: check_all(); break;
	case OP_MPUT:
	case OP_MDEL:
	case OP_MGET:
	case OP_MRANK:
	case OP_MSEEK:
	case OP_MFILL:
	case OP_MDROP: op_map(in, op); break;
	default: op_string(in, op); break; /* SSET .. SCLEAR */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const pmtx_runtime rts[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
	                                   PMTX_RT_REDO_ASYNC, PMTX_RT_AUTO,
	                                   PMTX_RT_TWIN};
	struct in in = {data, size, 0};
	unsigned head = get8(&in);
	RT = rts[head % 5];
	R = RT == PMTX_RT_TWIN ? &twin : &plain;
	memset(&M, 0, sizeof(M));
	uint64_t before = user_blocks();
	containers_make(head / 5 % 2);
	while (in.at < in.n)
		run_op(&in);
	op_end(get8(&in) & 1);
	check_all();
	containers_drop();
	pmtx_heap_stats hs;
	if (pmtx_heap_check(R->r, &hs))
		fail(hs.first_error, PMTX_E_CORRUPT, 0);
	expect("user blocks after the containers are gone",
	       (int)user_blocks(), (int)before);
	return 0;
}
