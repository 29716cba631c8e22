/*
 * clwb.c - does CLWB keep the line in the cache on this processor? Each
 * round stores to LINES lines of a 4 MiB buffer (L2/L3-resident), writes
 * them back with one of: nothing, CLWB, CLFLUSHOPT, then SFENCE, and
 * then times loading the same lines again, one after the other (each
 * load's address depends on the previous load's value). A write-back that keeps the
 * line (what CLWB is meant to allow) leaves the loads as fast as after
 * no write-back; one that evicts makes them as slow as after CLFLUSHOPT.
 *
 *   cc -O2 -mclwb -mclflushopt clwb.c -o /tmp/clwb && /tmp/clwb
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BUF (4u << 20)
#define LINES 64
#define ROUNDS 20000

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(void)
{
	static const char *how[] = {"none", "clwb", "clflushopt"};
	char *b = aligned_alloc(64, BUF);
	unsigned *idx = malloc(LINES * sizeof(*idx)), seed = 1;
	for (unsigned i = 0; i < BUF; i += 64)
		b[i] = 1;
	for (int mode = 0; mode < 3; mode++) {
		double t = 0;
		uint64_t sum = 0;
		for (int r = 0; r < ROUNDS; r++) {
			for (int i = 0; i < LINES; i++) {
				idx[i] = (unsigned)rand_r(&seed) % (BUF / 64) * 64;
				b[idx[i]]++;
			}
			for (int i = 0; i < LINES; i++) {
				if (mode == 1)
					_mm_clwb(b + idx[i]);
				else if (mode == 2)
					_mm_clflushopt(b + idx[i]);
			}
			_mm_sfence();
			double t0 = now_ns();
			/* dependent loads: each address waits for the last
			 * load's value, so the misses do not overlap */
			for (int i = 0; i < LINES; i++)
				sum += *(volatile char *)(b + idx[i] + (sum & 0x100000000ull));
			t += now_ns() - t0;
		}
		printf("%-10s %6.1f ns per load after (sum %llu)\n", how[mode],
		       t / ROUNDS / LINES, (unsigned long long)sum);
	}
	return 0;
}
