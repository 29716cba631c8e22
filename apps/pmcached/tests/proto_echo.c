/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto_echo - feeds stdin to the parser and prints, on stdout, either
 * what memcached 1.6.18 would reply to it on an empty cache (default;
 * the differential test compares this with the real server byte for
 * byte) or, with --dump, one canonical line per parse result.
 *
 * Usage: mc_proto_echo [--dump] [--split N] [item_size_max]
 * --split N feeds the input N bytes at a time, so that NEED_MORE
 * handling is exercised as a server would exercise it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

static void put(const char *s, size_t n)
{
	fwrite(s, 1, n, stdout);
}

static void reply(const char *text)
{
	char line[256];
	put(line, mc_reply_line(line, sizeof(line), text));
}

static void meta_reply(const struct mc_request *r, const char *code)
{
	char line[4096];
	put(line, mc_reply_meta(line, sizeof(line), r, code, NULL));
}

static const char *storage_reply(const struct mc_request *r)
{
	switch (r->cmd) {
	case MC_CMD_SET: case MC_CMD_ADD: return "STORED";
	case MC_CMD_CAS: return "NOT_FOUND";
	default: return "NOT_STORED";
	}
}

/* memcached: add ignores C, append and prepend need an item, C makes a
 * set or replace a CAS. */
static const char *ms_reply(const struct mc_request *r)
{
	if (r->mode == 'E')
		return "HD";
	if (r->mode == 'A' || r->mode == 'P')
		return "NS";
	if (mc_meta_find(r, 'C'))
		return "NF";
	return r->mode == 'R' ? "NS" : "HD";
}

/* The reply of an empty cache; returns false when the connection ends. */
static bool empty_cache_reply(const struct mc_request *r)
{
	const char *text = NULL;
	switch (r->cmd) {
	case MC_CMD_SET: case MC_CMD_ADD: case MC_CMD_REPLACE:
	case MC_CMD_APPEND: case MC_CMD_PREPEND: case MC_CMD_CAS:
		text = storage_reply(r); break;
	case MC_CMD_GET: case MC_CMD_GETS: case MC_CMD_GAT: case MC_CMD_GATS:
		text = "END"; break;
	case MC_CMD_DELETE: case MC_CMD_INCR: case MC_CMD_DECR:
	case MC_CMD_TOUCH:
		text = "NOT_FOUND"; break;
	case MC_CMD_FLUSH_ALL: case MC_CMD_VERBOSITY: text = "OK"; break;
	case MC_CMD_VERSION: text = "VERSION 1.6.18"; break;
	case MC_CMD_QUIT: fputs("<CLOSED>", stdout); return false;
	case MC_CMD_STATS: text = "<STATS>"; break;
	case MC_CMD_MN: text = "MN"; break;
	case MC_CMD_ME: text = "EN"; break;
	case MC_CMD_MG: case MC_CMD_MA: /* a long O found replying */
		if (mc_meta_opaque_too_long(r)) {
			reply("CLIENT_ERROR opaque token too long");
			return true;
		}
		meta_reply(r, r->cmd == MC_CMD_MG ? "EN" : "NF");
		return true;
	case MC_CMD_MS: meta_reply(r, ms_reply(r)); return true;
	case MC_CMD_MD: meta_reply(r, "NF"); return true;
	default: text = "<?>"; break;
	}
	if (!r->noreply)
		reply(text);
	return true;
}

static void dump_str(const char *name, struct mc_str s)
{
	printf(" %s=", name);
	put(s.p, s.len);
}

static void dump(int rc, const struct mc_request *r, size_t consumed)
{
	static const char *const st[] = {"NEED_MORE", "OK", "ERROR", "CLOSE"};
	printf("%s %zu", st[rc], consumed);
	if (rc == MC_ERROR)
		printf(" [%s] quiet=%d swallow=%zu", r->error, r->error_quiet,
		       r->swallow);
	if (rc != MC_OK) {
		printf("\n");
		return;
	}
	printf(" %s nkeys=%zu", mc_cmd_name(r->cmd), r->nkeys);
	size_t pos = 0;
	struct mc_str k;
	while (r->keys.p && mc_key_next(r, &pos, &k))
		dump_str("k", k);
	if (!r->keys.p && r->key.p)
		dump_str("key", r->key);
	printf(" flags=%" PRIu32 " exp=%" PRId32 " bytes=%" PRId32
	       " cas=%" PRIu64 " delta=%" PRIu64 " noreply=%d",
	       r->flags, r->exptime, r->bytes, r->cas, r->delta, r->noreply);
	if (r->data.p)
		dump_str("data", r->data);
	for (size_t i = 0; i < r->nmflags; i++)
		printf(" %c:%.*s", r->mflags[i].flag, (int)r->mflags[i].tok.len,
		       r->mflags[i].tok.p);
	printf("\n");
}

static char *read_all(size_t *len)
{
	size_t cap = 1 << 16;
	char *buf = malloc(cap);
	*len = 0;
	size_t n;
	while (buf && (n = fread(buf + *len, 1, cap - *len, stdin)) > 0) {
		*len += n;
		if (*len == cap)
			buf = realloc(buf, cap *= 2);
	}
	return buf;
}

/* One result; returns false when the connection would end. */
static bool step(int rc, const struct mc_request *r, size_t consumed,
                 bool dumping)
{
	if (dumping) {
		dump(rc, r, consumed);
		return rc != MC_CLOSE;
	}
	if (rc == MC_CLOSE) {
		fputs("<CLOSED>", stdout);
		return false;
	}
	if (rc == MC_ERROR) {
		if (!r->error_quiet)
			reply(r->error);
		return true;
	}
	return empty_cache_reply(r);
}

int main(int argc, char **argv)
{
	bool dumping = false;
	size_t split = 0, len, off = 0, avail = 0;
	struct mc_limits lim;
	mc_limits_default(&lim);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dump") == 0)
			dumping = true;
		else if (strcmp(argv[i], "--split") == 0 && i + 1 < argc)
			split = strtoul(argv[++i], NULL, 10);
		else
			lim.item_size_max = strtoul(argv[i], NULL, 10);
	}
	char *buf = read_all(&len);
	if (!buf)
		return 1;
	static struct mc_request req;
	avail = split ? (split < len ? split : len) : len;
	for (;;) {
		size_t used;
		int rc = mc_parse(buf + off, avail - off, &lim, &req, &used);
		if (rc == MC_NEED_MORE) {
			if (avail == len)
				break;
			avail = avail + split < len ? avail + split : len;
			continue;
		}
		if (!step(rc, &req, used, dumping))
			break;
		off += used;
		size_t sw = rc == MC_ERROR ? req.swallow : 0;
		off = len - off < sw ? len : off + sw;
		if (avail < off)
			avail = off;
	}
	free(buf);
	return 0;
}
