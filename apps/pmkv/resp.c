/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resp.c - RESP2 requests parsed, replies built.
 *
 * A request is multibulk when its first byte is '*', inline otherwise, as
 * Redis's processInputBuffer decides:
 *   multibulk: "*<count>\r\n" then <count> times "$<len>\r\n<len bytes>\r\n"
 *   inline:    arguments separated by blanks, quoted as sdssplitargs
 *              quotes them, up to a "\n" (a "\r" before it is dropped)
 * Numbers are read as Redis's string2ll reads them (parse_ll). A count
 * <= 0 is an empty request; a count above max_args is "invalid multibulk
 * length"; a length < 0 or above max_bulk is "invalid bulk length".
 *
 * The parser keeps no state between calls: every call starts again at
 * in[0]. Redis keeps its position in the client instead; here the caller
 * owns the buffer, and a position kept across calls could not tell a
 * grown buffer from a different one at the same address.
 *
 * Invariants (beyond resp.h's):
 *  1. A header line ('*' or '$' first) ends at its first '\r', and the
 *     byte after that '\r' is skipped unread; so are the two bytes after
 *     a bulk's data. Redis checks neither, and pmkv accepts what Redis
 *     accepts.
 *  2. A line (header or inline) is decided only once its end is in the
 *     input, and a line whose end lies more than max_inline bytes past
 *     its start is refused ("too big ...") whether its end has arrived or
 *     not. Together with (3) this makes the result independent of how the
 *     input was split (resp.h invariant 3).
 *  3. Two passes over the same bytes: the walk (pass 1) checks that the
 *     whole request is present and valid and counts its arguments and
 *     bytes, allocating nothing; only then is storage reserved and the
 *     copy (pass 2) done, by the same code, which cannot fail any more.
 *     An incomplete request so costs per call its headers plus one
 *     bounded line search (at most max_inline + 1 bytes); bulk contents
 *     are skipped by length, never scanned. (Like Redis's strchr, an
 *     unfinished line is searched again at every call.)
 *  4. Errors come in Redis's order: line too long, then the line's
 *     leading byte, then its number.
 *  5. The storage q owns grows to fit a request; a block above its keep
 *     size (STORE_KEEP, VEC_KEEP) that a request uses less than a quarter
 *     of shrinks, so that one huge request does not pin its memory for a
 *     connection's life.
 *  6. A reply builder appends a whole reply or nothing (setting oom).
 *
 * Deliberate differences from Redis, at edges Redis reaches through C
 * string functions on a binary buffer:
 *  a. Redis finds a line's end with strchr, which stops at a NUL: a NUL
 *     before it stalls the connection until the buffer passes 64 KiB.
 *     Here line ends are found with memchr, and in an inline line a NUL
 *     is an ordinary byte (sdssplitargs would end the line there).
 *  b. max_inline bounds a line's own length (2); Redis bounds the bytes
 *     buffered while no line end is seen, which depends on the reads.
 *  c. An inline request with more than max_args arguments, or with one
 *     longer than max_bulk, is "too big inline request" (Redis has no such
 *     limit; the default limits cannot reach it).
 * And one sameness that looks like a bug: "expected '$', got '%c'" of a
 * NUL byte ends at the quote, as Redis's sdscatvprintf cuts it there.
 */
#include <assert.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

const char RESP_E_MBULK[] = "Protocol error: invalid multibulk length";
const char RESP_E_BULK[] = "Protocol error: invalid bulk length";
const char RESP_E_INLINE_BIG[] = "Protocol error: too big inline request";
const char RESP_E_MBULK_BIG[] = "Protocol error: too big mbulk count string";
const char RESP_E_BULK_BIG[] = "Protocol error: too big bulk count string";
const char RESP_E_QUOTES[] = "Protocol error: unbalanced quotes in request";
const char RESP_E_NOMEM[] = "out of memory";

#define STORE_KEEP ((size_t)64 << 10) /* argument bytes always kept */
#define VEC_KEEP ((size_t)1024)       /* argv/argl entries always kept */

/* ------------------------------------------------------------------ */
/* Numbers                                                            */

/* Redis's string2ll: "0", or an optional '-' and digits without a
 * leading zero, in range. */
static int parse_ll(const char *s, size_t len, long long *v)
{
	size_t i = len > 0 && s[0] == '-' ? 1 : 0;
	unsigned long long mag = 0, max = LLONG_MAX;
	if (len == 1 && s[0] == '0') {
		*v = 0;
		return 0;
	}
	if (i == len || s[i] < '1' || s[i] > '9')
		return -1;
	for (; i < len; i++) {
		unsigned d = (unsigned)(unsigned char)s[i] - '0';
		if (d > 9 || mag > (ULLONG_MAX - d) / 10)
			return -1;
		mag = mag * 10 + d;
	}
	if (mag > max + (s[0] == '-'))
		return -1;
	/* -(mag - 1) - 1 stays in range for LLONG_MIN */
	*v = s[0] == '-' ? -(long long)(mag - 1) - 1 : (long long)mag;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Storage                                                            */

/* Makes *p hold want elements: grows it, or shrinks it when it is above
 * keep and less than a quarter used (invariant 5). On failure *p and
 * *cap are unchanged, and only a failed growth is an error. */
static int refit(void **p, size_t *cap, size_t want, size_t size,
                 size_t keep)
{
	size_t c = *cap, nc = want > keep ? want : keep;
	void *np;
	if (want <= c && (c <= keep || want >= c / 4))
		return 0;
	np = nc <= SIZE_MAX / size ? realloc(*p, nc * size) : NULL;
	if (!np)
		return want > c ? -1 : 0;
	*p = np;
	*cap = nc;
	return 0;
}

static int req_reserve(struct resp_req *q, size_t argc, size_t bytes)
{
	void *v = q->argv, *l = q->argl, *s = q->store;
	int rc = refit(&v, &q->argv_cap, argc, sizeof(char *), VEC_KEEP);
	rc |= refit(&l, &q->argl_cap, argc, sizeof(size_t), VEC_KEEP);
	rc |= refit(&s, &q->store_cap, bytes, 1, STORE_KEEP);
	q->argv = v;
	q->argl = l;
	q->store = s;
	return rc;
}

void resp_req_init(struct resp_req *q)
{
	memset(q, 0, sizeof(*q));
}

void resp_req_free(struct resp_req *q)
{
	free(q->argv);
	free(q->argl);
	free(q->store);
	resp_req_init(q);
}

static int fail(const char **err, const char *text)
{
	*err = text;
	return RESP_EPROTO;
}

/* ------------------------------------------------------------------ */
/* Multibulk                                                          */

struct bulk {
	size_t next; /* offset of the next header */
	size_t data; /* offset and length of the last bulk's data */
	size_t len;
};

/* The header line at in[at..n): finds the '\r' ending it (invariant 2),
 * and checks that the byte Redis skips after it is there. */
static int header_end(const char *in, size_t n, size_t at, size_t max,
                      size_t *cr)
{
	size_t avail = n - at, win = avail <= max ? avail : max + 1;
	const char *r = avail ? memchr(in + at, '\r', win) : NULL;
	if (!r)
		return avail > max ? RESP_EPROTO : RESP_MORE;
	*cr = (size_t)(r - in);
	return n - *cr >= 2 ? RESP_OK : RESP_MORE;
}

static int mbulk_count(const char *in, size_t n,
                       const struct resp_limits *lim, size_t *count,
                       size_t *first, const char **err)
{
	size_t cr;
	long long ll;
	int rc = header_end(in, n, 0, lim->max_inline, &cr);
	if (rc == RESP_EPROTO)
		return fail(err, RESP_E_MBULK_BIG);
	if (rc == RESP_MORE)
		return rc;
	if (parse_ll(in + 1, cr - 1, &ll) != 0 ||
	    (ll > 0 && (unsigned long long)ll > lim->max_args))
		return fail(err, RESP_E_MBULK);
	*count = ll > 0 ? (size_t)ll : 0;
	*first = cr + 2;
	return RESP_OK;
}

static int expected_dollar(struct resp_req *q, char got, const char **err)
{
	snprintf(q->errbuf, sizeof(q->errbuf),
	         "Protocol error: expected '$', got '%c'", got);
	*err = q->errbuf;
	return RESP_EPROTO;
}

/* "$<len>\r\n<len bytes>\r\n" at b->next: the data's place in b, and
 * b->next past it. The data is skipped by its length, never read. */
static int next_bulk(const char *in, size_t n,
                     const struct resp_limits *lim, struct bulk *b,
                     struct resp_req *q, const char **err)
{
	size_t at = b->next, cr;
	long long ll;
	int rc = header_end(in, n, at, lim->max_inline, &cr);
	if (rc == RESP_EPROTO)
		return fail(err, RESP_E_BULK_BIG);
	if (rc == RESP_MORE)
		return rc;
	if (in[at] != '$')
		return expected_dollar(q, in[at], err);
	if (parse_ll(in + at + 1, cr - at - 1, &ll) != 0 || ll < 0 ||
	    (unsigned long long)ll > lim->max_bulk)
		return fail(err, RESP_E_BULK);
	b->data = cr + 2;
	b->len = (size_t)ll;
	if (n - b->data < 2 || n - b->data - 2 < b->len)
		return RESP_MORE;
	b->next = b->data + b->len + 2;
	return RESP_OK;
}

/* Pass 2 (invariant 3): the walk has checked every bulk already. */
static void copy_bulks(const char *in, size_t n,
                       const struct resp_limits *lim, size_t first,
                       size_t count, struct resp_req *q)
{
	struct bulk b = {first, 0, 0};
	char *w = q->store;
	const char *err;
	for (size_t i = 0; i < count; i++) {
		int rc = next_bulk(in, n, lim, &b, q, &err);
		assert(rc == RESP_OK);
		(void)rc;
		memcpy(w, in + b.data, b.len);
		q->argv[i] = w;
		q->argl[i] = b.len;
		w += b.len;
		*w++ = '\0';
	}
	q->argc = count;
}

static int parse_multibulk(const char *in, size_t n,
                           const struct resp_limits *lim,
                           struct resp_req *q, size_t *used,
                           const char **err)
{
	size_t count, first, bytes = 0;
	struct bulk b = {0, 0, 0};
	int rc = mbulk_count(in, n, lim, &count, &first, err);
	if (rc != RESP_OK)
		return rc;
	b.next = first;
	for (size_t i = 0; i < count; i++) {
		rc = next_bulk(in, n, lim, &b, q, err);
		if (rc != RESP_OK)
			return rc;
		bytes += b.len + 1;
	}
	if (count > 0 && req_reserve(q, count, bytes) != 0)
		return fail(err, RESP_E_NOMEM);
	copy_bulks(in, n, lim, first, count, q);
	*used = b.next;
	return RESP_OK;
}

long resp_peek_args(const char *in, size_t n, const struct resp_limits *lim,
                    size_t k, const char **argv, size_t *argl, size_t *used)
{
	struct resp_req scratch; /* next_bulk's error text only */
	struct bulk b = {0, 0, 0};
	size_t count;
	const char *err;
	if (n == 0 || in[0] != '*' ||
	    mbulk_count(in, n, lim, &count, &b.next, &err) != RESP_OK)
		return -1;
	for (size_t j = 0; j < count; j++) {
		if (next_bulk(in, n, lim, &b, &scratch, &err) != RESP_OK)
			return -1;
		if (j < k)
			argv[j] = in + b.data, argl[j] = b.len;
	}
	*used = b.next;
	return (long)count; /* <= lim->max_args */
}

/* ------------------------------------------------------------------ */
/* Inline: sdssplitargs over a line of known length                   */

enum { PLAIN, DQUOTE, SQUOTE };      /* where a token's scan is */
enum { TOK_GO, TOK_END, TOK_BAD };   /* what a step found */

/* The split's output: counted only (q NULL, pass 1) or written. */
struct split {
	struct resp_req *q;
	size_t argc, bytes, longest, start;
};

static void put(struct split *k, char c)
{
	if (k->q)
		k->q->store[k->bytes] = c;
	k->bytes++;
}

static void token_end(struct split *k)
{
	size_t len = k->bytes - k->start;
	if (k->q) {
		k->q->argv[k->argc] = k->q->store + k->start;
		k->q->argl[k->argc] = len;
	}
	if (len > k->longest)
		k->longest = len;
	k->argc++;
	put(k, '\0');
}

/* isspace() in the C locale */
static int is_blank(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static char unescape(char c)
{
	switch (c) {
	case 'n': return '\n';
	case 'r': return '\r';
	case 't': return '\t';
	case 'b': return '\b';
	case 'a': return '\a';
	default: return c;
	}
}

/* A closing quote must be followed by a blank or the end of the line. */
static int close_quote(const char *s, size_t len, size_t *i)
{
	if (*i + 1 < len && !is_blank(s[*i + 1]))
		return TOK_BAD;
	*i += 1;
	return TOK_END;
}

static int step_dquote(const char *s, size_t len, size_t *i,
                       struct split *k)
{
	size_t at = *i;
	if (s[at] == '\\' && at + 3 < len && s[at + 1] == 'x' &&
	    hex_val(s[at + 2]) >= 0 && hex_val(s[at + 3]) >= 0) {
		int v = hex_val(s[at + 2]) * 16 + hex_val(s[at + 3]);
		put(k, (char)(unsigned char)v);
		*i = at + 4;
	} else if (s[at] == '\\' && at + 1 < len) {
		put(k, unescape(s[at + 1]));
		*i = at + 2;
	} else if (s[at] == '"') {
		return close_quote(s, len, i);
	} else {
		put(k, s[at]);
		*i = at + 1;
	}
	return TOK_GO;
}

static int step_squote(const char *s, size_t len, size_t *i,
                       struct split *k)
{
	size_t at = *i;
	if (s[at] == '\\' && at + 1 < len && s[at + 1] == '\'') {
		put(k, '\'');
		*i = at + 2;
	} else if (s[at] == '\'') {
		return close_quote(s, len, i);
	} else {
		put(k, s[at]);
		*i = at + 1;
	}
	return TOK_GO;
}

/* Outside quotes only these four end a token (not \v or \f, which
 * sdssplitargs skips between tokens but keeps inside one). */
static int step_plain(const char *s, size_t *i, struct split *k,
                      int *where)
{
	char c = s[*i];
	if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
		return TOK_END;
	if (c == '"')
		*where = DQUOTE;
	else if (c == '\'')
		*where = SQUOTE;
	else
		put(k, c);
	*i += 1;
	return TOK_GO;
}

/* One token from s[*i], which is not a blank. */
static int read_token(const char *s, size_t len, size_t *i,
                      struct split *k)
{
	int where = PLAIN, rc = TOK_GO;
	k->start = k->bytes;
	while (rc == TOK_GO && *i < len) {
		if (where == DQUOTE)
			rc = step_dquote(s, len, i, k);
		else if (where == SQUOTE)
			rc = step_squote(s, len, i, k);
		else
			rc = step_plain(s, i, k, &where);
	}
	if (rc == TOK_BAD || (rc == TOK_GO && where != PLAIN))
		return TOK_BAD; /* a bad close, or the line ended in quotes */
	token_end(k);
	return TOK_END;
}

static int split_line(const char *s, size_t len, struct split *k)
{
	size_t i = 0;
	for (;;) {
		while (i < len && is_blank(s[i]))
			i++;
		if (i == len)
			return 0;
		if (read_token(s, len, &i, k) == TOK_BAD)
			return -1;
	}
}

static int parse_inline(const char *in, size_t n,
                        const struct resp_limits *lim, struct resp_req *q,
                        size_t *used, const char **err)
{
	size_t max = lim->max_inline, len;
	const char *nl = memchr(in, '\n', n <= max ? n : max + 1);
	struct split count = {NULL, 0, 0, 0, 0}, write = {q, 0, 0, 0, 0};
	if (!nl)
		return n > max ? fail(err, RESP_E_INLINE_BIG) : RESP_MORE;
	len = (size_t)(nl - in);
	if (len > 0 && in[len - 1] == '\r')
		len--;
	if (split_line(in, len, &count) != 0)
		return fail(err, RESP_E_QUOTES);
	if (count.argc > lim->max_args || count.longest > lim->max_bulk)
		return fail(err, RESP_E_INLINE_BIG);
	if (count.argc > 0 && req_reserve(q, count.argc, count.bytes) != 0)
		return fail(err, RESP_E_NOMEM);
	if (count.argc > 0) {
		int rc = split_line(in, len, &write);
		assert(rc == 0 && write.argc == count.argc);
		(void)rc;
	}
	q->argc = count.argc;
	q->is_inline = 1;
	*used = (size_t)(nl - in) + 1;
	return RESP_OK;
}

int resp_parse(const char *in, size_t n, const struct resp_limits *lim,
               struct resp_req *q, size_t *used, const char **err)
{
	*used = 0;
	*err = NULL;
	q->argc = 0;
	q->is_inline = 0;
	if (n == 0)
		return RESP_MORE;
	if (in[0] == '*')
		return parse_multibulk(in, n, lim, q, used, err);
	return parse_inline(in, n, lim, q, used, err);
}

/* ------------------------------------------------------------------ */
/* Argument helpers                                                   */

static unsigned char ascii_lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

int resp_arg_is(const struct resp_req *q, size_t i, const char *word)
{
	size_t len = strlen(word);
	if (i >= q->argc || q->argl[i] != len)
		return 0;
	for (size_t j = 0; j < len; j++)
		if (ascii_lower((unsigned char)q->argv[i][j]) !=
		    ascii_lower((unsigned char)word[j]))
			return 0;
	return 1;
}

int resp_parse_ll(const char *s, size_t len, long long *v)
{
	return parse_ll(s, len, v);
}

int resp_arg_ll(const struct resp_req *q, size_t i, long long *v)
{
	if (i >= q->argc)
		return -1;
	return parse_ll(q->argv[i], q->argl[i], v);
}

/* ------------------------------------------------------------------ */
/* Replies                                                            */

void resp_out_init(struct resp_out *o)
{
	memset(o, 0, sizeof(*o));
}

void resp_out_free(struct resp_out *o)
{
	free(o->p);
	resp_out_init(o);
}

void resp_out_reset(struct resp_out *o)
{
	o->n = 0;
	o->oom = 0;
}

/* Room for extra bytes at o->p + o->n, or NULL with o->oom set. */
static char *room(struct resp_out *o, size_t extra)
{
	size_t cap = o->cap ? o->cap : 64;
	char *p;
	if (o->oom)
		return NULL;
	if (o->cap - o->n >= extra)
		return o->p + o->n;
	if (extra > SIZE_MAX / 2 - o->n) {
		o->oom = 1;
		return NULL;
	}
	while (cap < o->n + extra)
		cap *= 2;
	p = realloc(o->p, cap);
	if (!p) {
		o->oom = 1;
		return NULL;
	}
	o->p = p;
	o->cap = cap;
	return p + o->n;
}

/* "<type><number>\r\n" followed by body[0..len) (and "\r\n" if crlf). */
static void add_reply(struct resp_out *o, char type, long long num,
                      const void *body, size_t len, int crlf)
{
	char head[32];
	int h = snprintf(head, sizeof(head), "%c%lld\r\n", type, num);
	size_t total = (size_t)h + len + (crlf ? 2 : 0);
	char *w = room(o, total);
	if (!w)
		return;
	memcpy(w, head, (size_t)h);
	if (len > 0)
		memcpy(w + h, body, len);
	if (crlf)
		memcpy(w + (size_t)h + len, "\r\n", 2);
	o->n += total;
}

static void crlf_to_spaces(char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\r' || s[i] == '\n')
			s[i] = ' ';
}

void resp_add_simple(struct resp_out *o, const char *s)
{
	size_t len = strlen(s);
	char *w = room(o, len + 3);
	if (!w)
		return;
	w[0] = '+';
	memcpy(w + 1, s, len);
	crlf_to_spaces(w + 1, len);
	memcpy(w + 1 + len, "\r\n", 2);
	o->n += len + 3;
}

/* Redis's sdstrim(s, "\r\n"): drops CR and LF at both ends. */
static size_t trim_crlf(char *s, size_t len)
{
	size_t start = 0;
	while (len > 0 && (s[len - 1] == '\r' || s[len - 1] == '\n'))
		len--;
	while (start < len && (s[start] == '\r' || s[start] == '\n'))
		start++;
	memmove(s, s + start, len - start);
	return len - start;
}

void resp_add_error(struct resp_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *w;
	size_t len;
	if (o->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		o->oom = 1; /* no reply can be made of it */
		return;
	}
	w = room(o, (size_t)n + 3); /* '-', text and its NUL, then "\r\n" */
	if (!w)
		return;
	va_start(ap, fmt);
	vsnprintf(w + 1, (size_t)n + 1, fmt, ap);
	va_end(ap);
	w[0] = '-';
	len = trim_crlf(w + 1, (size_t)n);
	crlf_to_spaces(w + 1, len);
	memcpy(w + 1 + len, "\r\n", 2);
	o->n += len + 3;
}

void resp_add_int(struct resp_out *o, long long v)
{
	add_reply(o, ':', v, NULL, 0, 0);
}

void resp_add_bulk(struct resp_out *o, const void *p, size_t n)
{
	if (n > (unsigned long long)LLONG_MAX) {
		o->oom = 1;
		return;
	}
	add_reply(o, '$', (long long)n, p, n, 1);
}

void resp_add_raw(struct resp_out *o, const void *p, size_t n)
{
	char *w = room(o, n);
	if (w && n) {
		memcpy(w, p, n);
		o->n += n;
	}
}

void resp_add_null(struct resp_out *o)
{
	add_reply(o, '$', -1, NULL, 0, 0);
}

void resp_add_array(struct resp_out *o, long long n)
{
	add_reply(o, '*', n, NULL, 0, 0);
}
