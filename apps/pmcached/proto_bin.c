/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto_bin.c - memcached's binary protocol, parsed, and its response
 * headers.
 *
 * Framing (all numbers in network byte order):
 *   request  magic 0x80, opcode, keylen(2), extlen, datatype,
 *            vbucket(2), bodylen(4), opaque(4), cas(8),
 *            then extlen bytes of extras, keylen of key, and the value:
 *            bodylen - extlen - keylen bytes
 *   response magic 0x81, the same fields, status in place of vbucket
 * memcached 1.6.18 reads a request in two steps, and so does this parser:
 * the header, extras and key first (the request is judged on them), and
 * only then the value of a SET, ADD, REPLACE, APPEND or PREPEND. Every
 * other opcode has no value: what follows its key (even when bodylen
 * says more) is the next request, as in memcached.
 *
 * Invariants:
 *  1. Nothing past buf[len] is read; nothing is allocated; every mc_str
 *     of the request points inside buf.
 *  2. The result is a function of the bytes: the header, extras and key
 *     are looked at only once all are there, a value only once it is
 *     whole, and NEED_MORE consumes nothing (proto.h 3, 4).
 *  3. A magic byte other than 0x80, or a header, extras and key longer
 *     than memcached's read buffer, is MC_CLOSE: memcached closes there
 *     without a reply.
 *  4. The checks run in memcached's order: lengths that do not add up
 *     (UNKNOWN_COMMAND, then close), a key over MC_KEY_MAX (EINVAL, then
 *     close), the opcode's own shape (EINVAL, then close), unknown and
 *     SASL opcodes (UNKNOWN_COMMAND, swallowing what memcached swallows:
 *     the body, or the value, when it is positive as a 32-bit int), and a
 *     value too large for an item (E2BIG, swallowing the value; a value
 *     of 2 GiB or more, whose length memcached itself mistakes, closes).
 */
#include <string.h>

#include "proto_int.h"

static uint16_t be16(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	return (uint16_t)(u[0] << 8 | u[1]);
}

static uint32_t be32(const char *p)
{
	return (uint32_t)be16(p) << 16 | be16(p + 2);
}

static uint64_t be64(const char *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static void put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

static void put32(unsigned char *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* The loud form of a quiet opcode in *loud; false if op has none. */
static bool loud_of(uint8_t op, uint8_t *loud)
{
	static const uint8_t pairs[][2] = {
		{MC_BIN_SETQ, MC_BIN_SET}, {MC_BIN_ADDQ, MC_BIN_ADD},
		{MC_BIN_REPLACEQ, MC_BIN_REPLACE},
		{MC_BIN_DELETEQ, MC_BIN_DELETE},
		{MC_BIN_INCREMENTQ, MC_BIN_INCREMENT},
		{MC_BIN_DECREMENTQ, MC_BIN_DECREMENT},
		{MC_BIN_QUITQ, MC_BIN_QUIT}, {MC_BIN_FLUSHQ, MC_BIN_FLUSH},
		{MC_BIN_APPENDQ, MC_BIN_APPEND},
		{MC_BIN_PREPENDQ, MC_BIN_PREPEND}, {MC_BIN_GETQ, MC_BIN_GET},
		{MC_BIN_GETKQ, MC_BIN_GETK}, {MC_BIN_GATQ, MC_BIN_GAT},
		{MC_BIN_GATKQ, MC_BIN_GATK}};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		if (pairs[i][0] == op) {
			*loud = pairs[i][1];
			return true;
		}
	}
	*loud = op;
	return false;
}

static void read_header(const char *buf, struct mc_bin_request *req)
{
	req->opcode = (uint8_t)buf[1];
	req->keylen = be16(buf + 2);
	req->extlen = (uint8_t)buf[4];
	req->bodylen = be32(buf + 8);
	memcpy(&req->opaque, buf + 12, 4);
	req->cas = be64(buf + 16);
	req->quiet = loud_of(req->opcode, &req->cmd);
}

static int fail(struct mc_bin_request *req, uint16_t status, bool close,
                size_t swallow, size_t at, size_t *consumed)
{
	req->status = status;
	req->close = close;
	req->swallow = swallow;
	*consumed = at;
	return MC_ERROR;
}

/* memcached passes a swallow count as an int: one that is not positive
 * there swallows nothing. */
static size_t as_swallow(uint32_t n)
{
	return n > 0 && n <= INT32_MAX ? n : 0;
}

/* Does the opcode's shape (extras, key, body) match what memcached
 * requires? Unknown opcodes have no shape: *known is false. */
static bool shape_ok(const struct mc_bin_request *r, bool *known)
{
	uint32_t ek = (uint32_t)r->extlen + r->keylen;
	bool empty = r->extlen == 0 && r->keylen == 0 && r->bodylen == 0;
	*known = true;
	switch (r->cmd) {
	case MC_BIN_VERSION: case MC_BIN_NOOP: case MC_BIN_QUIT:
	case MC_BIN_SASL_LIST_MECHS:
		return empty;
	case MC_BIN_FLUSH:
		return r->keylen == 0 && r->bodylen == r->extlen &&
		       (r->extlen == 0 || r->extlen == 4);
	case MC_BIN_SET: case MC_BIN_ADD: case MC_BIN_REPLACE:
		return r->extlen == 8 && r->keylen != 0 && r->bodylen >= ek;
	case MC_BIN_GET: case MC_BIN_GETK: case MC_BIN_DELETE:
		return r->extlen == 0 && r->keylen != 0 &&
		       r->bodylen == r->keylen;
	case MC_BIN_INCREMENT: case MC_BIN_DECREMENT:
		return r->extlen == 20 && r->keylen != 0 && r->bodylen == ek;
	case MC_BIN_APPEND: case MC_BIN_PREPEND:
		return r->extlen == 0 && r->keylen != 0;
	case MC_BIN_STAT:
		return r->extlen == 0;
	case MC_BIN_SASL_AUTH: case MC_BIN_SASL_STEP:
		return r->extlen == 0 && r->keylen != 0;
	case MC_BIN_TOUCH: case MC_BIN_GAT: case MC_BIN_GATK:
		return r->extlen == 4 && r->keylen != 0;
	default:
		*known = false;
		return false;
	}
}

static void read_extras(const char *ext, struct mc_bin_request *req)
{
	switch (req->cmd) {
	case MC_BIN_SET: case MC_BIN_ADD: case MC_BIN_REPLACE:
		req->flags = be32(ext);
		req->exptime = be32(ext + 4);
		break;
	case MC_BIN_INCREMENT: case MC_BIN_DECREMENT:
		req->delta = be64(ext);
		req->initial = be64(ext + 8);
		req->exptime = be32(ext + 16);
		break;
	case MC_BIN_TOUCH: case MC_BIN_GAT: case MC_BIN_GATK:
		req->exptime = be32(ext);
		break;
	case MC_BIN_FLUSH:
		req->has_exptime = req->extlen == 4;
		if (req->has_exptime)
			req->exptime = be32(ext);
		break;
	default:
		break;
	}
}

static bool has_value(uint8_t cmd)
{
	return cmd == MC_BIN_SET || cmd == MC_BIN_ADD ||
	       cmd == MC_BIN_REPLACE || cmd == MC_BIN_APPEND ||
	       cmd == MC_BIN_PREPEND;
}

/* The value of a storage opcode: E2BIG when no item can hold it, else
 * MC_OK once all of it is in buf[at..len). */
static int read_value(const char *buf, size_t len, size_t at,
                      const struct mc_limits *lim,
                      struct mc_bin_request *req, size_t *consumed)
{
	uint32_t vlen = req->bodylen - req->extlen - req->keylen;
	if (vlen > INT32_MAX - 2)
		return fail(req, MC_BIN_E2BIG, true, 0, at, consumed);
	if (mc_too_large(lim, req->keylen, req->flags, (int32_t)vlen))
		return fail(req, MC_BIN_E2BIG, false, vlen, at, consumed);
	if (len - at < vlen)
		return MC_NEED_MORE;
	req->value = (struct mc_str){buf + at, vlen};
	*consumed = at + vlen;
	return MC_OK;
}

/* The header, extras and key are in buf: judge them (invariant 4). */
static int judge(const char *buf, size_t len, size_t at,
                 const struct mc_limits *lim, struct mc_bin_request *req,
                 size_t *consumed)
{
	bool known;
	if ((uint32_t)req->keylen + req->extlen > req->bodylen)
		return fail(req, MC_BIN_UNKNOWN_COMMAND, true, 0, at, consumed);
	if (req->keylen > MC_KEY_MAX)
		return fail(req, MC_BIN_EINVAL, true, 0, at, consumed);
	bool ok = shape_ok(req, &known);
	if (!known)
		return fail(req, MC_BIN_UNKNOWN_COMMAND, false,
		            as_swallow(req->bodylen), at, consumed);
	if (!ok)
		return fail(req, MC_BIN_EINVAL, true, 0, at, consumed);
	if (req->cmd == MC_BIN_SASL_LIST_MECHS || req->cmd == MC_BIN_SASL_AUTH ||
	    req->cmd == MC_BIN_SASL_STEP) /* memcached without -S */
		return fail(req, MC_BIN_UNKNOWN_COMMAND, false,
		            as_swallow(req->bodylen - req->keylen), at,
		            consumed);
	read_extras(buf + MC_BIN_HEADER, req);
	req->key = (struct mc_str){buf + at - req->keylen, req->keylen};
	if (has_value(req->cmd))
		return read_value(buf, len, at, lim, req, consumed);
	*consumed = at;
	return MC_OK;
}

int mc_bin_parse(const char *buf, size_t len, const struct mc_limits *lim,
                 struct mc_bin_request *req, size_t *consumed)
{
	memset(req, 0, sizeof(*req));
	*consumed = 0;
	if (len < MC_BIN_HEADER)
		return MC_NEED_MORE;
	if ((unsigned char)buf[0] != MC_BIN_REQ)
		return MC_CLOSE;
	read_header(buf, req);
	size_t at = MC_BIN_HEADER + (size_t)req->extlen + req->keylen;
	if (at > MC_BIN_READ_BUFFER)
		return MC_CLOSE;
	if (len < at)
		return MC_NEED_MORE;
	int rc = judge(buf, len, at, lim, req, consumed);
	if (rc == MC_NEED_MORE) {
		*consumed = 0;
		req->key = req->value = (struct mc_str){NULL, 0};
	}
	return rc;
}

const char *mc_bin_status_text(uint16_t status)
{
	switch (status) {
	case MC_BIN_SUCCESS: return "";
	case MC_BIN_KEY_ENOENT: return "Not found";
	case MC_BIN_KEY_EEXISTS: return "Data exists for key.";
	case MC_BIN_E2BIG: return "Too large.";
	case MC_BIN_EINVAL: return "Invalid arguments";
	case MC_BIN_NOT_STORED: return "Not stored.";
	case MC_BIN_DELTA_BADVAL:
		return "Non-numeric server-side value for incr or decr";
	case MC_BIN_AUTH_ERROR: return "Auth failure.";
	case MC_BIN_UNKNOWN_COMMAND: return "Unknown command";
	case MC_BIN_ENOMEM: return "Out of memory";
	default: return "Internal error";
	}
}

void mc_bin_header(unsigned char out[MC_BIN_HEADER],
                   const struct mc_bin_request *req, uint16_t status,
                   uint8_t extlen, uint16_t keylen, uint32_t bodylen,
                   uint64_t cas)
{
	out[0] = MC_BIN_RES;
	out[1] = req->opcode;
	put16(out + 2, keylen);
	out[4] = extlen;
	out[5] = 0; /* datatype: raw bytes */
	put16(out + 6, status);
	put32(out + 8, bodylen);
	memcpy(out + 12, &req->opaque, 4);
	put32(out + 16, (uint32_t)(cas >> 32));
	put32(out + 20, (uint32_t)cas);
}

static bool is_get(uint8_t cmd)
{
	return cmd == MC_BIN_GET || cmd == MC_BIN_GETK || cmd == MC_BIN_GAT ||
	       cmd == MC_BIN_GATK;
}

bool mc_bin_replies(const struct mc_bin_request *req, uint16_t status)
{
	if (!req->quiet)
		return true;
	if (is_get(req->cmd))
		return status != MC_BIN_KEY_ENOENT;
	return status != MC_BIN_SUCCESS;
}
