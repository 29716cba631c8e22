/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resp.h - the Redis protocol (RESP2) as a pure function from bytes to
 * requests, and the reply builders.
 *
 * This is the protocol layer of pmkv, the Redis-protocol key-value server
 * that keeps its data in a pmtx region. It knows nothing of storage,
 * sockets or threads, so it can be fuzzed and tested on its own; what it
 * accepts, and every error text, is what Redis's processInlineBuffer and
 * processMultibulkBuffer (networking.c) and sdssplitargs (sds.c) do, with
 * the deliberate differences listed at the top of resp.c.
 *
 * Invariants:
 *  1. resp_parse never reads in[n] or beyond and never writes the input.
 *  2. *used is 0 for RESP_MORE and RESP_EPROTO, and in (0, n] for RESP_OK.
 *  3. Parsing is a function of the bytes: if in[0..n) gives RESP_OK or
 *     RESP_EPROTO, every longer input with that prefix gives the same
 *     result (same *used, arguments and error text), and every shorter
 *     prefix gives RESP_MORE. So any split of a connection's input gives
 *     the same sequence of requests.
 *  4. On RESP_OK, argc <= max_args, argl[i] <= max_bulk and
 *     argv[i][argl[i]] == 0; the arguments live in storage q owns, valid
 *     until the next resp_parse or resp_req_free on q.
 *  5. RESP_MORE never allocates, and costs the headers and line ends it
 *     looks at, never a bulk's contents (see resp.c).
 */
#ifndef PMKV_RESP_H
#define PMKV_RESP_H

#include <stddef.h>

#if defined(__GNUC__)
#define RESP_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define RESP_PRINTF(f, a)
#endif

enum { RESP_OK = 0, RESP_MORE = 1, RESP_EPROTO = 2 };

struct resp_limits {
	size_t max_bulk;   /* largest bulk string accepted (bytes) */
	size_t max_args;   /* most arguments in one multibulk request */
	size_t max_inline; /* longest inline request line, and longest
	                      '*'/'$' header line */
};
#define RESP_LIMITS_DEFAULT { 64u << 20, 1024u * 1024u, 64u << 10 }

struct resp_req {
	size_t argc;
	char **argv;   /* argv[i] points to argl[i] bytes, then a NUL (binary
	                  safe by argl) */
	size_t *argl;
	int is_inline; /* 1 if the request came as an inline command */
	/* private: storage the parser owns and reuses between calls */
	size_t argv_cap, argl_cap; /* entries allocated */
	char *store;      /* the arguments' bytes, each followed by a NUL */
	size_t store_cap;
	char errbuf[48];  /* "Protocol error: expected '$', got 'x'" */
};

void resp_req_init(struct resp_req *q);
void resp_req_free(struct resp_req *q);

/*
 * Parses one request from in[0..n).
 * RESP_OK: a whole request; *used = the bytes it took; q is filled (argc
 *   is 0 for an empty inline line or "*0\r\n" / "*-1\r\n": skip it).
 * RESP_MORE: in[0..n) is a proper prefix of a request; nothing consumed:
 *   call again with the same bytes and more.
 * RESP_EPROTO: malformed; *err is Redis's text ("Protocol error: ...") or
 *   "out of memory"; reply "-ERR " *err and close, as Redis does. *err
 *   stays valid until the next resp_parse or resp_req_free on q.
 */
int resp_parse(const char *in, size_t n, const struct resp_limits *lim,
               struct resp_req *q, size_t *used, const char **err);

/* The texts of *err (but "Protocol error: expected '$', got 'x'", which
 * names the byte it met), as Redis words them. */
extern const char RESP_E_MBULK[];     /* a multibulk count out of range */
extern const char RESP_E_BULK[];      /* a bulk length out of range */
extern const char RESP_E_INLINE_BIG[]; /* an inline line too long */
extern const char RESP_E_MBULK_BIG[]; /* a '*' header line too long */
extern const char RESP_E_BULK_BIG[];  /* a '$' header line too long */
extern const char RESP_E_QUOTES[];    /* inline quotes left open */
extern const char RESP_E_NOMEM[];

/*
 * A look ahead, for hints only: if in[0..n) begins with a whole multibulk
 * request, returns its argument count, with the first k arguments (or
 * all, if fewer) in the input itself (argv[i], argl[i]: not copied, not
 * NUL-terminated) and *used as resp_parse's; else -1 (an inline request,
 * a short or malformed one: resp_parse says which). Reads no bulk's
 * contents, and never writes.
 */
long resp_peek_args(const char *in, size_t n, const struct resp_limits *lim,
                    size_t k, const char **argv, size_t *argl, size_t *used);

/*
 * Replies, appended to a growable buffer. On allocation failure o->oom
 * is set and later calls do nothing (until resp_out_reset).
 */
struct resp_out {
	char *p;
	size_t n, cap;
	int oom;
};

void resp_out_init(struct resp_out *o);
void resp_out_free(struct resp_out *o);
/* n = 0 and oom = 0; keeps the memory. */
void resp_out_reset(struct resp_out *o);
/* +s\r\n (a CR or LF in s becomes a space) */
void resp_add_simple(struct resp_out *o, const char *s);
/* -<formatted>\r\n: the caller includes "ERR " etc. As Redis's
 * addReplyErrorFormat: CR/LF at either end are trimmed, the others
 * become spaces. */
void resp_add_error(struct resp_out *o, const char *fmt, ...)
	RESP_PRINTF(2, 3);
void resp_add_int(struct resp_out *o, long long v);        /* :v\r\n */
void resp_add_bulk(struct resp_out *o, const void *p, size_t n);
                                                /* $n\r\n<bytes>\r\n */
void resp_add_null(struct resp_out *o);                    /* $-1\r\n */
/* p[0..n) as it is: replies already encoded (pub/sub's messages, a
 * blocked command's reply) */
void resp_add_raw(struct resp_out *o, const void *p, size_t n);
void resp_add_array(struct resp_out *o, long long n);
                                        /* *n\r\n (-1: null array) */

/* Helpers for commands (false / -1 when i >= argc): */
/* argv[i] equals word, ASCII letters compared case-insensitively */
int resp_arg_is(const struct resp_req *q, size_t i, const char *word);
/* argv[i] as Redis's string2ll reads it: base 10, optional '-', no
 * spaces, no '+', no leading zero but in "0", no "-0", no overflow.
 * 0 and *v set, or -1. */
int resp_arg_ll(const struct resp_req *q, size_t i, long long *v);
/* The same reading of s[0..len). */
int resp_parse_ll(const char *s, size_t len, long long *v);

#endif
