/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdb.h - Redis 7.0's serialization of one value, as DUMP gives it and
 * RESTORE takes it (its RDB version 10: a type byte, the value, the RDB
 * version in 2 bytes, and a CRC-64 of what precedes it in 8), and the
 * encodings Redis 7.0 would give a value (OBJECT ENCODING): pure
 * functions over bytes and images (store_copy.h), in rdb.c.
 */
#ifndef PMKV_RDB_H
#define PMKV_RDB_H

#include <stddef.h>
#include <stdint.h>

#include "store_copy.h"

#define RDB_VERSION 10 /* Redis 7.0's */

/* rdb_restore's statuses (0: the payload was read). */
enum {
	RDB_E_CHECKSUM = 1, /* too short, a newer version, a wrong CRC */
	RDB_E_FORMAT,       /* a value that is not Redis's format, or one
	                     * pmkv cannot hold (a stream, a module's) */
	RDB_E_NOMEM,
	RDB_E_TOOBIG,       /* an element longer than the limit */
};

/* A growing buffer; oom once an append could not be made. */
struct rdb_buf {
	unsigned char *p;
	size_t n, cap;
	int oom;
};
void rdb_buf_free(struct rdb_buf *b);

/* DUMP: the payload of im, whose elements were all read, appended to
 * out: 0, or ENOMEM. */
int rdb_dump(const struct pmkv_image *im, struct rdb_buf *out);
/* RESTORE: the payload p[0..n) checked and read into im (zeroed first;
 * expire_ms 0): its type and elements, a collection's members (fields)
 * distinct and never none, a sorted set's scores never NaN. Elements
 * longer than max bytes: RDB_E_TOOBIG. On a status im holds nothing. */
int rdb_restore(const void *p, size_t n, size_t max,
                struct pmkv_image *im);

/* The elements of a value rdb_encoding must see: read images with at
 * least this many (store_copy.h pmkv_image_read's max). */
#define RDB_ENCODING_SEEN 512
/* OBJECT ENCODING: what Redis 7.0 would hold im's value as, by its
 * default thresholds ("int", "embstr", "raw", "quicklist", "intset",
 * "listpack", "hashtable", "skiplist"). */
const char *rdb_encoding(const struct pmkv_image *im);
/* OBJECT REFCOUNT: 1 if Redis would share the string's object (an
 * integer from 0 to 9,999), else 0. */
int rdb_shared_integer(const struct pmkv_image *im);

/* Redis's CRC-64 (Jones polynomial, reflected, no final xor). */
uint64_t rdb_crc64(uint64_t crc, const void *p, size_t n);
/* LZF's decompression of in[0..n) into out (cap bytes): the bytes
 * written, or 0 if the input is not LZF's or does not fit. */
size_t rdb_lzf_decompress(const void *in, size_t n, void *out, size_t cap);

#endif
