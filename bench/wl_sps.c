/* wl_sps.c - not written yet. */
#include "bench.h"
int wl_sps(const struct bench_opts *o) { (void)o; return PMTX_E_UNSUPPORTED; }
