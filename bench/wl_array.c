/* wl_array.c - not written yet. */
#include "bench.h"
int wl_array(const struct bench_opts *o) { (void)o; return PMTX_E_UNSUPPORTED; }
int wl_array_raw(const struct bench_opts *o) { (void)o; return PMTX_E_UNSUPPORTED; }
