/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * glob.c - glob-style patterns for KEYS and SCAN MATCH, as Redis 7.0
 * reads them (stringmatchlen): '*' any run, '?' one byte, '[abc]', '[^a]',
 * '[a-z]' classes, '\x' the byte x. Binary safe: lengths, never NUL
 * terminators. Redis's own quirks, kept so that replies match its:
 *  G1. An empty key matches the empty pattern only. (KEYS * and SCAN
 *      MATCH * take every key, the empty one too, without matching:
 *      cmd.c.)
 *  G2. In a class, "x-y" is a range whatever y is (']' too), and its ends
 *      and the byte are compared as signed chars, as Redis's
 *      `int c = string[0]` does on x86-64: [a-\xff] holds the bytes up to
 *      'a' and 0xff.
 */
#include <ctype.h>
#include <stddef.h>

#include "server.h"

static int fold(int ch, int nocase)
{
	return nocase ? tolower(ch) : ch;
}

/* Does the class at pat[0..pn) (after '[') hold ch? *used: its length,
 * the closing ']' included (or the rest of the pattern if unclosed). */
static int class_match(const unsigned char *pat, size_t pn, int ch,
                       int nocase, size_t *used)
{
	size_t i = 0;
	int neg = pn > 0 && pat[0] == '^', hit = 0;
	i += (size_t)neg;
	for (; i < pn && pat[i] != ']'; i++) {
		if (pat[i] == '\\' && i + 1 < pn) {
			hit |= fold(pat[++i], nocase) == fold(ch, nocase);
		} else if (i + 2 < pn && pat[i + 1] == '-') { /* G2 */
			int lo = (signed char)fold(pat[i], nocase);
			int hi = (signed char)fold(pat[i + 2], nocase);
			int sc = (signed char)fold(ch, nocase);
			if (lo > hi) {
				int t = lo;
				lo = hi, hi = t;
			}
			hit |= sc >= lo && sc <= hi;
			i += 2;
		} else {
			hit |= fold(pat[i], nocase) == fold(ch, nocase);
		}
	}
	*used = i < pn ? i + 1 : i;
	return neg ? !hit : hit;
}

/* One pattern element at p[0..pn) against the byte ch: 1 if it matches;
 * *used = the element's length. p[0] is not '*'. */
static int element(const unsigned char *p, size_t pn, int ch, int nocase,
                   size_t *used)
{
	*used = 1;
	if (p[0] == '[') {
		int hit = class_match(p + 1, pn - 1, ch, nocase, used);
		(*used)++;
		return hit;
	}
	if (p[0] == '\\' && pn > 1) {
		*used = 2;
		return p[1] == ch;
	}
	return p[0] == '?' || fold(p[0], nocase) == fold(ch, nocase);
}

/* Iterative, backtracking only to the last '*': O(pattern x string) at
 * worst, so no pattern can make KEYS run away. */
static int match(const unsigned char *p, size_t pn, const unsigned char *s,
                 size_t sn, int nocase)
{
	size_t pi = 0, si = 0, star = (size_t)-1, mark = 0;
	if (sn == 0)
		return pn == 0; /* G1 */
	while (si < sn) {
		size_t used;
		if (pi < pn && p[pi] == '*') {
			star = ++pi;
			mark = si;
		} else if (pi < pn && element(p + pi, pn - pi, s[si], nocase,
		                              &used)) {
			pi += used;
			si++;
		} else if (star != (size_t)-1) {
			pi = star;
			si = ++mark;
		} else {
			return 0;
		}
	}
	while (pi < pn && p[pi] == '*')
		pi++;
	return pi == pn;
}

int glob_match(const char *pat, size_t pn, const char *s, size_t sn,
               int nocase)
{
	return match((const unsigned char *)pat, pn, (const unsigned char *)s,
	             sn, nocase);
}
