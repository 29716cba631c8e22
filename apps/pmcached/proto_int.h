/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto_int.h - what proto_text.c and proto_meta.c share: memcached's
 * tokenizer, its number parsers, and the reading of a data block.
 *
 * Invariants:
 *  1. Tokens point inside the line they were cut from.
 *  2. The number parsers accept exactly what memcached's safe_strtoul,
 *     safe_strtol and safe_strtoull accept on a 64-bit machine.
 */
#ifndef PMCACHED_PROTO_INT_H
#define PMCACHED_PROTO_INT_H

#include "proto.h"

/* Like memcached's token_t array: n real tokens; rest is what follows the
 * last one when the line had more than MC_MAX_TOKENS - 1 of them. */
struct mc_tokens {
	size_t n;
	struct mc_str tok[MC_MAX_TOKENS];
	struct mc_str rest;
};

void mc_tokenize(const char *line, size_t len, struct mc_tokens *t);
bool mc_tok_is(struct mc_str tok, const char *word);
bool mc_strtoul(struct mc_str tok, uint32_t *out);
bool mc_strtol(struct mc_str tok, int32_t *out);
bool mc_strtoull(struct mc_str tok, uint64_t *out);
int mc_fail(struct mc_request *req, const char *text, size_t swallow,
            size_t at, size_t *consumed);
/* The command's one key, t->tok[1], in req: false if it is longer than
 * memcached's MC_KEY_MAX. */
bool mc_one_key(const struct mc_tokens *t, struct mc_request *req);
/* The data block of a storage command (set ..., ms): req->bytes bytes
 * and "\r\n" at buf + next. MC_OK with req->data set, MC_NEED_MORE, or
 * MC_ERROR when the block does not end in "\r\n". */
int mc_data_block(const char *buf, size_t len, size_t next,
                  struct mc_request *req, size_t *consumed);
bool mc_too_large(const struct mc_limits *lim, size_t nkey, uint32_t flags,
                  int32_t vlen);

#endif
