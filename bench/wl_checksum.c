/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_checksum.c - XXH3 throughput by input size: the measurement behind
 * the undo runtime's checksum-versus-second-barrier threshold.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

uint64_t pmtx_checksum(const void *p, size_t n, uint64_t seed);

int wl_checksum(const struct bench_opts *o)
{
	static const size_t sizes[] = {64, 256, 1024, 4096, 16384, 65536};
	char *buf = malloc(65536);
	memset(buf, 0x5a, 65536);
	volatile uint64_t sink = 0;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		uint64_t n = 0, t0 = bench_now_ns(), t;
		do {
			for (int k = 0; k < 64; k++)
				sink += pmtx_checksum(buf, sizes[i], n++);
			t = bench_now_ns();
		} while ((double)(t - t0) < o->seconds * 1e9);
		char params[48];
		snprintf(params, sizeof(params), "\"bytes\":%zu", sizes[i]);
		bench_emit_raw("checksum", "xxh3", params,
		               (double)(t - t0) / (double)n);
	}
	(void)sink;
	free(buf);
	return 0;
}
