/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tracegen.c - persistence traces written record by record (tracegen.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <unistd.h>
#include <cmocka.h>

#include "pmtx.h"
#include "testutil.h"
#include "tracegen.h"

char tg_path[256];
FILE *tg_file;

void trace_path(void)
{
	if (!tg_path[0]) /* one path for the whole run */
		snprintf(tg_path, sizeof(tg_path), "%s",
		         tu_path_in("/dev/shm", "tracegen.bin"));
}

void trace_begin(void)
{
	trace_path();
	tg_file = fopen(tg_path, "wb");
	assert_non_null(tg_file);
	struct pmtx_trace_file_hdr h = {
		PMTX_TRACE_MAGIC, PMTX_TRACE_MAJOR, PMTX_TRACE_MINOR,
		sizeof(h), sizeof(struct pmtx_trace_rec), 0, 0, 0,
	};
	assert_int_equal(fwrite(&h, sizeof(h), 1, tg_file), 1);
}

int trace_end(void)
{
	int rc = fclose(tg_file);
	tg_file = NULL;
	return rc;
}

void trace_cleanup(void)
{
	if (tg_file)
		trace_end();
	unlink(tg_path);
}

void trace_expect_unreadable(int (*run)(void))
{
	trace_begin();
	store(1, 100, 0, 8);
	barrier(1, 200);
	assert_int_equal(fflush(tg_file), 0);
	assert_int_equal(truncate(tg_path, 32 + 48 + 20), 0);
	assert_int_equal(run(), PMTX_E_TRUNCATED);
	trace_begin();
	store(1, 100, UINT64_MAX - 4, 8); /* [off, off + size) overflows */
	assert_int_equal(run(), PMTX_E_CORRUPT);
	tg_file = fopen(tg_path, "wb");
	assert_non_null(tg_file);
	fputs("not a trace at all, not at all, no", tg_file);
	assert_int_equal(run(), PMTX_E_BAD_MAGIC);
	unlink(tg_path);
	assert_int_equal(run(), ENOENT);
}

void rec(uint16_t type, uint32_t tid, uint64_t t, uint64_t off,
         uint64_t size, uint32_t arg, int32_t status)
{
	struct pmtx_trace_rec r = {type, 0, tid, t, 7, off, size, arg, status};
	assert_int_equal(fwrite(&r, sizeof(r), 1, tg_file), 1);
}

void store(uint32_t tid, uint64_t t, uint64_t off, uint64_t size)
{
	rec(PMTX_TEV_STORE, tid, t, off, size, 0, 0);
}

void store_kind(uint32_t tid, uint64_t t, uint64_t off, uint64_t size,
                enum pmtx_trace_store_kind kind)
{
	rec(PMTX_TEV_STORE, tid, t, off, size, (uint32_t)kind, 0);
}

void nt(uint32_t tid, uint64_t t, uint64_t off, uint64_t size)
{
	rec(PMTX_TEV_NT, tid, t, off, size, 0, 0);
}

void nt_kind(uint32_t tid, uint64_t t, uint64_t off, uint64_t size,
             enum pmtx_trace_store_kind kind)
{
	rec(PMTX_TEV_NT, tid, t, off, size, (uint32_t)kind, 0);
}

void flush(uint32_t tid, uint64_t t, uint64_t off, uint64_t size)
{
	uint32_t lines = (uint32_t)((off + size - 1) / 64 - off / 64 + 1);
	rec(PMTX_TEV_FLUSH, tid, t, off, size, lines, 0);
}

void barrier(uint32_t tid, uint64_t t)
{
	rec(PMTX_TEV_BARRIER, tid, t, 0, 0, 0, 0);
}

void barrier_kind(uint32_t tid, uint64_t t, uint32_t kind)
{
	rec(PMTX_TEV_BARRIER, tid, t, 0, 0, kind, 0);
}

void begin(uint32_t tid, uint64_t t)
{
	rec(PMTX_TEV_BEGIN, tid, t, 0, 0, 0, 0);
}

void commit(uint32_t tid, uint64_t t)
{
	rec(PMTX_TEV_COMMIT, tid, t, 0, 0, 0, 0);
}
