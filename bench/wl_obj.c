/* wl_obj.c - not written yet. */
#include "bench.h"
int wl_single_obj(const struct bench_opts *o) { (void)o; return PMTX_E_UNSUPPORTED; }
int wl_multi_obj(const struct bench_opts *o) { (void)o; return PMTX_E_UNSUPPORTED; }
