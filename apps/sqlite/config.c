/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config.c - a pmtx database's options, from its URI, and the pragmas the
 * VFS answers (vfs.h).
 *
 *   file:app.db?vfs=pmtx&runtime=undo&domain=pdom2&max_size=1073741824
 *
 *   runtime     undo, redo (default at create), redo-async, auto, twin:
 *               the runtime of the commit transactions; without it, the
 *               one the region was created with. twin creates a twin
 *               region, of max_size bytes (default 64 MiB under twin),
 *               fixed, half of it the back copy; it runs twin only, and
 *               twin runs in it only
 *   domain      pdom0, pdom1 (default), pdom2
 *   backend     hardware (default), emulated, file (the pages written
 *               back in place at each barrier: an ordinary file system
 *               made crash-safe), journal (the lines flushed appended to
 *               "<db>.pmtxj" at each barrier, the pages written back at
 *               checkpoints: the same guarantee on an ordinary file
 *               system, one fdatasync per commit; not under pdom2)
 *   barrier_ns  extra latency of each persist barrier (emulation)
 *   size        bytes of a new region (default 8 MiB)
 *   max_size    bytes the region may grow to (default 4 GiB, fixed at
 *               create); past it a commit fails with SQLITE_FULL
 *
 * Pragmas: journal_mode=WAL is refused with a message (vfs.c); pmtx_info
 * reports the region; pmtx_runtime reads or sets the commit runtime of
 * this process; pmtx_stats reports the commits of this process, and how
 * they went: by batch atomic write or by journal (vfs.c, B1-B4).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3

#include "vfs.h"

static int parse_size(const char *name, const char *key, size_t *out,
                      char *msg, size_t len)
{
	const char *v = sqlite3_uri_parameter(name, key);
	if (!v)
		return 0;
	char *end;
	unsigned long long n = strtoull(v, &end, 10);
	unsigned shift = 0;
	if (*end == 'k' || *end == 'K')
		shift = 10;
	else if (*end == 'm' || *end == 'M')
		shift = 20;
	else if (*end == 'g' || *end == 'G')
		shift = 30;
	if (shift)
		end++;
	if (end == v || *end || (n << shift) >> shift != n) {
		snprintf(msg, len, "URI parameter %s=%s: not a size", key, v);
		return PMTX_E_INVAL;
	}
	*out = (size_t)(n << shift);
	return 0;
}

/* One named enum parameter through its pmtx parser. */
#define PARSE_ENUM(name, key, parser, out, msg, len)                         \
	({                                                                   \
		const char *v_ = sqlite3_uri_parameter((name), (key));      \
		int rc_ = v_ ? parser(v_, (out)) : 0;                        \
		if (rc_)                                                     \
			snprintf((msg), (len), "URI parameter %s=%s: "       \
			         "unknown value", (key), v_);                \
		rc_;                                                         \
	})

int vfs_config(const char *name, struct psq_config *c, char *msg,
               size_t len)
{
	db_config_init(c);
	c->runtime = PMTX_RT_DEFAULT;
	pmtx_options *o = &c->o;
	int rc = PARSE_ENUM(name, "runtime", pmtx_runtime_parse, &c->runtime,
	                    msg, len);
	if (!rc)
		rc = PARSE_ENUM(name, "domain", pmtx_domain_parse, &o->domain,
		                msg, len);
	if (!rc)
		rc = PARSE_ENUM(name, "backend", pmtx_backend_parse,
		                &o->backend, msg, len);
	if (!rc)
		rc = parse_size(name, "size", &c->size, msg, len);
	if (!rc)
		rc = parse_size(name, "max_size", &o->max_size, msg, len);
	if (!rc && sqlite3_uri_parameter(name, "barrier_ns"))
		o->barrier_ns = sqlite3_uri_int64(name, "barrier_ns", -1);
	if (!rc && c->runtime == PMTX_RT_TWIN &&
	    !sqlite3_uri_parameter(name, "max_size"))
		o->max_size = (size_t)64 << 20;
	if (!rc && c->runtime == PMTX_RT_COW) {
		snprintf(msg, len, "runtime=cow: a database is one large "
		         "object; use undo, redo, redo-async or auto");
		rc = PMTX_E_INVAL;
	}
	return rc;
}

/* ---- pragmas ---- */

static pmtx_runtime effective(struct psq_db *db)
{
	pmtx_runtime rt = db_runtime(db);
	return rt == PMTX_RT_DEFAULT ? pmtx_region_runtime(db_region(db)) : rt;
}

static int pragma_runtime(struct psq_db *db, char **arg)
{
	pmtx_runtime rt;
	if (arg[2]) {
		if (pmtx_runtime_parse(arg[2], &rt) || rt == PMTX_RT_COW ||
		    rt == PMTX_RT_DEFAULT) {
			arg[0] = sqlite3_mprintf("pmtx_runtime: %s is not one "
			         "of undo, redo, redo-async, auto, twin", arg[2]);
			return SQLITE_ERROR;
		}
		char msg[160];
		if (db_runtime_fits(db_region(db), rt, msg, sizeof(msg))) {
			arg[0] = sqlite3_mprintf("pmtx_runtime: %s", msg);
			return SQLITE_ERROR;
		}
		db_set_runtime(db, rt);
	}
	arg[0] = sqlite3_mprintf("%s", pmtx_runtime_name(effective(db)));
	return SQLITE_OK;
}

static int pragma_info(struct psq_db *db, char **arg)
{
	pmtx_region *r = db_region(db);
	arg[0] = sqlite3_mprintf(
		"pmtx-sqlite %d.%d, runtime %s, domain %s, backend %s, "
		"file %llu bytes, region %llu of at most %llu bytes",
		PSQ_FORMAT_MAJOR, PSQ_FORMAT_MINOR,
		pmtx_runtime_name(effective(db)),
		pmtx_domain_name(pmtx_region_domain(r)),
		pmtx_backend_name(pmtx_region_backend(r)),
		(unsigned long long)db_size(db),
		(unsigned long long)pmtx_region_size(r),
		(unsigned long long)pmtx_region_max_size(r));
	return SQLITE_OK;
}

static int pragma_stats(char **arg)
{
	struct psq_stats st;
	db_stats_get(&st);
	arg[0] = sqlite3_mprintf("commits %llu, new chunks %llu, unchanged "
	         "chunks %llu, bytes written %llu, batch commits %llu, "
	         "batch rollbacks %llu, batches refused %llu, "
	         "journals opened %llu",
	         (unsigned long long)st.commits,
	         (unsigned long long)st.chunks_new,
	         (unsigned long long)st.chunks_same,
	         (unsigned long long)st.bytes_written,
	         (unsigned long long)st.batch_commits,
	         (unsigned long long)st.batch_rollbacks,
	         (unsigned long long)st.batch_refused,
	         (unsigned long long)st.journals);
	return SQLITE_OK;
}

int vfs_pragma(struct psq_db *db, char **arg)
{
	const char *p = arg[1];
	if (!sqlite3_stricmp(p, "journal_mode") && arg[2] &&
	    !sqlite3_stricmp(arg[2], "wal")) {
		arg[0] = sqlite3_mprintf("pmtx VFS: WAL is not supported: "
		         "each commit is already one failure-atomic pmtx "
		         "transaction, and its journal never reaches the "
		         "disk; keep journal_mode DELETE");
		return SQLITE_ERROR;
	}
	if (!sqlite3_stricmp(p, "pmtx_runtime"))
		return pragma_runtime(db, arg);
	if (!sqlite3_stricmp(p, "pmtx_info"))
		return pragma_info(db, arg);
	if (!sqlite3_stricmp(p, "pmtx_stats"))
		return pragma_stats(arg);
	return SQLITE_NOTFOUND;
}
