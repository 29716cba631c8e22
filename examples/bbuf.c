/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bbuf.c - the seed's persistent bounded buffer of 29 bytes (seed 003,
 * Figure 2), built on cache-line transactions: every add and get is one
 * transaction with one persist barrier, no log, and no recovery.
 *
 * The buffer (29 bytes) and its two positions (1 byte each) make 31 bytes,
 * the most a cache-line transaction holds. Figure 2 tells full from empty
 * by keeping one slot free, so it stores only 28 bytes; here in and out
 * count modulo 2 * 29 instead, so all 29 slots are used:
 *   count = (in - out) mod 58,  slot of a position p = p mod 29.
 *
 * Every run opens (or creates) a region whose root holds the buffer,
 * prints what it holds, then adds --count letters a, b, ..., z, a, ...;
 * whenever the buffer is full it drains it and prints what came out. Kill
 * it at any moment with kill -9 and run it again: the buffer is always
 * consistent, and holds consecutive letters.
 *
 *   pmtx-bbuf [--path FILE] [--count N] [--slow]
 *
 * tests/test_cltx.c includes this file with PMTX_BBUF_NO_MAIN defined, to
 * test the buffer itself.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmtx.h"
#include "pmtx_cltx.h"

#define BBUF_SIZE 29
#define BBUF_POS (2 * BBUF_SIZE) /* positions run modulo this */

struct bbuf {
	uint8_t buf[BBUF_SIZE];
	uint8_t in, out; /* < BBUF_POS */
};
_Static_assert(sizeof(struct bbuf) == PMTX_CLTX_MAX, "31 bytes, as seed");

PMTX_CLTX_DECLARE(bbuf_line, struct bbuf)

static unsigned bbuf_count(const struct bbuf *b)
{
	return (unsigned)(b->in + BBUF_POS - b->out) % BBUF_POS;
}

/* 1 if positions are in range and count <= BBUF_SIZE. */
static int bbuf_consistent(const struct bbuf *b)
{
	return b->in < BBUF_POS && b->out < BBUF_POS &&
	       bbuf_count(b) <= BBUF_SIZE;
}

/* Add one byte. 0, EAGAIN if full (nothing written, no barrier), or the
 * commit's status. */
static int bbuf_add(pmtx_region *r, struct bbuf_line *l, uint8_t c)
{
	struct bbuf *b = bbuf_line_begin(l);
	if (bbuf_count(b) == BBUF_SIZE) {
		bbuf_line_abort(l);
		return EAGAIN;
	}
	b->buf[b->in % BBUF_SIZE] = c;
	b->in = (uint8_t)((b->in + 1) % BBUF_POS);
	return bbuf_line_commit(r, l);
}

/* Take the oldest byte into *c. 0, EAGAIN if empty, or commit status. */
static int bbuf_get(pmtx_region *r, struct bbuf_line *l, uint8_t *c)
{
	struct bbuf *b = bbuf_line_begin(l);
	if (b->in == b->out) {
		bbuf_line_abort(l);
		return EAGAIN;
	}
	*c = b->buf[b->out % BBUF_SIZE];
	b->out = (uint8_t)((b->out + 1) % BBUF_POS);
	return bbuf_line_commit(r, l);
}

/* The line in a root of PMTX_CLTX_ROOM(1) bytes. A new root is zero: an
 * empty buffer (pmtx_cltx.h C5). */
static struct bbuf_line *bbuf_of_root(pmtx_region *r)
{
	return pmtx_cltx_align(pmtx_root(r, NULL));
}

#ifndef PMTX_BBUF_NO_MAIN

/* Copy the contents, oldest first, as a string; n = count. */
static unsigned bbuf_contents(const struct bbuf *b, char *s)
{
	unsigned n = bbuf_count(b);
	for (unsigned i = 0; i < n; i++)
		s[i] = (char)b->buf[(b->out + i) % BBUF_SIZE];
	s[n] = 0;
	return n;
}

static int consecutive(const char *s, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (s[i] != 'a' + (s[i - 1] - 'a' + 1) % 26)
			return 0;
	return 1;
}

static char next_letter(char last)
{
	return last ? (char)('a' + (last - 'a' + 1) % 26) : 'a';
}

static int drain(pmtx_region *r, struct bbuf_line *l, char *last)
{
	char out[BBUF_SIZE + 1];
	size_t n = 0;
	uint8_t c;
	int rc;
	while ((rc = bbuf_get(r, l, &c)) == 0)
		out[n++] = (char)c;
	out[n] = 0;
	printf("drained %zu: %s\n", n, out);
	if (!consecutive(out, n) || (n && *last && out[n - 1] != *last)) {
		fprintf(stderr, "drained letters are not consecutive\n");
		return PMTX_E_CORRUPT;
	}
	return rc == EAGAIN ? 0 : rc;
}

int main(int argc, char **argv)
{
	const char *path = "/dev/shm/pmtx-bbuf.pmtx";
	long count = 100;
	int slow = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--path") && i + 1 < argc)
			path = argv[++i];
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = atol(argv[++i]);
		else if (!strcmp(argv[i], "--slow"))
			slow = 1;
		else {
			fprintf(stderr, "usage: %s [--path FILE] [--count N] "
			                "[--slow]\n", argv[0]);
			return 2;
		}
	}
	pmtx_options o;
	pmtx_options_init(&o);
	o.layout = "example-bbuf";
	o.root_size = PMTX_CLTX_ROOM(1);
	pmtx_region *r;
	int rc = pmtx_open(path, &o, &r);
	if (rc == ENOENT)
		rc = pmtx_create(path, 8 << 20, &o, &r);
	if (rc) {
		fprintf(stderr, "%s: %s %s\n", path, pmtx_strerror(rc),
		        pmtx_errmsg());
		return 1;
	}
	struct bbuf_line *l = bbuf_of_root(r);
	const struct bbuf *v = bbuf_line_valid(l);
	char s[BBUF_SIZE + 1];
	unsigned n = bbuf_consistent(v) ? bbuf_contents(v, s) : 0;
	int ok = bbuf_consistent(v) && consecutive(s, n);
	printf("opened %s: in=%u out=%u, %u bytes \"%s\" (%s)\n", path, v->in,
	       v->out, n, ok ? s : "", ok ? "consistent" : "INCONSISTENT");
	if (!ok)
		return 1;
	char last = n ? s[n - 1] : 0;
	for (long i = 0; i < count && !rc; i++) {
		char c = next_letter(last);
		rc = bbuf_add(r, l, (uint8_t)c);
		if (rc == EAGAIN) {
			rc = drain(r, l, &last);
			if (!rc)
				rc = bbuf_add(r, l, (uint8_t)c);
		}
		if (!rc)
			last = c;
		if (slow)
			usleep(1000);
	}
	if (rc)
		fprintf(stderr, "bbuf: %s\n", pmtx_strerror(rc));
	n = bbuf_contents(bbuf_line_valid(l), s);
	printf("added %ld: %u bytes \"%s\"\n", count, n, s);
	pmtx_close(r);
	return rc ? 1 : 0;
}

#endif /* PMTX_BBUF_NO_MAIN */
