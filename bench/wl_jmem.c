/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_jmem.c - journal-mem: what the journal backend keeps in anonymous
 * memory, and what giving back a checkpoint's pages costs (persist/
 * journal.c invariants 10-13).
 *
 * A region on the journal backend (in --dir, default /var/tmp: a disk)
 * with a journal of journal_mib MiB takes mib MiB of fresh blocks of
 * block_kib KiB, one redo transaction each (allocate, write, link from
 * the root). For each drop value (1: pages given back, 0:
 * PMTX_JOURNAL_DROP=0, kept until close), rounds interleaved: one line
 * with the transactions' rate and MB/s, and RssAnon (/proc/self/status)
 * before the first write, its largest growth (read after every commit)
 * and its growth at the end. An op is one transaction. The blocks are
 * read back, untimed, before the region is closed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define MIB (1ull << 20)

struct jm {
	uint64_t journal, total, block;
	int drop;
	uint64_t ns, base_kib, peak_kib, end_kib, txs;
};

static uint64_t rss_anon_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long kib = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %llu kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static int write_block(pmtx_region *r, pmtx_off *slot, const char *buf,
                       uint64_t n)
{
	pmtx_tx *tx;
	pmtx_off off;
	int rc = pmtx_begin(r, PMTX_RT_REDO, &tx);
	if (rc)
		return rc;
	if (!(rc = pmtx_alloc(tx, n, &off)) &&
	    !(rc = pmtx_write(tx, pmtx_ptr(r, off), buf, n)))
		rc = pmtx_write(tx, slot, &off, sizeof(off));
	return bench_tx_end(tx, rc);
}

/* Every block holds its index in its first word. */
static int check(pmtx_region *r, uint64_t nblk)
{
	const pmtx_off *slots = pmtx_root(r, NULL);
	for (uint64_t i = 0; i < nblk; i++)
		if (!slots[i] || *(const uint64_t *)pmtx_ptr(r, slots[i]) != i) {
			fprintf(stderr, "journal-mem: block %llu lost\n",
			        (unsigned long long)i);
			return PMTX_E_CORRUPT;
		}
	return 0;
}

static int fill(pmtx_region *r, struct jm *m)
{
	uint64_t nblk = m->total / m->block, t0 = bench_now_ns();
	pmtx_off *slots = pmtx_root(r, NULL);
	char *buf = calloc(1, m->block);
	int rc = buf ? 0 : ENOMEM;
	m->base_kib = rss_anon_kib();
	for (uint64_t i = 0; i < nblk && !rc; i++) {
		memcpy(buf, &i, sizeof(i));
		rc = write_block(r, &slots[i], buf, m->block);
		uint64_t now = rss_anon_kib() - m->base_kib;
		m->peak_kib = now > m->peak_kib ? now : m->peak_kib;
		m->txs++;
	}
	m->ns = bench_now_ns() - t0;
	m->end_kib = rss_anon_kib() - m->base_kib;
	free(buf);
	return rc ? rc : check(r, nblk);
}

static int run_one(const struct bench_opts *o, struct jm *m)
{
	char js[32];
	snprintf(js, sizeof(js), "%llu", (unsigned long long)m->journal);
	setenv("PMTX_JOURNAL_SIZE", js, 1);
	setenv("PMTX_JOURNAL_DROP", m->drop ? "1" : "0", 1);
	pmtx_options opt;
	pmtx_options_init(&opt);
	opt.backend = PMTX_BACKEND_JOURNAL;
	opt.root_size = (m->total / m->block) * sizeof(pmtx_off);
	const char *path = bench_path(o, "jmem");
	char jpath[300];
	snprintf(jpath, sizeof(jpath), "%s.pmtxj", path);
	pmtx_region *r;
	int rc = pmtx_create(path, 2 * m->total + 64 * MIB, &opt, &r);
	if (!rc) {
		rc = fill(r, m);
		int rc2 = pmtx_close(r);
		rc = rc ? rc : rc2;
	}
	unlink(path);
	unlink(jpath);
	unsetenv("PMTX_JOURNAL_SIZE");
	unsetenv("PMTX_JOURNAL_DROP");
	return rc;
}

static void emit(const struct jm *m, int round)
{
	double s = (double)m->ns / 1e9;
	printf("{\"workload\":\"journal-mem\",\"system\":\"pmtx\","
	       "\"domain\":\"pdom1\",\"backend\":\"journal\",\"params\":{"
	       "\"drop\":%d,\"journal_mib\":%llu,\"mib\":%llu,"
	       "\"block_kib\":%llu},\"round\":%d,\"ns_per_op\":%.1f,"
	       "\"ops_per_s\":%.1f,\"mb_per_s\":%.1f,"
	       "\"rss_anon_base_kib\":%llu,\"rss_anon_peak_growth_kib\":%llu,"
	       "\"rss_anon_end_growth_kib\":%llu,\"barriers_per_op\":null,"
	       "\"flushes_per_op\":null}\n",
	       m->drop, (unsigned long long)(m->journal / MIB),
	       (unsigned long long)(m->total / MIB),
	       (unsigned long long)(m->block >> 10), round,
	       (double)m->ns / (double)m->txs, (double)m->txs / s,
	       (double)m->total / MIB / s, (unsigned long long)m->base_kib,
	       (unsigned long long)m->peak_kib,
	       (unsigned long long)m->end_kib);
	fflush(stdout);
}

int wl_journal_mem(const struct bench_opts *o)
{
	long drops[2];
	int nd = bench_param_in(o, "journal-mem", "drop", "0,1", 0, 1, drops, 2);
	long jmib = bench_param1(o, "journal_mib", 4);
	long mib = bench_param1(o, "mib", 64);
	long bkib = bench_param1(o, "block_kib", 64);
	struct bench_opts d = *o;
	if (!o->dir_set)
		d.dir = "/var/tmp";
	if (nd < 0 || jmib < 1 || mib < 1 || bkib < 1 || bkib > 1024)
		return PMTX_E_INVAL;
	for (int round = 0; round < o->rounds; round++)
		for (int k = 0; k < nd; k++) {
			struct jm m = {.journal = (uint64_t)jmib * MIB,
			               .total = (uint64_t)mib * MIB,
			               .block = (uint64_t)bkib << 10,
			               .drop = (int)drops[k]};
			int rc = run_one(&d, &m);
			if (rc)
				return rc;
			emit(&m, round);
		}
	return 0;
}
