/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * script_lib.c - what Redis's scripting brings beside Lua itself: SHA1
 * (a script's name), the bit library (LuaBitOp 1.0's functions, as Redis
 * loads it) and the random numbers of math.random (Redis's rand.c: the
 * 48-bit generator of lrand48, one sequence for the whole process).
 * Nothing here knows of the store or of the server.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>

#include "script_lua.h"

/* ---- SHA1 (FIPS 180-4) ---- */

struct sha1 {
	uint32_t h[5];
	uint64_t len;     /* bytes hashed */
	unsigned char b[64];
};

static uint32_t rol32(uint32_t x, unsigned n)
{
	return (x << n) | (x >> (32 - n));
}

static void sha1_block(struct sha1 *s, const unsigned char *p)
{
	uint32_t w[80], a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3],
	                e = s->h[4];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (int i = 0; i < 80; i++) {
		uint32_t f, k;
		if (i < 20)
			f = (b & c) | (~b & d), k = 0x5a827999;
		else if (i < 40)
			f = b ^ c ^ d, k = 0x6ed9eba1;
		else if (i < 60)
			f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = b ^ c ^ d, k = 0xca62c1d6;
		uint32_t t = rol32(a, 5) + f + e + k + w[i];
		e = d, d = c, c = rol32(b, 30), b = a, a = t;
	}
	s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d, s->h[4] += e;
}

static void sha1_add(struct sha1 *s, const void *data, size_t n)
{
	const unsigned char *p = data;
	while (n) {
		size_t at = s->len % 64, k = 64 - at < n ? 64 - at : n;
		memcpy(s->b + at, p, k);
		s->len += k, p += k, n -= k;
		if (s->len % 64 == 0)
			sha1_block(s, s->b);
	}
}

void script_sha1hex(char out[41], const void *data, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	struct sha1 s = {{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
	                  0xc3d2e1f0}, 0, {0}};
	unsigned char pad[72] = {0x80}, len[8];
	uint64_t bits = (uint64_t)n * 8;
	sha1_add(&s, data, n);
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)(bits >> (56 - 8 * i));
	sha1_add(&s, pad, (size_t)((119 - s.len % 64) % 64) + 1);
	sha1_add(&s, len, 8);
	for (int i = 0; i < 20; i++) {
		unsigned v = (s.h[i / 4] >> (24 - 8 * (i % 4))) & 0xff;
		out[2 * i] = hex[v >> 4];
		out[2 * i + 1] = hex[v & 15];
	}
	out[40] = 0;
}

/* ---- the bit library (LuaBitOp 1.0.2's semantics) ---- */

/* Argument i as 32 bits: the number plus 2^52 + 2^51, whose low word
 * is the integer part rounded (LuaBitOp's barg); a value that is not a
 * number is refused as Lua's own functions refuse it. */
static uint32_t barg(lua_State *L, int i)
{
	union {
		lua_Number n;
		uint64_t b;
	} u;
	u.n = lua_tonumber(L, i) + 6755399441055744.0;
	uint32_t b = (uint32_t)u.b;
	if (b == 0 && !lua_isnumber(L, i))
		luaL_typerror(L, i, "number");
	return b;
}

static int bret(lua_State *L, uint32_t b)
{
	lua_pushnumber(L, (lua_Number)(int32_t)b);
	return 1;
}

static int bit_tobit(lua_State *L)
{
	return bret(L, barg(L, 1));
}

static int bit_bnot(lua_State *L)
{
	return bret(L, ~barg(L, 1));
}

/* band, bor, bxor over all their arguments (op: 0, 1, 2). */
static int bit_fold(lua_State *L, int op)
{
	uint32_t b = barg(L, 1);
	for (int i = lua_gettop(L); i > 1; i--) {
		uint32_t v = barg(L, i);
		b = op == 0 ? b & v : op == 1 ? b | v : b ^ v;
	}
	return bret(L, b);
}

static int bit_band(lua_State *L)
{
	return bit_fold(L, 0);
}

static int bit_bor(lua_State *L)
{
	return bit_fold(L, 1);
}

static int bit_bxor(lua_State *L)
{
	return bit_fold(L, 2);
}

/* The shifts and rotations: the count taken modulo 32. */
static int bit_shift(lua_State *L, int op)
{
	uint32_t b = barg(L, 1), n = barg(L, 2) & 31;
	switch (op) {
	case 0: b <<= n; break;
	case 1: b >>= n; break;
	case 2: b = (uint32_t)((int32_t)b >> n); break;
	case 3: b = n ? (b << n) | (b >> (32 - n)) : b; break;
	default: b = n ? (b >> n) | (b << (32 - n)) : b; break;
	}
	return bret(L, b);
}

static int bit_lshift(lua_State *L)
{
	return bit_shift(L, 0);
}

static int bit_rshift(lua_State *L)
{
	return bit_shift(L, 1);
}

static int bit_arshift(lua_State *L)
{
	return bit_shift(L, 2);
}

static int bit_rol(lua_State *L)
{
	return bit_shift(L, 3);
}

static int bit_ror(lua_State *L)
{
	return bit_shift(L, 4);
}

static int bit_bswap(lua_State *L)
{
	uint32_t b = barg(L, 1);
	return bret(L, (b >> 24) | ((b >> 8) & 0xff00) | ((b & 0xff00) << 8) |
	                (b << 24));
}

/* tohex(x [, n]): n hex digits (8), upper case for a negative n. */
static int bit_tohex(lua_State *L)
{
	uint32_t b = barg(L, 1);
	int32_t n = lua_isnone(L, 2) ? 8 : (int32_t)barg(L, 2);
	const char *digits = "0123456789abcdef";
	char buf[8];
	if (n == INT32_MIN)
		n = INT32_MIN + 1;
	if (n < 0)
		n = -n, digits = "0123456789ABCDEF";
	if (n > 8)
		n = 8;
	for (int i = n; --i >= 0; b >>= 4)
		buf[i] = digits[b & 15];
	lua_pushlstring(L, buf, (size_t)n);
	return 1;
}

const luaL_Reg script_bit_funcs[] = {
	{"tobit", bit_tobit},   {"bnot", bit_bnot},       {"band", bit_band},
	{"bor", bit_bor},       {"bxor", bit_bxor},       {"lshift", bit_lshift},
	{"rshift", bit_rshift}, {"arshift", bit_arshift}, {"rol", bit_rol},
	{"ror", bit_ror},       {"bswap", bit_bswap},     {"tohex", bit_tohex},
	{NULL, NULL},
};

/* ---- math.random and math.randomseed (Redis's rand.c) ---- */

/* lrand48's state: x' = 0x5DEECE66D x + 11 mod 2^48, from the seed
 * lrand48 starts with (0x1234ABCD330E), as Redis's redisLrand48 does;
 * one sequence for the process, never reset, as in Redis (its first
 * value after a start is Redis's first too). Only a script calls it,
 * and one runs at a time. */
static uint64_t rand48 = 0x1234ABCD330EULL;
#define RAND48_MAX INT32_MAX

static int32_t lrand48_next(void)
{
	rand48 = (0x5DEECE66DULL * rand48 + 0xB) & ((1ULL << 48) - 1);
	return (int32_t)(rand48 >> 17);
}

int script_math_random(lua_State *L)
{
	lua_Number r = (lua_Number)(lrand48_next() % RAND48_MAX) /
	               (lua_Number)RAND48_MAX;
	switch (lua_gettop(L)) {
	case 0:
		lua_pushnumber(L, r);
		break;
	case 1: {
		int u = luaL_checkint(L, 1);
		luaL_argcheck(L, 1 <= u, 1, "interval is empty");
		lua_pushnumber(L, floor(r * u) + 1);
		break;
	}
	case 2: {
		int l = luaL_checkint(L, 1), u = luaL_checkint(L, 2);
		luaL_argcheck(L, l <= u, 2, "interval is empty");
		lua_pushnumber(L, floor(r * (u - l + 1)) + l);
		break;
	}
	default:
		return luaL_error(L, "wrong number of arguments");
	}
	return 1;
}

int script_math_randomseed(lua_State *L)
{
	uint32_t seed = (uint32_t)luaL_checkint(L, 1);
	rand48 = (uint64_t)seed << 16 | 0x330E;
	return 0;
}
