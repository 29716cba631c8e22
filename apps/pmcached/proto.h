/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto.h - the memcached 1.6 protocol (text, meta and binary commands)
 * as pure functions from bytes to requests, and the reply formatting
 * helpers.
 *
 * This is the protocol layer of pmcached, the memcached-compatible server
 * that keeps its cache in a pmtx region. It knows nothing of storage,
 * sockets or threads, so it can be fuzzed and tested on its own; the
 * behaviour it mirrors (and every error text) is that of memcached 1.6.18.
 *
 * Invariants:
 *  1. mc_parse never reads buf[len] or beyond, never allocates and never
 *     writes outside *req and *consumed.
 *  2. Every mc_str in a request points inside buf (the one exception is
 *     the decoded base64 key, held in req->bkey).
 *  3. *consumed <= len; it is 0 for MC_NEED_MORE and MC_CLOSE, and
 *     positive otherwise.
 *  4. Parsing is a function of the bytes: feeding a connection's input in
 *     any split gives the same sequence of results as feeding it at once.
 *  5. An MC_ERROR result carries the exact reply line memcached 1.6.18
 *     sends (without "\r\n"), whether it is suppressed (noreply), and how
 *     many bytes after *consumed the server must discard unread (swallow).
 */
#ifndef PMCACHED_PROTO_H
#define PMCACHED_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MC_KEY_MAX 250      /* memcached's KEY_MAX_LENGTH */
#define MC_MAX_TOKENS 24    /* memcached's MAX_TOKENS, terminal one included */
#define MC_META_MAX_TOKENS 20 /* memcached's MFLAG_MAX_OPT_LENGTH */
#define MC_META_MAX_OPAQUE 32 /* memcached's MFLAG_MAX_OPAQUE_LENGTH */
#define MC_LONG_LINE 2048   /* a line without '\n' past this must be a get */

enum mc_status {
	MC_NEED_MORE = 0, /* incomplete line or data block: read more */
	MC_OK = 1,        /* a complete request in *req */
	MC_ERROR = 2,     /* reply req->error (unless req->error_quiet) */
	MC_CLOSE = 3,     /* memcached closes the connection here */
};

enum mc_cmd {
	MC_CMD_NONE = 0,
	MC_CMD_SET, MC_CMD_ADD, MC_CMD_REPLACE, MC_CMD_APPEND, MC_CMD_PREPEND,
	MC_CMD_CAS,
	MC_CMD_GET, MC_CMD_GETS, MC_CMD_GAT, MC_CMD_GATS,
	MC_CMD_DELETE, MC_CMD_INCR, MC_CMD_DECR, MC_CMD_TOUCH,
	MC_CMD_FLUSH_ALL, MC_CMD_VERSION, MC_CMD_VERBOSITY, MC_CMD_QUIT,
	MC_CMD_SHUTDOWN, MC_CMD_STATS,
	MC_CMD_MG, MC_CMD_MS, MC_CMD_MD, MC_CMD_MA, MC_CMD_MN, MC_CMD_ME,
	MC_CMD_LRU_CRAWLER, MC_CMD_SLABS,
	MC_CMD_COUNT
};

struct mc_limits {
	size_t item_size_max; /* -I: largest item, header included */
	size_t item_header;   /* memcached's item header + cas (48 + 8) */
	size_t get_line_max;  /* a get line longer than this closes */
	bool shutdown_enabled; /* -A: "shutdown" allowed */
};

struct mc_str {
	const char *p;
	size_t len;
};

struct mc_meta_flag {
	char flag;         /* the flag's letter */
	struct mc_str tok; /* what follows the letter, possibly empty */
};

struct mc_request {
	enum mc_cmd cmd;
	struct mc_str key;    /* first key; raw (still base64) for meta 'b' */
	struct mc_str keys;   /* get/gets/gat/gats: the key list (mc_key_next) */
	size_t nkeys;
	uint32_t flags;       /* client flags of a storage command */
	int32_t exptime;      /* storage, touch, gat, gats */
	int32_t bytes;        /* data length, without "\r\n" */
	struct mc_str data;   /* the data block, without "\r\n" */
	uint64_t cas;
	uint64_t delta;       /* incr/decr */
	bool noreply;
	bool has_delay;       /* flush_all */
	int32_t delay;
	uint32_t verbosity;
	struct mc_str arg;    /* stats argument, shutdown "graceful" */
	/* stats, lru_crawler, slabs: the tokens after the command (the
	 * first MC_ARGS_MAX) and how many there are */
#define MC_ARGS_MAX 3
	struct mc_str args[MC_ARGS_MAX];
	size_t nargs;
	/* meta commands */
	size_t nmflags;
	struct mc_meta_flag mflags[MC_MAX_TOKENS];
	bool base64;
	bool quiet;           /* q */
	char mode;            /* M token, 0 if absent */
	struct mc_str opaque; /* O token, with its 'O' */
	char bkey[MC_KEY_MAX + 1]; /* decoded base64 key */
	size_t bkey_len;
	/* errors */
	const char *error;    /* reply text without "\r\n" */
	bool error_quiet;     /* noreply: send nothing */
	size_t swallow;       /* bytes after *consumed to discard */
};

void mc_limits_default(struct mc_limits *lim);
int mc_parse(const char *buf, size_t len, const struct mc_limits *lim,
             struct mc_request *req, size_t *consumed);
/* Next key of a get line; *pos starts at 0. False when none is left. */
bool mc_key_next(const struct mc_request *req, size_t *pos,
                 struct mc_str *key);
const char *mc_cmd_name(enum mc_cmd cmd);
const struct mc_meta_flag *mc_meta_find(const struct mc_request *req,
                                        char flag);
/* The O token is over MC_META_MAX_OPAQUE bytes, its O included. */
bool mc_meta_opaque_too_long(const struct mc_request *req);

/* proto_meta.c, used by the text parser for the dispatch of mX commands */
struct mc_tokens;
int mc_parse_meta(const char *buf, size_t len, size_t line_len,
                  size_t next, const struct mc_tokens *t,
                  const struct mc_limits *lim, struct mc_request *req,
                  size_t *consumed);

/*
 * Reply helpers (proto_reply.c): each writes into out[0..cap) and returns
 * the number of bytes written, or 0 when cap is too small (nothing
 * useful is written then). They add the "\r\n".
 */
size_t mc_reply_line(char *out, size_t cap, const char *text);
size_t mc_reply_value(char *out, size_t cap, struct mc_str key,
                      uint32_t flags, struct mc_str data, bool with_cas,
                      uint64_t cas);
size_t mc_reply_number(char *out, size_t cap, uint64_t value);
size_t mc_reply_version(char *out, size_t cap, const char *version);
/* in as base64, as memcached writes a binary key back. */
size_t mc_base64_encode(struct mc_str in, char *out, size_t cap);
/* Meta reply: code is "HD", "VA", "EN", "NF", "NS", "EX", "MN", "ME".
 * The return flags of the request follow it, those memcached 1.6.18
 * echoes for that command and code (O and k always; a mg hit's c f h l s
 * t, a ma hit's c t, ms's c) with the given values; for VA the data
 * block too, unless v->data.p is NULL (the caller then sends data.len
 * bytes and "\r\n"). Returns 0 (and writes nothing) when q hides it. */
struct mc_meta_values {
	uint64_t cas;
	uint32_t flags;
	int64_t ttl;    /* -1: no expiry */
	struct mc_str data;
	uint64_t la;    /* mg l: seconds since the last access */
	bool fetched;   /* mg h: read before */
	bool key_binary; /* mg hit: the item's key is binary (k in base64) */
	const char *tail; /* after the flags on a hit: mg's " Z X W" */
};
size_t mc_reply_meta(char *out, size_t cap, const struct mc_request *req,
                     const char *code, const struct mc_meta_values *v);
bool mc_meta_quiet_hides(const struct mc_request *req, const char *code);

/*
 * The binary protocol (proto_bin.c): a 24-byte header (magic 0x80), then
 * extras, key and value, lengths in network byte order. mc_bin_parse
 * keeps invariants 1, 3 and 4 above, and every mc_str it returns points
 * inside buf.
 */
#define MC_BIN_HEADER 24
#define MC_BIN_REQ 0x80     /* a request's magic byte */
#define MC_BIN_RES 0x81     /* a response's */
/* memcached's READ_BUFFER_SIZE: a header, extras and key that do not fit
 * in it close the connection unanswered. */
#define MC_BIN_READ_BUFFER 16384

enum mc_bin_op {
	MC_BIN_GET = 0x00, MC_BIN_SET = 0x01, MC_BIN_ADD = 0x02,
	MC_BIN_REPLACE = 0x03, MC_BIN_DELETE = 0x04, MC_BIN_INCREMENT = 0x05,
	MC_BIN_DECREMENT = 0x06, MC_BIN_QUIT = 0x07, MC_BIN_FLUSH = 0x08,
	MC_BIN_GETQ = 0x09, MC_BIN_NOOP = 0x0a, MC_BIN_VERSION = 0x0b,
	MC_BIN_GETK = 0x0c, MC_BIN_GETKQ = 0x0d, MC_BIN_APPEND = 0x0e,
	MC_BIN_PREPEND = 0x0f, MC_BIN_STAT = 0x10, MC_BIN_SETQ = 0x11,
	MC_BIN_ADDQ = 0x12, MC_BIN_REPLACEQ = 0x13, MC_BIN_DELETEQ = 0x14,
	MC_BIN_INCREMENTQ = 0x15, MC_BIN_DECREMENTQ = 0x16,
	MC_BIN_QUITQ = 0x17, MC_BIN_FLUSHQ = 0x18, MC_BIN_APPENDQ = 0x19,
	MC_BIN_PREPENDQ = 0x1a, MC_BIN_TOUCH = 0x1c, MC_BIN_GAT = 0x1d,
	MC_BIN_GATQ = 0x1e, MC_BIN_SASL_LIST_MECHS = 0x20,
	MC_BIN_SASL_AUTH = 0x21, MC_BIN_SASL_STEP = 0x22, MC_BIN_GATK = 0x23,
	MC_BIN_GATKQ = 0x24,
};

enum mc_bin_status {
	MC_BIN_SUCCESS = 0x00, MC_BIN_KEY_ENOENT = 0x01,
	MC_BIN_KEY_EEXISTS = 0x02, MC_BIN_E2BIG = 0x03, MC_BIN_EINVAL = 0x04,
	MC_BIN_NOT_STORED = 0x05, MC_BIN_DELTA_BADVAL = 0x06,
	MC_BIN_AUTH_ERROR = 0x20, MC_BIN_UNKNOWN_COMMAND = 0x81,
	MC_BIN_ENOMEM = 0x82, MC_BIN_EINTERNAL = 0x84,
};

struct mc_bin_request {
	uint8_t opcode;       /* as sent: replies echo it */
	uint8_t cmd;          /* the opcode, a quiet one as its loud form */
	bool quiet;           /* a Q opcode */
	uint8_t extlen;
	uint16_t keylen;
	uint32_t bodylen;
	uint32_t opaque;      /* as sent (echoed unconverted) */
	uint64_t cas;
	struct mc_str key, value;
	uint32_t flags;       /* SET ADD REPLACE */
	uint32_t exptime;     /* SET ADD REPLACE, TOUCH GAT GATK, FLUSH */
	bool has_exptime;     /* FLUSH with its 4 bytes of extras */
	uint64_t delta, initial; /* INCREMENT DECREMENT, and exptime */
	/* MC_ERROR: the status to reply (memcached's text), then close or
	 * discard swallow bytes after *consumed */
	uint16_t status;
	bool close;
	size_t swallow;
};

int mc_bin_parse(const char *buf, size_t len, const struct mc_limits *lim,
                 struct mc_bin_request *req, size_t *consumed);
/* memcached 1.6.18's text for an error status ("" for success). */
const char *mc_bin_status_text(uint16_t status);
/* A response header to req: its opcode and opaque, the given status,
 * lengths and cas, in network byte order. */
void mc_bin_header(unsigned char out[MC_BIN_HEADER],
                   const struct mc_bin_request *req, uint16_t status,
                   uint8_t extlen, uint16_t keylen, uint32_t bodylen,
                   uint64_t cas);
/* Whether memcached sends a reply of this status to req: a quiet
 * opcode hides success, and a quiet get (GETQ GETKQ GATQ GATKQ) its miss
 * instead. */
bool mc_bin_replies(const struct mc_bin_request *req, uint16_t status);

#endif
