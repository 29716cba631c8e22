/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cltx.c - cache-line transactions (include/pmtx_cltx.h): their cost
 * in barriers and flushed lines, begin/commit/abort semantics, the seed's
 * bounded buffer (examples/bbuf.c, included here), and crashes: every
 * program-order prefix of the stores to a line leaves the valid half whole,
 * and so do 100 SIGKILLs of a process that runs the bounded buffer.
 *
 * Built twice: test_cltx (the one-barrier commit of x86) and
 * test_cltx_strict (PMTX_CLTX_STRICT_ORDER: the two-barrier commit of
 * weakly ordered CPUs). PMTX_CLTX_BARRIERS says which one is tested.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "pmtx_cltx.h"

#define PMTX_BBUF_NO_MAIN
#include "../examples/bbuf.c"

/* 24 bytes, 8-byte aligned: the other shape besides bbuf's 31 x 1. */
struct trio {
	uint64_t a, b, c;
};
PMTX_CLTX_DECLARE(trio_line, struct trio)

#define NLINES 4

struct fixture {
	const char *path;
	pmtx_region *r;
	struct trio_line *t;  /* line 0 of the root */
	struct bbuf_line *bb; /* line 1 */
};

static struct fixture make(pmtx_domain d, pmtx_backend b)
{
	struct fixture f;
	f.r = tu_create(&f.path, 8 << 20, PMTX_CLTX_ROOM(NLINES), d, b,
	                PMTX_RT_UNDO);
	char *line = pmtx_cltx_align(pmtx_root(f.r, NULL));
	f.t = (struct trio_line *)(void *)line;
	f.bb = (struct bbuf_line *)(void *)(line + PMTX_CLTX_LINE);
	return f;
}

static void reopen(struct fixture *f)
{
	assert_int_equal(pmtx_close(f->r), 0);
	f->r = tu_open(f->path);
	char *line = pmtx_cltx_align(pmtx_root(f->r, NULL));
	f->t = (struct trio_line *)(void *)line;
	f->bb = (struct bbuf_line *)(void *)(line + PMTX_CLTX_LINE);
}

static void drop(struct fixture *f)
{
	tu_close_and_remove(f->r, f->path);
}

static int trio_eq(const struct trio *x, uint64_t a, uint64_t b, uint64_t c)
{
	return x->a == a && x->b == b && x->c == c;
}

/* ---- layout ---- */

static void layout_is_two_halves_and_an_index_in_one_line(void **state)
{
	assert_int_equal(sizeof(struct trio_line), 64);
	assert_int_equal(_Alignof(struct bbuf_line), 64);
	assert_int_equal(offsetof(struct trio_line, pmtx_half1), 32);
	assert_int_equal(offsetof(struct trio_line, pmtx_index), 56);
	assert_int_equal(offsetof(struct bbuf_line, pmtx_index), 63);
	/* a 16-byte-aligned block of PMTX_CLTX_ROOM(1) at any offset */
	_Alignas(64) char buf[PMTX_CLTX_ROOM(1) + 64];
	for (size_t i = 0; i < 64; i += 16) {
		char *p = pmtx_cltx_align(buf + i);
		assert_int_equal((uintptr_t)p % 64, 0);
		assert_true(p >= buf + i && p + 64 <= buf + i + PMTX_CLTX_ROOM(1));
	}
	assert_int_equal(pmtx_cltx_align_off(4096 + 16), 4096 + 64);
	assert_int_equal(pmtx_cltx_align_off(4096), 4096);
}

/* C5: a zero line (fresh root) is valid and holds zeros. */
static void zero_line_is_valid_and_zero(void **state)
{
	struct fixture f = make(PMTX_PDOM1, PMTX_BACKEND_HARDWARE);
	assert_true(trio_eq(trio_line_valid(f.t), 0, 0, 0));
	const struct bbuf *b = bbuf_line_valid(f.bb);
	assert_int_equal(bbuf_count(b), 0);
	assert_true(bbuf_consistent(b));
	drop(&f);
}

/* ---- cost ---- */

static void check_commit_cost(pmtx_domain d, pmtx_backend b)
{
	struct fixture f = make(d, b);
	for (int i = 1; i <= 5; i++) {
		tu_count_start();
		struct trio *w = trio_line_begin(f.t);
		w->a = (uint64_t)i, w->c = (uint64_t)i * 3;
		assert_int_equal(trio_line_commit(f.r, f.t), 0);
		pmtx_counters c = tu_count();
		assert_int_equal(c.barriers, PMTX_CLTX_BARRIERS);
		assert_int_equal(c.flushes,
		                 d == PMTX_PDOM2 ? 0 : PMTX_CLTX_BARRIERS);
		assert_int_equal(c.bytes_logged, 0);
		assert_int_equal(c.nt_bytes, 0);
		if (b == PMTX_BACKEND_FILE && d != PMTX_PDOM2)
			assert_int_equal(c.msyncs, PMTX_CLTX_BARRIERS);
		assert_true(trio_eq(trio_line_valid(f.t), (uint64_t)i, 0,
		                    (uint64_t)i * 3));
	}
	drop(&f);
}

static void commit_costs_one_barrier_and_one_line(void **state)
{
	check_commit_cost(PMTX_PDOM1, PMTX_BACKEND_HARDWARE);
	check_commit_cost(PMTX_PDOM0, PMTX_BACKEND_HARDWARE);
	check_commit_cost(PMTX_PDOM2, PMTX_BACKEND_HARDWARE);
	check_commit_cost(PMTX_PDOM1, PMTX_BACKEND_FILE);
	check_commit_cost(PMTX_PDOM1, PMTX_BACKEND_EMULATED);
}

static void abort_costs_nothing_and_keeps_the_valid_half(void **state)
{
	struct fixture f = make(PMTX_PDOM1, PMTX_BACKEND_HARDWARE);
	struct trio *w = trio_line_begin(f.t);
	w->a = 1, w->b = 2, w->c = 3;
	assert_int_equal(trio_line_commit(f.r, f.t), 0);
	unsigned char before[64];
	memcpy(before, f.t, 64);
	tu_count_start();
	w = trio_line_begin(f.t);
	w->a = 10, w->b = 20;
	trio_line_abort(f.t);
	pmtx_counters c = tu_count();
	assert_int_equal(c.barriers, 0);
	assert_int_equal(c.flushes, 0);
	assert_true(trio_eq(trio_line_valid(f.t), 1, 2, 3));
	/* only the working half changed */
	const unsigned char *now = (const unsigned char *)f.t;
	size_t wo = (size_t)((const char *)w - (const char *)f.t);
	for (size_t i = 0; i < 64; i++)
		if (i < wo || i >= wo + sizeof(struct trio))
			assert_int_equal(now[i], before[i]);
	/* the next transaction starts again from the valid half */
	w = trio_line_begin(f.t);
	assert_true(trio_eq(w, 1, 2, 3));
	trio_line_abort(f.t);
	reopen(&f);
	assert_true(trio_eq(trio_line_valid(f.t), 1, 2, 3));
	drop(&f);
}

/* ---- semantics ---- */

static void begin_copies_the_valid_half_to_the_other_half(void **state)
{
	struct fixture f = make(PMTX_PDOM1, PMTX_BACKEND_HARDWARE);
	for (uint64_t i = 1; i <= 6; i++) {
		const struct trio *v = trio_line_valid(f.t);
		/* scribble on the working half: begin must overwrite it */
		struct trio *other = v == &f.t->pmtx_half0 ? &f.t->pmtx_half1
		                                           : &f.t->pmtx_half0;
		memset(other, 0xa5, sizeof(*other));
		struct trio *w = trio_line_begin(f.t);
		assert_ptr_equal(w, other);
		assert_memory_equal(w, v, sizeof(*w));
		w->b = i;
		/* writes go to the working half only (C1) */
		assert_true(trio_eq(trio_line_valid(f.t), i - 1 ? 7 : 0,
		                    i - 1, 0));
		w->a = 7;
		assert_int_equal(trio_line_commit(f.r, f.t), 0);
		assert_ptr_equal(trio_line_valid(f.t), w);
	}
	drop(&f);
}

static void commit_flips_and_the_new_value_survives_reopen(void **state)
{
	const pmtx_backend backends[] = {PMTX_BACKEND_HARDWARE,
	                                 PMTX_BACKEND_FILE};
	for (size_t k = 0; k < 2; k++) {
		struct fixture f = make(PMTX_PDOM1, backends[k]);
		for (uint64_t i = 1; i <= 9; i++) {
			unsigned idx = f.t->pmtx_index & 1u;
			struct trio *w = trio_line_begin(f.t);
			w->a = i, w->b = i * i, w->c = ~i;
			assert_int_equal(trio_line_commit(f.r, f.t), 0);
			assert_int_equal(f.t->pmtx_index & 1u, idx ^ 1u);
			struct trio got;
			trio_line_get(f.t, &got);
			assert_true(trio_eq(&got, i, i * i, ~i));
			if (i % 3 == 0) {
				reopen(&f);
				assert_true(trio_eq(trio_line_valid(f.t), i,
				                    i * i, ~i));
			}
		}
		drop(&f);
	}
}

static void init_is_durable_outside_and_at_commit_inside_a_tx(void **state)
{
	struct fixture f = make(PMTX_PDOM1, PMTX_BACKEND_HARDWARE);
	const struct trio init = {4, 5, 6};
	/* outside a transaction: flush + barrier */
	memset(f.t, 0x5a, 64); /* garbage index and halves */
	tu_count_start();
	assert_int_equal(trio_line_init(f.r, f.t, &init), 0);
	assert_int_equal(tu_count().barriers, 1);
	assert_true(trio_eq(trio_line_valid(f.t), 4, 5, 6));
	/* inside: a line in a new block, made durable by the commit */
	pmtx_tx *tx;
	pmtx_off block = 0, line = 0;
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_cltx_zalloc(tx, &block, &line), 0);
	assert_int_equal(line % 64, 0);
	assert_true(line >= block &&
	            line + 64 <= block + pmtx_usable_size(f.r, block));
	struct trio_line *l = PMTX_PTR(f.r, line, struct trio_line);
	assert_true(trio_eq(trio_line_valid(l), 0, 0, 0)); /* C5 */
	tu_count_start();
	assert_int_equal(trio_line_init(f.r, l, &init), 0);
	assert_int_equal(tu_count().barriers, 0);
	uint64_t *keep = pmtx_root(f.r, NULL); /* bytes 0..15: before line 0 */
	assert_true((char *)(keep + 2) <= (char *)f.t);
	assert_int_equal(PMTX_SET(tx, keep[0], line), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	reopen(&f);
	keep = pmtx_root(f.r, NULL);
	l = PMTX_PTR(f.r, keep[0], struct trio_line);
	assert_true(trio_eq(trio_line_valid(l), 4, 5, 6));
	struct trio *w = trio_line_begin(l);
	w->c = 60;
	assert_int_equal(trio_line_commit(f.r, l), 0);
	assert_true(trio_eq(trio_line_valid(l), 4, 5, 60));
	drop(&f);
}

/* ---- the bounded buffer ---- */

static void bbuf_holds_29_bytes_then_refuses(void **state)
{
	struct fixture f = make(PMTX_PDOM1, PMTX_BACKEND_HARDWARE);
	for (int i = 0; i < BBUF_SIZE; i++)
		assert_int_equal(bbuf_add(f.r, f.bb, (uint8_t)(100 + i)), 0);
	assert_int_equal(bbuf_count(bbuf_line_valid(f.bb)), BBUF_SIZE);
	tu_count_start();
	assert_int_equal(bbuf_add(f.r, f.bb, 1), EAGAIN);
	assert_int_equal(tu_count().barriers, 0);
	reopen(&f);
	uint8_t c;
	for (int i = 0; i < BBUF_SIZE; i++) {
		assert_int_equal(bbuf_get(f.r, f.bb, &c), 0);
		assert_int_equal(c, 100 + i); /* FIFO */
	}
	tu_count_start();
	assert_int_equal(bbuf_get(f.r, f.bb, &c), EAGAIN);
	assert_int_equal(tu_count().barriers, 0);
	assert_int_equal(bbuf_count(bbuf_line_valid(f.bb)), 0);
	drop(&f);
}

/* Random adds and gets against a model FIFO, through many wraparounds of
 * both positions; one barrier per successful operation. */
static void bbuf_matches_a_fifo_through_wraparound(void **state)
{
	struct fixture f = make(PMTX_PDOM1, PMTX_BACKEND_HARDWARE);
	uint8_t model[BBUF_SIZE];
	unsigned head = 0, n = 0, ok_ops = 0;
	uint64_t s = 3;
	tu_count_start();
	for (int i = 0; i < 20000; i++) {
		/* drift towards full, then towards empty, in phases */
		int add = (int)(tu_rand(&s) % 100) < ((i / 500) % 2 ? 30 : 70);
		uint8_t c = (uint8_t)tu_rand(&s), got;
		if (add) {
			int rc = bbuf_add(f.r, f.bb, c);
			assert_int_equal(rc, n == BBUF_SIZE ? EAGAIN : 0);
			if (!rc)
				model[(head + n++) % BBUF_SIZE] = c, ok_ops++;
		} else {
			int rc = bbuf_get(f.r, f.bb, &got);
			assert_int_equal(rc, n == 0 ? EAGAIN : 0);
			if (!rc) {
				assert_int_equal(got, model[head]);
				head = (head + 1) % BBUF_SIZE, n--, ok_ops++;
			}
		}
		const struct bbuf *v = bbuf_line_valid(f.bb);
		assert_true(bbuf_consistent(v));
		assert_int_equal(bbuf_count(v), n);
	}
	assert_int_equal(tu_count().barriers,
	                 (uint64_t)ok_ops * PMTX_CLTX_BARRIERS);
	drop(&f);
}

/* ---- crash: every program-order prefix of the stores to the line ----
 *
 * The transactions below run on a real line; the image is captured after
 * each step (begin, each field store, commit) and the bytes that changed
 * in a step are that step's stores. Under C3 a persisted image is the
 * initial image plus a prefix of those stores, so every such image is
 * built and read with trio_line_valid(): it must be whole, the value of
 * the last commit whose flip is in the prefix. The order of the stores
 * between two flips is the compiler's choice, so a second order is tried.
 * The checker is itself tested on two broken protocols. */

struct store {
	uint8_t off, val;
	uint8_t flips; /* 1 for the index flip of a commit */
};

#define MAXST 512
#define MAXVAL 16

struct stream {
	unsigned char init[64];
	struct store st[MAXST];
	size_t n;
	struct trio val[MAXVAL]; /* val[j]: committed value after j flips */
	size_t nval;
};

static void stream_diff(struct stream *s, const unsigned char *a,
                        const unsigned char *b, int flip)
{
	for (size_t i = 0; i < 64; i++)
		if (a[i] != b[i]) {
			assert_true(s->n < MAXST);
			s->st[s->n++] = (struct store){(uint8_t)i, b[i],
			                               (uint8_t)flip};
		}
}

/* Record one transaction of nw field stores; commit unless aborted. C1
 * and C2 are checked on the way: data stores land in the working half,
 * and commit stores exactly the index byte. */
static void record_tx(struct stream *s, pmtx_region *r, struct trio_line *l,
                      uint64_t *rng, int nw, int commit)
{
	unsigned char a[64], b[64];
	memcpy(a, l, 64);
	struct trio *w = trio_line_begin(l);
	size_t wo = (size_t)((char *)w - (char *)l);
	memcpy(b, l, 64);
	size_t first = s->n;
	stream_diff(s, a, b, 0);
	for (int i = 0; i < nw; i++) {
		uint64_t v = tu_rand(rng);
		switch (tu_rand(rng) % 3) {
		case 0: w->a = v; break;
		case 1: w->b = v; break;
		default: w->c = v;
		}
		memcpy(a, b, 64);
		memcpy(b, l, 64);
		stream_diff(s, a, b, 0);
	}
	for (size_t i = first; i < s->n; i++)
		assert_true(s->st[i].off >= wo &&
		            s->st[i].off < wo + sizeof(struct trio));
	if (!commit) {
		trio_line_abort(l);
		return;
	}
	assert_int_equal(trio_line_commit(r, l), 0);
	memcpy(a, b, 64);
	memcpy(b, l, 64);
	size_t before = s->n;
	stream_diff(s, a, b, 1);
	assert_int_equal(s->n, before + 1);
	assert_int_equal(s->st[before].off, offsetof(struct trio_line,
	                                             pmtx_index));
	assert_true(s->nval < MAXVAL);
	s->val[s->nval++] = *trio_line_valid(l);
}

/* Reorder the stores between two flips by descending address, keeping
 * the order of stores to the same byte: one of the orders a compiler may
 * choose, as no barrier separates them. */
static void stream_reorder_runs(struct stream *s)
{
	size_t i = 0;
	while (i < s->n) {
		size_t j = i;
		while (j < s->n && !s->st[j].flips)
			j++;
		for (size_t a = i + 1; a < j; a++) { /* stable insertion sort */
			struct store t = s->st[a];
			size_t b = a;
			for (; b > i && s->st[b - 1].off < t.off; b--)
				s->st[b] = s->st[b - 1];
			s->st[b] = t;
		}
		i = j + 1;
	}
}

/* Number of prefixes whose valid half is not the expected whole value. */
static unsigned check_prefixes(const struct stream *s)
{
	_Alignas(64) unsigned char img[64];
	unsigned bad = 0;
	for (size_t k = 0; k <= s->n; k++) {
		memcpy(img, s->init, 64);
		size_t flips = 0;
		for (size_t i = 0; i < k; i++) {
			img[s->st[i].off] = s->st[i].val;
			flips += s->st[i].flips;
		}
		const struct trio_line *l = (const void *)img;
		if (memcmp(trio_line_valid(l), &s->val[flips],
		           sizeof(struct trio)) != 0)
			bad++;
	}
	return bad;
}

static void build_stream(struct stream *s, pmtx_region *r,
                         struct trio_line *l)
{
	uint64_t rng = 11;
	memset(s, 0, sizeof(*s));
	memcpy(s->init, l, 64);
	s->val[s->nval++] = *trio_line_valid(l);
	for (int t = 0; t < 10; t++)
		record_tx(s, r, l, &rng, 1 + t % 4, t % 4 != 2);
}

static void every_store_prefix_leaves_the_valid_half_whole(void **state)
{
	struct fixture f = make(PMTX_PDOM2, PMTX_BACKEND_HARDWARE);
	const struct trio init = {0x1111, 0x2222, 0x3333};
	assert_int_equal(trio_line_init(f.r, f.t, &init), 0);
	static struct stream s;
	build_stream(&s, f.r, f.t);
	assert_true(s.nval > 5 && s.n > 50);
	assert_int_equal(check_prefixes(&s), 0);
	stream_reorder_runs(&s);
	assert_int_equal(check_prefixes(&s), 0);
	drop(&f);
}

/* The checker catches (a) a commit that flips before its data stores
 * and (b) a begin that writes into the valid half. */
static void prefix_checker_catches_broken_commits(void **state)
{
	struct fixture f = make(PMTX_PDOM2, PMTX_BACKEND_HARDWARE);
	static struct stream s, m;
	build_stream(&s, f.r, f.t);
	/* (a) move the 3rd flip to the start of its transaction */
	m = s;
	size_t nflip = 0, at = 0;
	for (size_t i = 0; i < m.n; i++)
		if (m.st[i].flips && ++nflip == 3)
			at = i;
	size_t start = at;
	while (start > 0 && !m.st[start - 1].flips)
		start--;
	struct store flip = m.st[at];
	memmove(&m.st[start + 1], &m.st[start],
	        (at - start) * sizeof(flip));
	m.st[start] = flip;
	assert_true(check_prefixes(&m) > 0);
	/* (b) the first data store of transaction 2 hits the valid half */
	m = s;
	for (size_t i = 0; i < m.n; i++)
		if (m.st[i].flips) {
			m.st[i + 1].off ^= 32; /* same byte, other half */
			m.st[i + 1].val ^= 0xff;
			break;
		}
	assert_true(check_prefixes(&m) > 0);
	drop(&f);
}

/* ---- crash: SIGKILL a process running the bounded buffer ----
 *
 * The child adds and gets bytes as fast as it can and logs each operation
 * in shared memory: intent (op, byte) before it starts, result and DONE
 * after commit returned. A log in shared memory rather than a pipe keeps
 * the child free of system calls between operations, so the kills land
 * inside transactions, not in write(2). After each kill the parent reopens
 * the region: the buffer must be consistent and equal the model built from
 * the DONE operations, or the model plus the one operation in flight. */

enum { OP_ADD = 1, OP_GET = 2 };

struct oplog {
	volatile uint32_t n; /* entries started */
	struct {
		volatile uint8_t op, byte, got, done;
	} e[1 << 20];
};

static void child_run(const char *path, pmtx_backend b, uint64_t seed,
                      struct oplog *log)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.backend = b;
	pmtx_region *r;
	if (pmtx_open(path, &o, &r) != 0)
		_exit(3);
	struct bbuf_line *l = bbuf_of_root(r);
	for (uint32_t i = 0; i < (1u << 20); i++) {
		unsigned n = bbuf_count(bbuf_line_valid(l));
		int add = n == 0 || (n < BBUF_SIZE && tu_rand(&seed) % 2);
		uint8_t c = (uint8_t)tu_rand(&seed);
		log->e[i].done = 0; /* the log is reused from round to round */
		log->e[i].op = add ? OP_ADD : OP_GET;
		log->e[i].byte = c;
		__atomic_store_n(&log->n, i + 1, __ATOMIC_SEQ_CST);
		int rc = add ? bbuf_add(r, l, c) : bbuf_get(r, l, &c);
		if (rc)
			_exit(4);
		log->e[i].got = c;
		__atomic_store_n(&log->e[i].done, 1, __ATOMIC_SEQ_CST);
	}
	_exit(0);
}

struct fifo {
	uint8_t b[BBUF_SIZE];
	unsigned head, n;
};

static void fifo_apply(struct fifo *q, uint8_t op, uint8_t byte)
{
	if (op == OP_ADD) {
		assert_true(q->n < BBUF_SIZE);
		q->b[(q->head + q->n++) % BBUF_SIZE] = byte;
	} else {
		assert_true(q->n > 0);
		q->head = (q->head + 1) % BBUF_SIZE, q->n--;
	}
}

static int fifo_equals(const struct fifo *q, const struct bbuf *v)
{
	if (bbuf_count(v) != q->n)
		return 0;
	for (unsigned i = 0; i < q->n; i++)
		if (v->buf[(v->out + i) % BBUF_SIZE] !=
		    q->b[(q->head + i) % BBUF_SIZE])
			return 0;
	return 1;
}

/* Replay the child's log into q; returns the entry in flight or -1. */
static long replay(struct fifo *q, const struct oplog *log)
{
	uint32_t n = log->n;
	for (uint32_t i = 0; i < n; i++) {
		if (!log->e[i].done) {
			assert_int_equal(i, n - 1);
			return (long)i;
		}
		if (log->e[i].op == OP_GET)
			assert_int_equal(log->e[i].got,
			                 q->b[q->head]);
		fifo_apply(q, log->e[i].op, log->e[i].byte);
	}
	return -1;
}

static void sleep_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

static void sigkill_at_any_point_leaves_the_buffer_whole(void **state)
{
	const char *path;
	pmtx_region *r = tu_create(&path, 8 << 20, PMTX_CLTX_ROOM(1),
	                           PMTX_PDOM1, PMTX_BACKEND_HARDWARE,
	                           PMTX_RT_UNDO);
	assert_int_equal(pmtx_close(r), 0);
	struct oplog *log = mmap(NULL, sizeof(*log), PROT_READ | PROT_WRITE,
	                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(log != MAP_FAILED);
	struct fifo q = {{0}, 0, 0};
	uint64_t s = 77;
	unsigned rounds = tu_long_mode() ? 1000 : 100, inflight = 0;
	for (unsigned k = 0; k < rounds; k++) {
		pmtx_backend b = k % 4 == 3 ? PMTX_BACKEND_FILE
		                            : PMTX_BACKEND_HARDWARE;
		log->n = 0;
		pid_t pid = tu_fork();
		if (pid == 0)
			child_run(path, b, tu_rand(&s), log);
		sleep_us((long)(tu_rand(&s) % 3000));
		kill(pid, SIGKILL);
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		/* killed, or ran its whole log */
		assert_true(WIFSIGNALED(st) || WEXITSTATUS(st) == 0);
		long fl = replay(&q, log);
		r = tu_open(path);
		const struct bbuf *v = bbuf_line_valid(bbuf_of_root(r));
		assert_true(bbuf_consistent(v));
		if (!fifo_equals(&q, v)) {
			/* only the operation in flight may have committed */
			assert_true(fl >= 0);
			fifo_apply(&q, log->e[fl].op, log->e[fl].byte);
			assert_true(fifo_equals(&q, v));
			inflight++;
		}
		assert_int_equal(pmtx_close(r), 0);
	}
	printf("# %u kills, %u with the operation in flight committed\n",
	       rounds, inflight);
	munmap(log, sizeof(*log));
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(layout_is_two_halves_and_an_index_in_one_line),
		cmocka_unit_test(zero_line_is_valid_and_zero),
		cmocka_unit_test(commit_costs_one_barrier_and_one_line),
		cmocka_unit_test(abort_costs_nothing_and_keeps_the_valid_half),
		cmocka_unit_test(begin_copies_the_valid_half_to_the_other_half),
		cmocka_unit_test(commit_flips_and_the_new_value_survives_reopen),
		cmocka_unit_test(init_is_durable_outside_and_at_commit_inside_a_tx),
		cmocka_unit_test(bbuf_holds_29_bytes_then_refuses),
		cmocka_unit_test(bbuf_matches_a_fifo_through_wraparound),
		cmocka_unit_test(every_store_prefix_leaves_the_valid_half_whole),
		cmocka_unit_test(prefix_checker_catches_broken_commits),
		cmocka_unit_test(sigkill_at_any_point_leaves_the_buffer_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
