/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_fixture.c - puts regions into the states that the tests of the pmtx
 * command (tests/python/test_pmtx_cmd.py) inspect:
 *
 *   cmd_fixture crash FILE      begin a transaction on the region's default
 *                               runtime, write "CRASHED!" over the first 8
 *                               bytes of the root, and _exit() without
 *                               committing: a region that needs recovery
 *   cmd_fixture fill FILE N     allocate N bytes, write byte i = (7i + 3)
 *                               mod 256 into them, commit; prints
 *                               "OFFSET USABLE"
 *   cmd_fixture grow FILE N     allocate N bytes in 32 KiB blocks, one
 *                               transaction each (the region grows past
 *                               its initial size); prints "SIZE MAX_SIZE"
 *   cmd_fixture hold FILE       keep the region open (locked) until
 *                               standard input ends; prints "open" first
 *   cmd_fixture journal FILE N  open the region through the journal
 *                               backend, commit N transactions, the i-th
 *                               writing "JOURNAL" and the digit i % 10
 *                               over the first 8 bytes of the root, and
 *                               _exit() without closing: the commits are
 *                               in FILE.pmtxj only
 *
 * Exit status 0, or 1 with a message on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmtx.h"

static int fail(const char *what, int rc)
{
	fprintf(stderr, "cmd_fixture: %s: %s (%s)\n", what, pmtx_strerror(rc),
	        pmtx_errmsg());
	return 1;
}

static int crash(pmtx_region *r)
{
	size_t n;
	char *root = pmtx_root(r, &n);
	pmtx_tx *tx;
	if (n < 8)
		return fail("root smaller than 8 bytes", PMTX_E_INVAL);
	int rc = pmtx_begin(r, PMTX_RT_DEFAULT, &tx);
	if (!rc)
		rc = pmtx_write(tx, root, "CRASHED!", 8);
	if (rc)
		return fail("write", rc);
	fflush(stdout);
	_exit(0); /* no commit, no close: the descriptor stays RUNNING */
}

static int fill(pmtx_region *r, size_t n)
{
	pmtx_tx *tx;
	pmtx_off off = 0;
	unsigned char *buf = malloc(n ? n : 1);
	if (!buf)
		return fail("malloc", PMTX_E_NOMEM);
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)(7 * i + 3);
	int rc = pmtx_begin(r, PMTX_RT_DEFAULT, &tx);
	if (!rc)
		rc = pmtx_alloc(tx, n, &off);
	if (!rc)
		rc = pmtx_write(tx, pmtx_ptr(r, off), buf, n);
	if (!rc)
		rc = pmtx_commit(tx);
	free(buf);
	if (rc)
		return fail("fill", rc);
	printf("%llu %zu\n", (unsigned long long)off, pmtx_usable_size(r, off));
	return 0;
}

static int grow(pmtx_region *r, size_t n)
{
	for (size_t done = 0; done < n; done += 32768) {
		pmtx_tx *tx;
		pmtx_off off;
		int rc = pmtx_begin(r, PMTX_RT_DEFAULT, &tx);
		if (!rc)
			rc = pmtx_alloc(tx, 32768 - 64, &off);
		if (!rc)
			rc = pmtx_commit(tx);
		if (rc)
			return fail("grow", rc);
	}
	printf("%zu %zu\n", pmtx_region_size(r), pmtx_region_max_size(r));
	return 0;
}

static int journal(pmtx_region *r, size_t n)
{
	char *root = pmtx_root(r, NULL);
	for (size_t i = 1; i <= n; i++) {
		char v[8] = "JOURNAL0";
		v[7] = (char)('0' + i % 10);
		pmtx_tx *tx;
		int rc = pmtx_begin(r, PMTX_RT_DEFAULT, &tx);
		if (!rc)
			rc = pmtx_write(tx, root, v, 8);
		if (!rc)
			rc = pmtx_commit(tx);
		if (rc)
			return fail("journal", rc);
	}
	fflush(stdout);
	_exit(0); /* no close: no checkpoint */
}

static int hold(void)
{
	printf("open\n");
	fflush(stdout);
	while (getchar() != EOF)
		;
	return 0;
}

int main(int argc, char **argv)
{
	int one = argc == 3 && (!strcmp(argv[1], "crash") ||
	                        !strcmp(argv[1], "hold"));
	if (!one && argc != 4) {
		fprintf(stderr, "usage: cmd_fixture crash|fill|grow|hold|journal "
		        "FILE [N]\n");
		return 2;
	}
	pmtx_options o;
	pmtx_options_init(&o);
	o.truncation = PMTX_TRUNC_LAZY;
	if (!strcmp(argv[1], "journal"))
		o.backend = PMTX_BACKEND_JOURNAL;
	pmtx_region *r;
	int rc = pmtx_open(argv[2], &o, &r);
	if (rc)
		return fail(argv[2], rc);
	size_t n = argc == 4 ? strtoull(argv[3], NULL, 0) : 0;
	if (!strcmp(argv[1], "crash"))
		rc = crash(r);
	else if (!strcmp(argv[1], "fill"))
		rc = fill(r, n);
	else if (!strcmp(argv[1], "grow"))
		rc = grow(r, n);
	else if (!strcmp(argv[1], "hold"))
		rc = hold();
	else if (!strcmp(argv[1], "journal"))
		rc = journal(r, n);
	else
		rc = fail(argv[1], PMTX_E_INVAL);
	int crc = pmtx_close(r);
	return rc ? rc : crc ? fail("close", crc) : 0;
}
