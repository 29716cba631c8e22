/* wl_alloc.c - not written yet. */
#include "bench.h"
int wl_alloc(const struct bench_opts *o) { (void)o; return PMTX_E_UNSUPPORTED; }
