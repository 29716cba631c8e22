/* wl_bbuf.c - not written yet. */
#include "bench.h"
int wl_bbuf(const struct bench_opts *o) { (void)o; return PMTX_E_UNSUPPORTED; }
