/*
 * proto_int.h - what proto_text.c and proto_meta.c share: memcached's
 * tokenizer and its number parsers.
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
bool mc_too_large(const struct mc_limits *lim, size_t nkey, uint32_t flags,
                  int32_t vlen);

#endif
