/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdb.c - Redis 7.0's serialization of one value (rdb.h): DUMP's payload
 * written from an image, RESTORE's read into one, and the encodings
 * Redis would choose.
 *
 * DESIGN
 * Volatile only: byte buffers in, byte buffers and images out. What
 * Redis's rdb.c, listpack.c, intset.c and ziplist.c define, written
 * again here from their formats:
 *   payload    [type][value][RDB version: 2 bytes LE][CRC-64: 8 bytes LE,
 *              of everything before it]
 *   length     00xxxxxx (6 bits), 01xxxxxx xxxxxxxx (14 bits, big end
 *              first), 0x80 + 4 bytes and 0x81 + 8 bytes big endian;
 *              11xxxxxx: a string encoded as an 8, 16 or 32-bit integer
 *              (little endian) or LZF-compressed (compressed length,
 *              length, bytes)
 *   types      0 string, 1 list, 2 set, 3 sorted set (scores as text),
 *              4 hash, 5 sorted set (binary doubles), 10 ziplist list,
 *              11 intset, 12 ziplist sorted set, 13 ziplist hash, 14
 *              quicklist of ziplists, 16 listpack hash, 17 listpack
 *              sorted set, 18 quicklist of listpacks (a container kind
 *              per node: 1 a plain element, 2 a listpack)
 *
 * Invariants
 *  R1. What pmkv dumps is what Redis 7.0 would hold the value as, by its
 *      default thresholds (rdb_encoding): a string as an integer when it
 *      is one of 32 bits, a list as a quicklist of listpacks of at most
 *      8 KiB (list-max-listpack-size -2), a set of at most 512 integers
 *      as an intset, a hash of at most 512 fields and values of at most
 *      64 bytes and a sorted set of at most 128 members of at most 64
 *      bytes as listpacks, anything else as plain strings. Strings are
 *      written uncompressed (Redis compresses those above 20 bytes; it
 *      reads both).
 *  R2. A payload is read only after its length, version (at most 10)
 *      and CRC are checked, and then as Redis's rio reads it: from the
 *      whole payload, footer included; bytes after the value are
 *      ignored.
 *  R3. Every read is bounded by the bytes that remain; no length read
 *      from a payload is trusted before it is checked against them (an
 *      LZF string against the limit it may grow to). Every listpack,
 *      ziplist and intset is checked whole, as Redis's
 *      sanitize-dump-payload yes checks it: its header, every entry and
 *      back-length, its count, an intset's order; a collection's members
 *      (fields) must be distinct, a sorted set's scores numbers and
 *      never NaN. What fails is RDB_E_FORMAT, never a crash.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdb.h"
#include "resp.h" /* resp_parse_ll: Redis's string2ll */

/* Redis's type bytes (rdb.h there). */
enum {
	T_STRING = 0, T_LIST = 1, T_SET = 2, T_ZSET = 3, T_HASH = 4,
	T_ZSET_2 = 5, T_LIST_ZIPLIST = 10, T_SET_INTSET = 11,
	T_ZSET_ZIPLIST = 12, T_HASH_ZIPLIST = 13, T_LIST_QUICKLIST = 14,
	T_HASH_LISTPACK = 16, T_ZSET_LISTPACK = 17, T_LIST_QUICKLIST_2 = 18,
};

/* Redis 7.0's defaults (R1): those it has without a configuration file
 * (its sample redis.conf sets hash-max-listpack-entries 128). */
#define HASH_LP_ENTRIES 512
#define HASH_LP_VALUE 64
#define ZSET_LP_ENTRIES 128
#define ZSET_LP_VALUE 64
#define SET_INTSET_ENTRIES 512
#define LIST_LP_BYTES 8192 /* list-max-listpack-size -2 */
#define EMBSTR_MAX 44
#define SHARED_INTEGERS 10000
#define QL_PLAIN 1
#define QL_PACKED 2
#define BLOB_SLACK (64u << 10) /* a listpack or intset: max plus this */

/* ---- CRC-64 and LZF ---- */

#define CRC64_POLY UINT64_C(0x95ac9329ac4bc9b5) /* Jones, reflected */

static uint64_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint64_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC64_POLY : c >> 1;
		crc_table[i] = c;
	}
}

uint64_t rdb_crc64(uint64_t crc, const void *p, size_t n)
{
	const unsigned char *b = p;
	pthread_once(&crc_once, crc_init);
	for (size_t i = 0; i < n; i++)
		crc = crc_table[(crc ^ b[i]) & 0xff] ^ (crc >> 8);
	return crc;
}

size_t rdb_lzf_decompress(const void *in, size_t n, void *out, size_t cap)
{
	const unsigned char *ip = in;
	unsigned char *op = out;
	size_t i = 0, o = 0;
	while (i < n) {
		size_t ctrl = ip[i++];
		if (ctrl < 32) { /* a literal run of ctrl + 1 bytes */
			if (++ctrl > cap - o || ctrl > n - i)
				return 0;
			memcpy(op + o, ip + i, ctrl);
			o += ctrl, i += ctrl;
			continue;
		}
		size_t len = ctrl >> 5, back = (ctrl & 0x1f) << 8;
		if (len == 7) { /* a back reference of len + 2 bytes */
			if (i == n)
				return 0;
			len += ip[i++];
		}
		if (i == n)
			return 0;
		back += ip[i++] + 1u;
		len += 2;
		if (back > o || len > cap - o)
			return 0;
		for (size_t k = 0; k < len; k++, o++)
			op[o] = op[o - back];
	}
	return o;
}

/* ---- writing ---- */

void rdb_buf_free(struct rdb_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->n = b->cap = 0;
}

static void put(struct rdb_buf *b, const void *p, size_t n)
{
	if (b->oom || !n)
		return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n)
			cap *= 2;
		unsigned char *q = realloc(b->p, cap);
		if (!q) {
			b->oom = 1;
			return;
		}
		b->p = q, b->cap = cap;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void put_byte(struct rdb_buf *b, unsigned c)
{
	unsigned char x = (unsigned char)c;
	put(b, &x, 1);
}

/* n bytes of v, little endian. */
static void put_le(struct rdb_buf *b, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		put_byte(b, (unsigned)(v >> (8 * i)) & 0xff);
}

static void put_len(struct rdb_buf *b, uint64_t len)
{
	if (len < 64) {
		put_byte(b, (unsigned)len);
	} else if (len < 16384) {
		put_byte(b, 0x40 | (unsigned)(len >> 8));
		put_byte(b, (unsigned)len & 0xff);
	} else {
		unsigned w = len <= UINT32_MAX ? 4 : 8;
		put_byte(b, w == 4 ? 0x80 : 0x81);
		for (unsigned i = w; i-- > 0;)
			put_byte(b, (unsigned)(len >> (8 * i)) & 0xff);
	}
}

/* Redis's string2ll on p[0..n): 0 and *v, or -1. */
static int str_ll(const char *p, size_t n, long long *v)
{
	return n == 0 || n > 20 ? -1 : resp_parse_ll(p, n, v);
}

/* A string (rdbSaveRawString without compression: R1): as an integer
 * when it is one of at most 11 characters that fits 32 bits. */
static void put_string(struct rdb_buf *b, const char *p, size_t n)
{
	long long v;
	if (n <= 11 && !str_ll(p, n, &v) && v >= INT32_MIN && v <= INT32_MAX) {
		unsigned w = v >= INT8_MIN && v <= INT8_MAX     ? 1
		             : v >= INT16_MIN && v <= INT16_MAX ? 2 : 4;
		put_byte(b, 0xc0 | (w == 1 ? 0 : w == 2 ? 1 : 2));
		put_le(b, (uint64_t)v, w);
		return;
	}
	put_len(b, n);
	put(b, p, n);
}

static void put_blob(struct rdb_buf *b, const struct rdb_buf *blob)
{
	put_len(b, blob->n);
	put(b, blob->p, blob->n);
	if (blob->oom)
		b->oom = 1;
}

/* A listpack entry's back-length: the bytes, and how many (1 to 5). */
static unsigned backlen(uint64_t l, unsigned char *out)
{
	unsigned n = l <= 127 ? 1 : l < 16383 ? 2 : l < 2097151 ? 3
	             : l < 268435455 ? 4 : 5;
	for (unsigned i = 0; i < n; i++) {
		unsigned shift = 7 * (n - 1 - i);
		out[i] = (unsigned char)(((l >> shift) & 127) | (i ? 128 : 0));
	}
	return n;
}

/* The head of the listpack entry of p[0..n) (Redis's lpEncodeGetType):
 * an integer's whole encoding, or a string's header; *isint. */
static unsigned lp_head(const char *p, size_t n, unsigned char *h, int *isint)
{
	long long v;
	*isint = !str_ll(p, n, &v);
	if (*isint) {
		uint64_t u = (uint64_t)v;
		if (v >= 0 && v <= 127)
			return h[0] = (unsigned char)v, 1;
		if (v >= -4096 && v <= 4095) {
			u &= 0x1fff;
			h[0] = (unsigned char)(0xc0 | (u >> 8));
			h[1] = (unsigned char)(u & 0xff);
			return 2;
		}
		unsigned w = v >= INT16_MIN && v <= INT16_MAX ? 2
		             : v >= -8388608 && v <= 8388607 ? 3
		             : v >= INT32_MIN && v <= INT32_MAX ? 4 : 8;
		h[0] = w == 2 ? 0xf1 : w == 3 ? 0xf2 : w == 4 ? 0xf3 : 0xf4;
		for (unsigned i = 0; i < w; i++)
			h[1 + i] = (unsigned char)(u >> (8 * i));
		return 1 + w;
	}
	if (n < 64)
		return h[0] = (unsigned char)(0x80 | n), 1;
	if (n < 4096) {
		h[0] = (unsigned char)(0xe0 | (n >> 8));
		h[1] = (unsigned char)(n & 0xff);
		return 2;
	}
	h[0] = 0xf0;
	for (unsigned i = 0; i < 4; i++)
		h[1 + i] = (unsigned char)(n >> (8 * i));
	return 5;
}

/* The bytes the entry of p[0..n) takes in a listpack. */
static size_t lp_entry_size(const char *p, size_t n)
{
	unsigned char h[9], bl[5];
	int isint;
	size_t l = lp_head(p, n, h, &isint) + (isint ? 0 : n);
	return l + backlen(l, bl);
}

static void lp_put(struct rdb_buf *b, const char *p, size_t n)
{
	unsigned char h[9], bl[5];
	int isint;
	size_t hn = lp_head(p, n, h, &isint), l = hn + (isint ? 0 : n);
	put(b, h, hn);
	if (!isint)
		put(b, p, n);
	put(b, bl, backlen(l, bl));
}

/* A listpack of count entries, begun at start: the end, and the header's
 * total bytes and count. */
static void lp_close(struct rdb_buf *b, size_t start, size_t count)
{
	put_byte(b, 0xff);
	if (b->oom)
		return;
	uint32_t total = (uint32_t)(b->n - start);
	uint16_t num = count < 65535 ? (uint16_t)count : 65535;
	for (unsigned i = 0; i < 4; i++)
		b->p[start + i] = (unsigned char)(total >> (8 * i));
	b->p[start + 4] = (unsigned char)(num & 0xff);
	b->p[start + 5] = (unsigned char)(num >> 8);
}

static void lp_open(struct rdb_buf *b)
{
	static const unsigned char hdr[6];
	put(b, hdr, sizeof(hdr));
}

/* Redis 7.0's d2string of a score (a listpack's text of it). */
static size_t score_text(char *buf, size_t cap, double v)
{
	int n;
	if (isinf(v))
		n = snprintf(buf, cap, "%s", v > 0 ? "inf" : "-inf");
	else if (v == 0)
		n = snprintf(buf, cap, "%s", signbit(v) ? "-0" : "0");
	else if (v > -4503599627370495.0 && v < 4503599627370496.0 &&
	         v == (double)(long long)v)
		n = snprintf(buf, cap, "%lld", (long long)v);
	else
		n = snprintf(buf, cap, "%.17g", v);
	return n < 0 ? 0 : (size_t)n;
}

/* ---- the encodings (R1) ---- */

enum enc { E_INT, E_EMBSTR, E_RAW, E_QUICKLIST, E_INTSET, E_LISTPACK,
           E_HASHTABLE, E_SKIPLIST };

/* Every element of im at index from, from + step, ... is at most max
 * bytes (and an integer, if ints). */
static int elems_fit(const struct pmkv_image *im, size_t from, size_t step,
                     size_t max, int ints)
{
	long long v;
	for (size_t i = from, n; i < im->n; i += step) {
		const char *p = pmkv_image_at(im, i, &n);
		if (n > max || (ints && str_ll(p, n, &v)))
			return 0;
	}
	return 1;
}

static enum enc encoding_of(const struct pmkv_image *im)
{
	size_t n = 0;
	long long v;
	const char *p = im->n ? pmkv_image_at(im, 0, &n) : "";
	int all = im->n == im->len * (im->type == PMKV_T_HASH ? 2 : 1);
	switch (im->type) {
	case PMKV_T_STRING:
		return !str_ll(p, n, &v) ? E_INT
		       : n <= EMBSTR_MAX ? E_EMBSTR : E_RAW;
	case PMKV_T_LIST:
		return E_QUICKLIST;
	case PMKV_T_SET:
		return all && im->len <= SET_INTSET_ENTRIES &&
		       elems_fit(im, 0, 1, SIZE_MAX, 1) ? E_INTSET : E_HASHTABLE;
	case PMKV_T_HASH:
		return all && im->len <= HASH_LP_ENTRIES &&
		       elems_fit(im, 0, 1, HASH_LP_VALUE, 0) ? E_LISTPACK
		                                             : E_HASHTABLE;
	default:
		return all && im->len <= ZSET_LP_ENTRIES &&
		       elems_fit(im, 0, 1, ZSET_LP_VALUE, 0) ? E_LISTPACK
		                                             : E_SKIPLIST;
	}
}

const char *rdb_encoding(const struct pmkv_image *im)
{
	static const char *const names[] = {
		[E_INT] = "int", [E_EMBSTR] = "embstr", [E_RAW] = "raw",
		[E_QUICKLIST] = "quicklist", [E_INTSET] = "intset",
		[E_LISTPACK] = "listpack", [E_HASHTABLE] = "hashtable",
		[E_SKIPLIST] = "skiplist",
	};
	return names[encoding_of(im)];
}

int rdb_shared_integer(const struct pmkv_image *im)
{
	size_t n;
	long long v;
	if (im->type != PMKV_T_STRING || im->n != 1)
		return 0;
	const char *p = pmkv_image_at(im, 0, &n);
	return !str_ll(p, n, &v) && v >= 0 && v < SHARED_INTEGERS;
}

/* ---- DUMP ---- */

/* A list: a quicklist of listpacks of at most LIST_LP_BYTES (an element
 * too long for one is a node of its own). fn is called with each node's
 * first element and count; 0 nodes is not a list. */
static size_t list_nodes(const struct pmkv_image *im, size_t *first,
                         size_t *count)
{
	size_t nodes = 0, bytes = 0;
	for (size_t i = 0, n; i < im->n; i++) {
		const char *p = pmkv_image_at(im, i, &n);
		size_t es = lp_entry_size(p, n);
		if (nodes && count[nodes - 1] && bytes + es <= LIST_LP_BYTES) {
			count[nodes - 1]++;
			bytes += es;
			continue;
		}
		first[nodes] = i;
		count[nodes++] = 1;
		bytes = 7 + es; /* the header and the end too */
	}
	return nodes;
}

static void dump_list(struct rdb_buf *b, const struct pmkv_image *im)
{
	size_t *first = malloc(im->n * sizeof(size_t) + 1);
	size_t *count = malloc(im->n * sizeof(size_t) + 1);
	size_t nodes = first && count ? list_nodes(im, first, count) : 0;
	if (!first || !count)
		b->oom = 1;
	put_byte(b, T_LIST_QUICKLIST_2);
	put_len(b, nodes);
	for (size_t k = 0; k < nodes && !b->oom; k++) {
		struct rdb_buf lp = {0};
		lp_open(&lp);
		for (size_t i = first[k], n; i < first[k] + count[k]; i++) {
			const char *p = pmkv_image_at(im, i, &n);
			lp_put(&lp, p, n);
		}
		lp_close(&lp, 0, count[k]);
		put_len(b, QL_PACKED);
		put_blob(b, &lp);
		rdb_buf_free(&lp);
	}
	free(first);
	free(count);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

static void dump_intset(struct rdb_buf *b, const struct pmkv_image *im)
{
	long long *v = malloc(im->n * sizeof(*v) + 1), lo = 0, hi = 0;
	struct rdb_buf set = {0};
	if (!v) {
		b->oom = 1;
		return;
	}
	for (size_t i = 0, n; i < im->n; i++) {
		const char *p = pmkv_image_at(im, i, &n);
		str_ll(p, n, &v[i]); /* encoding_of: every one is */
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	qsort(v, im->n, sizeof(*v), cmp_ll);
	unsigned w = lo >= INT16_MIN && hi <= INT16_MAX   ? 2
	             : lo >= INT32_MIN && hi <= INT32_MAX ? 4 : 8;
	put_le(&set, w, 4);
	put_le(&set, im->n, 4);
	for (size_t i = 0; i < im->n; i++)
		put_le(&set, (uint64_t)v[i], w);
	put_byte(b, T_SET_INTSET);
	put_blob(b, &set);
	rdb_buf_free(&set);
	free(v);
}

/* A hash or a sorted set as one listpack: a hash's fields and values,
 * a sorted set's members each followed by its score's text. */
static void dump_listpack(struct rdb_buf *b, const struct pmkv_image *im)
{
	struct rdb_buf lp = {0};
	int zset = im->type == PMKV_T_ZSET;
	lp_open(&lp);
	for (size_t i = 0, n; i < im->n; i++) {
		char t[64];
		const char *p = pmkv_image_at(im, i, &n);
		lp_put(&lp, p, n);
		if (zset)
			lp_put(&lp, t, score_text(t, sizeof(t), im->score[i]));
	}
	lp_close(&lp, 0, im->n * (zset ? 2 : 1));
	put_byte(b, zset ? T_ZSET_LISTPACK : T_HASH_LISTPACK);
	put_blob(b, &lp);
	rdb_buf_free(&lp);
}

/* A set, a hash or a sorted set as plain strings (a sorted set's scores
 * as 8 bytes, from the highest, as Redis writes its skiplist). */
static void dump_plain(struct rdb_buf *b, const struct pmkv_image *im)
{
	int zset = im->type == PMKV_T_ZSET;
	put_byte(b, zset ? T_ZSET_2 : im->type == PMKV_T_SET ? T_SET : T_HASH);
	put_len(b, im->type == PMKV_T_HASH ? im->n / 2 : im->n);
	for (size_t k = 0, n; k < im->n; k++) {
		size_t i = zset ? im->n - 1 - k : k;
		const char *p = pmkv_image_at(im, i, &n);
		put_string(b, p, n);
		if (zset) {
			uint64_t bits;
			memcpy(&bits, &im->score[i], 8);
			put_le(b, bits, 8);
		}
	}
}

int rdb_dump(const struct pmkv_image *im, struct rdb_buf *out)
{
	size_t n;
	enum enc e = encoding_of(im);
	if (im->type == PMKV_T_STRING) {
		const char *p = pmkv_image_at(im, 0, &n);
		put_byte(out, T_STRING);
		put_string(out, p, n);
	} else if (im->type == PMKV_T_LIST) {
		dump_list(out, im);
	} else if (e == E_INTSET) {
		dump_intset(out, im);
	} else if (e == E_LISTPACK) {
		dump_listpack(out, im);
	} else {
		dump_plain(out, im);
	}
	put_le(out, RDB_VERSION, 2);
	if (!out->oom)
		put_le(out, rdb_crc64(0, out->p, out->n), 8);
	return out->oom ? ENOMEM : 0;
}

/* ---- RESTORE: reading (R2, R3) ---- */

struct rd {
	const unsigned char *p;
	size_t n, at;
	size_t max; /* an element's limit */
};

/* A string read: a view of the payload, or of small or heap. */
struct rstr {
	const char *p;
	size_t n;
	char *heap;
	char small[24];
};

static int rd_bytes(struct rd *r, size_t n, const unsigned char **p)
{
	if (n > r->n - r->at)
		return RDB_E_FORMAT;
	*p = r->p + r->at;
	r->at += n;
	return 0;
}

static uint64_t le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

static uint64_t be(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* A length, or (*enc = 1) a string's special encoding's number. */
static int rd_len(struct rd *r, uint64_t *len, int *enc)
{
	const unsigned char *b;
	int rc = rd_bytes(r, 1, &b);
	unsigned kind = b ? b[0] >> 6 : 0;
	*enc = 0;
	if (rc)
		return rc;
	if (kind == 0 || kind == 3) {
		*enc = kind == 3;
		*len = b[0] & 0x3f;
	} else if (kind == 1) {
		const unsigned char *c;
		if ((rc = rd_bytes(r, 1, &c)))
			return rc;
		*len = (uint64_t)(b[0] & 0x3f) << 8 | c[0];
	} else if (b[0] == 0x80 || b[0] == 0x81) {
		unsigned w = b[0] == 0x80 ? 4 : 8;
		if ((rc = rd_bytes(r, w, &b)))
			return rc;
		*len = be(b, w);
	} else {
		return RDB_E_FORMAT;
	}
	return 0;
}

static int rd_count(struct rd *r, uint64_t *n)
{
	int enc, rc = rd_len(r, n, &enc);
	return rc ? rc : enc ? RDB_E_FORMAT : 0;
}

/* An LZF string of at most cap bytes. */
static int rd_lzf(struct rd *r, size_t cap, struct rstr *s)
{
	uint64_t clen, len;
	const unsigned char *c;
	int rc = rd_count(r, &clen);
	if (!rc)
		rc = rd_count(r, &len);
	if (!rc)
		rc = rd_bytes(r, clen, &c);
	if (rc)
		return rc;
	if (len > cap)
		return RDB_E_TOOBIG;
	if (!(s->heap = malloc(len ? len : 1)))
		return RDB_E_NOMEM;
	if (!len || rdb_lzf_decompress(c, clen, s->heap, len) != len)
		return RDB_E_FORMAT;
	s->p = s->heap, s->n = len;
	return 0;
}

/* A string of at most cap bytes (s->heap freed by the caller). */
static int rd_string(struct rd *r, size_t cap, struct rstr *s)
{
	uint64_t len;
	const unsigned char *b;
	int enc, rc = rd_len(r, &len, &enc);
	s->heap = NULL;
	if (rc)
		return rc;
	if (enc && len == 3)
		return rd_lzf(r, cap, s);
	if (enc) { /* an 8, 16 or 32-bit integer */
		unsigned w = len == 0 ? 1 : len == 1 ? 2 : len == 2 ? 4 : 0;
		if (!w || (rc = rd_bytes(r, w, &b)))
			return w ? rc : RDB_E_FORMAT;
		uint64_t u = le(b, w), sign = UINT64_C(1) << (8 * w - 1);
		long long v = (long long)((u ^ sign) - sign);
		s->n = (size_t)snprintf(s->small, sizeof(s->small), "%lld", v);
		s->p = s->small;
		return 0;
	}
	if ((rc = rd_bytes(r, len, &b)))
		return rc;
	if (len > cap)
		return RDB_E_TOOBIG;
	s->p = (const char *)b, s->n = len;
	return 0;
}

/* ---- RESTORE: the values ---- */

/* Where decoded elements go: a sorted set's alternate member, score. */
struct sink {
	struct pmkv_image *im;
	int zset;
	int want_score; /* the next element is the score of the last */
	size_t max;
};

/* A score's text (strtod's whole text, at most 127 bytes, no NaN). */
static int score_of(const char *p, size_t n, double *d)
{
	char buf[128], *end;
	if (n == 0 || n >= sizeof(buf))
		return RDB_E_FORMAT;
	memcpy(buf, p, n);
	buf[n] = 0;
	*d = strtod(buf, &end);
	return *end || isnan(*d) ? RDB_E_FORMAT : 0;
}

static int sink_add(struct sink *k, const char *p, size_t n)
{
	if (k->want_score) {
		k->want_score = 0;
		return score_of(p, n, &k->im->score[k->im->n - 1]);
	}
	if (n > k->max)
		return RDB_E_TOOBIG;
	k->want_score = k->zset;
	return pmkv_image_add(k->im, p, n, 0) ? RDB_E_NOMEM : 0;
}

static int sink_int(struct sink *k, long long v)
{
	char t[24];
	return sink_add(k, t, (size_t)snprintf(t, sizeof(t), "%lld", v));
}

/* One listpack entry at lp[at] (before the end byte at lp[end]): its
 * string or integer to k; *next past its back-length. */
static int lp_entry(const unsigned char *lp, size_t at, size_t end,
                    struct sink *k, size_t *next)
{
	unsigned c = lp[at];
	size_t hn, sn = 0, room = end - at;
	uint64_t u = 0;
	unsigned bits = 0;
	if (c < 0x80)
		hn = 1, u = c, bits = 8;
	else if ((c & 0xc0) == 0x80)
		hn = 1, sn = c & 0x3f;
	else if ((c & 0xe0) == 0xc0)
		hn = 2, bits = 13;
	else if ((c & 0xf0) == 0xe0)
		hn = 2, sn = room >= 2 ? (size_t)(c & 0x0f) << 8 | lp[at + 1] : 0;
	else if (c == 0xf0)
		hn = 5, sn = room >= 5 ? le(lp + at + 1, 4) : 0;
	else if (c >= 0xf1 && c <= 0xf4)
		hn = c == 0xf4 ? 9 : 1 + (c - 0xef), bits = 8 * (unsigned)(hn - 1);
	else
		return RDB_E_FORMAT;
	int isint = bits != 0;
	size_t l = hn + (isint ? 0 : sn);
	unsigned char bl[5];
	unsigned bn = backlen(l, bl);
	if (hn > room || (!isint && sn > room - hn) || bn > room - l ||
	    memcmp(lp + at + l, bl, bn))
		return RDB_E_FORMAT;
	*next = at + l + bn;
	if (!isint)
		return sink_add(k, (const char *)lp + at + hn, sn);
	if (bits == 13)
		u = (uint64_t)(c & 0x1f) << 8 | lp[at + 1];
	else if (bits > 8)
		u = le(lp + at + 1, bits / 8);
	uint64_t sign = bits == 8 ? 0 : UINT64_C(1) << (bits - 1);
	return sink_int(k, (long long)((u ^ sign) - sign));
}

static int listpack(const struct rstr *b, struct sink *k)
{
	const unsigned char *lp = (const unsigned char *)b->p;
	size_t n = b->n, at = 6, got = 0;
	int rc = 0;
	if (n < 7 || le(lp, 4) != n || lp[n - 1] != 0xff)
		return RDB_E_FORMAT;
	while (at < n - 1 && !rc) {
		rc = lp_entry(lp, at, n - 1, k, &at);
		got++;
	}
	uint64_t count = le(lp + 4, 2);
	return rc ? rc : count != 65535 && count != got ? RDB_E_FORMAT : 0;
}

/* One ziplist entry at zl[at], before the end byte at zl[end]. */
static int zl_entry(const unsigned char *zl, size_t at, size_t end,
                    struct sink *k, size_t *next)
{
	size_t room = end - at, pn = zl[at] < 254 ? 1 : 5;
	if (zl[at] == 255 || pn >= room)
		return RDB_E_FORMAT;
	at += pn, room -= pn;
	unsigned c = zl[at];
	size_t hn = 1, sn = 0, w = 0;
	if (c >> 6 == 0)
		sn = c & 0x3f;
	else if (c >> 6 == 1)
		hn = 2, sn = room >= 2 ? (size_t)(c & 0x3f) << 8 | zl[at + 1] : 0;
	else if (c == 0x80)
		hn = 5, sn = room >= 5 ? be(zl + at + 1, 4) : 0;
	else if (c == 0xc0 || c == 0xd0 || c == 0xe0 || c == 0xf0 || c == 0xfe)
		w = c == 0xc0 ? 2 : c == 0xd0 ? 4 : c == 0xe0 ? 8
		    : c == 0xf0 ? 3 : 1;
	else if (c < 0xf1 || c > 0xfd)
		return RDB_E_FORMAT;
	if (hn + sn + w > room)
		return RDB_E_FORMAT;
	*next = at + hn + sn + w;
	if (c >> 6 < 2 || c == 0x80)
		return sink_add(k, (const char *)zl + at + hn, sn);
	if (!w) /* 1111xxxx: xxxx - 1, 0 to 12 */
		return sink_int(k, (long long)(c & 0x0f) - 1);
	uint64_t u = le(zl + at + 1, (unsigned)w), sign = UINT64_C(1)
	                                                  << (8 * w - 1);
	return sink_int(k, (long long)((u ^ sign) - sign));
}

static int ziplist(const struct rstr *b, struct sink *k)
{
	const unsigned char *zl = (const unsigned char *)b->p;
	size_t n = b->n, at = 10, got = 0, last = 10;
	int rc = 0;
	if (n < 11 || le(zl, 4) != n || zl[n - 1] != 0xff)
		return RDB_E_FORMAT;
	while (at < n - 1 && !rc) {
		last = at;
		rc = zl_entry(zl, at, n - 1, k, &at);
		got++;
	}
	uint64_t count = le(zl + 8, 2);
	if (!rc && (le(zl + 4, 4) != last || (count != 65535 && count != got)))
		rc = RDB_E_FORMAT; /* the tail's offset, the count */
	return rc;
}

static int intset(const struct rstr *b, struct sink *k)
{
	const unsigned char *p = (const unsigned char *)b->p;
	uint64_t w = b->n >= 8 ? le(p, 4) : 0, n = b->n >= 8 ? le(p + 4, 4) : 0;
	long long prev = 0;
	int rc = 0;
	if ((w != 2 && w != 4 && w != 8) || b->n != 8 + w * n)
		return RDB_E_FORMAT;
	for (uint64_t i = 0; i < n && !rc; i++) {
		uint64_t u = le(p + 8 + i * w, (unsigned)w);
		uint64_t sign = UINT64_C(1) << (8 * w - 1);
		long long v = (long long)((u ^ sign) - sign);
		if (i && v <= prev)
			return RDB_E_FORMAT; /* ascending, distinct */
		prev = v;
		rc = sink_int(k, v);
	}
	return rc;
}

/* A blob (a listpack, a ziplist, an intset) read whole into k. */
static int rd_blob(struct rd *r, struct sink *k,
                   int (*each)(const struct rstr *, struct sink *))
{
	struct rstr s;
	int rc = rd_string(r, r->max + BLOB_SLACK, &s);
	if (!rc)
		rc = each(&s, k);
	free(s.heap);
	return rc;
}

/* n strings (a plain list, set, hash's fields and values), or a sorted
 * set's members, each followed by its score (binary: 8 bytes LE, else
 * Redis's text of a double: a length byte, 253 NaN, 254 inf, 255 -inf). */
static int rd_plain(struct rd *r, struct sink *k, uint64_t n, int binary)
{
	int rc = 0;
	for (uint64_t i = 0; i < n && !rc; i++) {
		struct rstr s;
		const unsigned char *b;
		if (!(rc = rd_string(r, k->max, &s)))
			rc = sink_add(k, s.p, s.n);
		free(s.heap);
		if (rc || !k->zset)
			continue;
		k->want_score = 0;
		double *d = &k->im->score[k->im->n - 1];
		if (binary) {
			if (!(rc = rd_bytes(r, 8, &b))) {
				uint64_t u = le(b, 8);
				memcpy(d, &u, 8);
				rc = isnan(*d) ? RDB_E_FORMAT : 0;
			}
		} else if (!(rc = rd_bytes(r, 1, &b))) {
			size_t len = b[0];
			*d = len == 254 ? INFINITY : -INFINITY;
			rc = len == 253 ? RDB_E_FORMAT
			     : len >= 254 ? 0
			     : (rc = rd_bytes(r, len, &b)) ? rc
			     : score_of((const char *)b, len, d);
		}
	}
	return rc;
}

/* A quicklist: n nodes, each a ziplist (v1) or, in v2, a container kind
 * then a plain element or a listpack. */
static int rd_quicklist(struct rd *r, struct sink *k, int v2)
{
	uint64_t n, kind = QL_PACKED;
	int rc = rd_count(r, &n);
	for (uint64_t i = 0; i < n && !rc; i++) {
		if (v2 && (rc = rd_count(r, &kind)))
			break;
		if (kind == QL_PLAIN)
			rc = rd_plain(r, k, 1, 0);
		else if (kind == QL_PACKED)
			rc = rd_blob(r, k, v2 ? listpack : ziplist);
		else
			rc = RDB_E_FORMAT;
	}
	return rc;
}

static int cmp_bytes(const void *a, const void *b, void *arg)
{
	const struct pmkv_image *im = arg;
	size_t na, nb;
	const char *pa = pmkv_image_at(im, *(const size_t *)a, &na);
	const char *pb = pmkv_image_at(im, *(const size_t *)b, &nb);
	int c = memcmp(pa, pb, na < nb ? na : nb);
	return c ? c : (na > nb) - (na < nb);
}

/* R3: the members (every step-th element) distinct. */
static int distinct(const struct pmkv_image *im, size_t step)
{
	size_t n = im->n / step, *ix = malloc(n * sizeof(*ix) + 1);
	int rc = 0;
	if (!ix)
		return RDB_E_NOMEM;
	for (size_t i = 0; i < n; i++)
		ix[i] = i * step;
	qsort_r(ix, n, sizeof(*ix), cmp_bytes, (void *)im);
	for (size_t i = 1; i < n && !rc; i++)
		rc = cmp_bytes(&ix[i - 1], &ix[i], (void *)im) ? 0 : RDB_E_FORMAT;
	free(ix);
	return rc;
}

/* The value of Redis type t into k (its pmkv type set). */
static int rd_value(struct rd *r, unsigned t, struct sink *k)
{
	static const signed char type_of[] = {
		[T_STRING] = PMKV_T_STRING, [T_LIST] = PMKV_T_LIST,
		[T_SET] = PMKV_T_SET, [T_ZSET] = PMKV_T_ZSET,
		[T_HASH] = PMKV_T_HASH, [T_ZSET_2] = PMKV_T_ZSET,
		[6] = -1, [7] = -1, [8] = -1, [9] = -1, [15] = -1,
		[T_LIST_ZIPLIST] = PMKV_T_LIST, [T_SET_INTSET] = PMKV_T_SET,
		[T_ZSET_ZIPLIST] = PMKV_T_ZSET, [T_HASH_ZIPLIST] = PMKV_T_HASH,
		[T_LIST_QUICKLIST] = PMKV_T_LIST,
		[T_HASH_LISTPACK] = PMKV_T_HASH, [T_ZSET_LISTPACK] = PMKV_T_ZSET,
		[T_LIST_QUICKLIST_2] = PMKV_T_LIST,
	};
	uint64_t n = 1;
	int rc = 0;
	if (t >= sizeof(type_of) || type_of[t] < 0)
		return RDB_E_FORMAT; /* a module's, a stream, or none */
	k->im->type = type_of[t];
	k->zset = k->im->type == PMKV_T_ZSET;
	if (t == T_LIST || t == T_SET || t == T_ZSET || t == T_HASH ||
	    t == T_ZSET_2)
		rc = rd_count(r, &n);
	if (rc || n > r->n) /* R3: an element takes a byte at least */
		return rc ? rc : RDB_E_FORMAT;
	switch (t) {
	case T_LIST_ZIPLIST: case T_ZSET_ZIPLIST: case T_HASH_ZIPLIST:
		return rd_blob(r, k, ziplist);
	case T_SET_INTSET:
		return rd_blob(r, k, intset);
	case T_HASH_LISTPACK: case T_ZSET_LISTPACK:
		return rd_blob(r, k, listpack);
	case T_LIST_QUICKLIST: case T_LIST_QUICKLIST_2:
		return rd_quicklist(r, k, t == T_LIST_QUICKLIST_2);
	default:
		return rd_plain(r, k, t == T_HASH ? 2 * n : n, t == T_ZSET_2);
	}
}

/* R3: what a value must be once read. */
static int value_ok(const struct pmkv_image *im, const struct sink *k)
{
	if (k->want_score || !im->n || (im->type == PMKV_T_HASH && im->n % 2))
		return RDB_E_FORMAT;
	if (im->type == PMKV_T_LIST || im->type == PMKV_T_STRING)
		return 0;
	return distinct(im, im->type == PMKV_T_HASH ? 2 : 1);
}

/* R2: the footer. */
static int footer_ok(const unsigned char *b, size_t n)
{
	if (n < 10 || le(b + n - 10, 2) > RDB_VERSION)
		return 0;
	return rdb_crc64(0, b, n - 8) == le(b + n - 8, 8);
}

int rdb_restore(const void *p, size_t n, size_t max, struct pmkv_image *im)
{
	struct rd r = {p, n, 0, max};
	struct sink k = {im, 0, 0, max};
	const unsigned char *t;
	memset(im, 0, sizeof(*im));
	if (!footer_ok(p, n))
		return RDB_E_CHECKSUM;
	int rc = rd_bytes(&r, 1, &t);
	if (!rc)
		rc = rd_value(&r, t[0], &k);
	if (!rc)
		rc = value_ok(im, &k);
	im->len = im->type == PMKV_T_HASH ? im->n / 2 : im->n;
	if (!rc && im->type == PMKV_T_STRING)
		im->len = im->end[0];
	if (rc)
		pmkv_image_free(im);
	return rc;
}
