/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto_token.c - memcached's tokenizer and number parsers.
 *
 * Invariants:
 *  1. mc_tokenize reads line[0..len) only; tokens and rest point into it.
 *  2. At most MC_MAX_TOKENS - 1 tokens are cut; what follows goes to rest,
 *     as memcached's tokenize_command leaves it in its last token.
 *  3. The number parsers read tok.p[0..tok.len) only and accept what
 *     strtoul/strtol/strtoull (base 10) accept when the whole token is
 *     used, with memcached's extra refusal of negative unsigned values.
 */
#include <string.h>

#include "proto_int.h"

void mc_tokenize(const char *line, size_t len, struct mc_tokens *t)
{
	size_t i = 0;
	t->n = 0;
	t->rest.p = line + len;
	t->rest.len = 0;
	while (i < len) {
		while (i < len && line[i] == ' ')
			i++;
		if (i >= len)
			break;
		if (t->n == MC_MAX_TOKENS - 1) {
			t->rest.p = line + i;
			t->rest.len = len - i;
			break;
		}
		size_t s = i;
		while (i < len && line[i] != ' ')
			i++;
		t->tok[t->n].p = line + s;
		t->tok[t->n].len = i - s;
		t->n++;
	}
}

bool mc_tok_is(struct mc_str tok, const char *word)
{
	size_t n = strlen(word);
	return tok.len == n && memcmp(tok.p, word, n) == 0;
}

/* Sign and magnitude of a base-10 token; false if not all digits (after
 * one optional sign), if there is no digit, or on 64-bit overflow. */
static bool digits(struct mc_str tok, bool *neg, uint64_t *mag)
{
	size_t i = 0;
	*neg = false;
	*mag = 0;
	if (tok.len > 0 && (tok.p[0] == '+' || tok.p[0] == '-'))
		*neg = tok.p[i++] == '-';
	if (i == tok.len)
		return false;
	for (; i < tok.len; i++) {
		unsigned d = (unsigned char)tok.p[i] - '0';
		if (d > 9 || *mag > (UINT64_MAX - d) / 10)
			return false;
		*mag = *mag * 10 + d;
	}
	return true;
}

/* strtoull semantics: "-n" is 2^64 - n; memcached then refuses a value
 * with a '-' whose top bit is set. */
bool mc_strtoull(struct mc_str tok, uint64_t *out)
{
	bool neg;
	uint64_t mag;
	if (!digits(tok, &neg, &mag))
		return false;
	uint64_t v = neg ? (uint64_t)0 - mag : mag;
	if (neg && (int64_t)v < 0)
		return false;
	*out = v;
	return true;
}

/* safe_strtoul on LP64: an unsigned long, truncated to 32 bits. */
bool mc_strtoul(struct mc_str tok, uint32_t *out)
{
	uint64_t v;
	if (!mc_strtoull(tok, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

/* safe_strtol on LP64: a long in range, truncated to 32 bits. */
bool mc_strtol(struct mc_str tok, int32_t *out)
{
	bool neg;
	uint64_t mag;
	if (!digits(tok, &neg, &mag))
		return false;
	if (mag > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
		return false;
	uint64_t v = neg ? (uint64_t)0 - mag : mag;
	*out = (int32_t)(uint32_t)v;
	return true;
}
