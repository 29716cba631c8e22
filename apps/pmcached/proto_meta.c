/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto_meta.c - memcached's meta commands, parsed.
 *
 * Grammar (tokens as in proto_text.c; a flag is one letter, its token is
 * the rest of the word):
 *   mg <key> <flag>*           md <key> <flag>*        ma <key> <flag>*
 *   ms <key> <datalen> <flag>* then <datalen> bytes and "\r\n"
 *   mn                         me <key>
 * Flags known to memcached 1.6.18: b c f h k l q s t u v I O P L
 * (no token checked), N T R (int32), C D J (uint64), M (one letter).
 *
 * Invariants:
 *  1. Nothing past buf[len] is read; the decoded base64 key is written
 *     to req->bkey only, never past MC_KEY_MAX bytes.
 *  2. A flag letter appears at most once per request.
 *  3. Errors on an ms line found after its data length is known swallow
 *     the data block (memcached's conn_swallow); earlier ones do not.
 *  4. An O token over 32 bytes, its O included, is an error of its own
 *     after the flags' ("opaque token too long"; memcached finds it as it
 *     writes the reply: mg only once it has looked the key up, ma once
 *     its arithmetic is done, so the parser leaves those to cmd_meta.c).
 *  5. md and ma report every flag error as "invalid or duplicate flag",
 *     and ms says "options flags too long" where the others say "options
 *     flags are too long", as memcached 1.6.18 does.
 */
#include <string.h>

#include "proto_int.h"

static const char E_FORMAT[] = "CLIENT_ERROR bad command line format";
static const char E_TOKEN[] = "CLIENT_ERROR bad token in command line format";
static const char E_OPAQUE[] = "CLIENT_ERROR opaque token too long";

bool mc_meta_opaque_too_long(const struct mc_request *req)
{
	return req->opaque.len > MC_META_MAX_OPAQUE;
}

const struct mc_meta_flag *mc_meta_find(const struct mc_request *req,
                                        char flag)
{
	for (size_t i = 0; i < req->nmflags; i++)
		if (req->mflags[i].flag == flag)
			return &req->mflags[i];
	return NULL;
}

/* 0..63 for a base64 letter, 0 for '=', -1 for anything else. */
static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '=')
		return 0;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Decodes one block of 4; returns false on 3 or more '='. */
static bool b64_block(const uint8_t v[4], size_t pad, char *out,
                      size_t *o)
{
	if (pad > 2)
		return false;
	out[(*o)++] = (char)(v[0] << 2 | v[1] >> 4);
	out[(*o)++] = (char)(v[1] << 4 | v[2] >> 2);
	out[(*o)++] = (char)(v[2] << 6 | v[3]);
	*o -= pad;
	return true;
}

/* memcached's base64_decode (from hostap): other bytes are skipped, the
 * letters must come in blocks of 4, and the first block with '=' ends
 * the decoding. An empty result is an error. */
static bool b64_decode(struct mc_str in, char *out, size_t cap, size_t *n)
{
	size_t count = 0, o = 0, pad = 0;
	uint8_t block[4];
	for (size_t i = 0; i < in.len; i++)
		count += b64_value((unsigned char)in.p[i]) >= 0;
	if (count == 0 || count % 4 != 0 || count / 4 * 3 > cap)
		return false;
	count = 0;
	for (size_t i = 0; i < in.len; i++) {
		int d = b64_value((unsigned char)in.p[i]);
		if (d < 0)
			continue;
		pad += in.p[i] == '=';
		block[count++] = (uint8_t)d;
		if (count < 4)
			continue;
		count = 0;
		if (!b64_block(block, pad, out, &o))
			return false;
		if (pad)
			break;
	}
	*n = o;
	return o > 0;
}

static const char *check_flag(struct mc_request *req, struct mc_str w)
{
	char f = w.p[0];
	struct mc_str tok = {w.p + 1, w.len - 1};
	int32_t i32;
	uint64_t u64;
	if (mc_meta_find(req, f))
		return "CLIENT_ERROR duplicate flag";
	if (strchr("bcfhklqstuvIOPL", f) && f != '\0') {
		req->base64 |= f == 'b';
		req->quiet |= f == 'q';
		if (f == 'O')
			req->opaque = w;
	} else if (f == 'N' || f == 'T' || f == 'R') {
		if (!mc_strtol(tok, &i32))
			return E_TOKEN;
	} else if (f == 'C' || f == 'D' || f == 'J') {
		if (!mc_strtoull(tok, &u64))
			return E_TOKEN;
	} else if (f == 'M') {
		if (tok.len != 1)
			return "CLIENT_ERROR incorrect length for M token";
		req->mode = tok.p[0];
	} else if (!(f == 'F' && req->cmd == MC_CMD_MS)) {
		return "CLIENT_ERROR invalid flag";
	}
	req->mflags[req->nmflags].flag = f;
	req->mflags[req->nmflags++].tok = tok;
	return NULL;
}

static const char *check_key(struct mc_request *req)
{
	if (!req->base64)
		return NULL;
	if (!b64_decode(req->key, req->bkey, MC_KEY_MAX, &req->bkey_len))
		return "CLIENT_ERROR error decoding key";
	return NULL;
}

/* ms's own checks, after the common ones. */
static const char *check_ms(struct mc_request *req)
{
	const struct mc_meta_flag *f = mc_meta_find(req, 'F');
	if (f && !mc_strtoul(f->tok, &req->flags))
		return E_FORMAT;
	if (req->mode && !strchr("EAPRS", req->mode)) /* upper case only */
		return "CLIENT_ERROR invalid mode for ms M token";
	return NULL;
}

static const char *check_ma(struct mc_request *req)
{
	if (req->mode && !strchr("I+D-", req->mode))
		return "CLIENT_ERROR invalid mode for ma M token";
	return NULL;
}

static const char *check_flags(const struct mc_tokens *t, size_t first,
                               struct mc_request *req)
{
	const char *err = NULL;
	for (size_t i = first; i < t->n && !err; i++)
		err = check_flag(req, t->tok[i]);
	if (err && (req->cmd == MC_CMD_MD || req->cmd == MC_CMD_MA))
		return "CLIENT_ERROR invalid or duplicate flag";
	if (!err)
		err = check_key(req);
	if (!err && req->cmd == MC_CMD_MS)
		err = check_ms(req);
	if (!err && req->cmd == MC_CMD_MA)
		err = check_ma(req);
	return err;
}

static int parse_ms(const char *buf, size_t len, size_t next,
                    const struct mc_tokens *t, const struct mc_limits *lim,
                    struct mc_request *req, size_t *consumed)
{
	if (t->n < 3)
		return mc_fail(req, E_FORMAT, 0, next, consumed);
	if (!mc_strtol(t->tok[2], &req->bytes) || req->bytes < 0 ||
	    req->bytes > INT32_MAX - 2)
		return mc_fail(req, E_FORMAT, 0, next, consumed);
	size_t swallow = (size_t)req->bytes + 2;
	const char *err = check_flags(t, 3, req);
	size_t nkey = req->base64 ? req->bkey_len : req->key.len;
	if (!err && mc_meta_opaque_too_long(req))
		err = E_OPAQUE;
	if (!err && mc_too_large(lim, nkey, req->flags, req->bytes))
		err = "SERVER_ERROR object too large for cache";
	if (err)
		return mc_fail(req, err, swallow, next, consumed);
	return mc_data_block(buf, len, next, req, consumed);
}

static enum mc_cmd meta_cmd(char c)
{
	switch (c) {
	case 'g': return MC_CMD_MG;
	case 's': return MC_CMD_MS;
	case 'd': return MC_CMD_MD;
	case 'a': return MC_CMD_MA;
	case 'n': return MC_CMD_MN;
	case 'e': return MC_CMD_ME;
	default: return MC_CMD_NONE;
	}
}

int mc_parse_meta(const char *buf, size_t len, size_t line_len, size_t next,
                  const struct mc_tokens *t, const struct mc_limits *lim,
                  struct mc_request *req, size_t *consumed)
{
	req->cmd = meta_cmd(t->tok[0].p[1]);
	if (req->cmd == MC_CMD_NONE)
		return mc_fail(req, "ERROR", 0, next, consumed);
	*consumed = next;
	if (req->cmd == MC_CMD_MN)
		return MC_OK;
	if (req->cmd == MC_CMD_ME && t->n != 2)
		return mc_fail(req, E_FORMAT, 0, next, consumed);
	if (t->n < 2)
		return mc_fail(req, "ERROR", 0, next, consumed);
	if (!mc_one_key(t, req))
		return mc_fail(req, E_FORMAT, 0, next, consumed);
	if (t->n + 1 > MC_META_MAX_TOKENS)
		return mc_fail(req, req->cmd == MC_CMD_MS ?
		               "CLIENT_ERROR options flags too long" :
		               "CLIENT_ERROR options flags are too long", 0,
		               next, consumed);
	if (req->cmd == MC_CMD_MS)
		return parse_ms(buf, len, next, t, lim, req, consumed);
	if (req->cmd == MC_CMD_ME)
		return MC_OK;
	const char *err = check_flags(t, 2, req);
	/* mg finds it only once it has looked, ma once done (cmd_meta.c) */
	if (!err && req->cmd == MC_CMD_MD && mc_meta_opaque_too_long(req))
		err = E_OPAQUE;
	return err ? mc_fail(req, err, 0, next, consumed) : MC_OK;
}
