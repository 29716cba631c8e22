/* wl_hashmap.c - not written yet. */
#include "bench.h"
int wl_hashmap(const struct bench_opts *o) { (void)o; return PMTX_E_UNSUPPORTED; }
