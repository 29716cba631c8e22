/* How long pmtx_open takes after a process dies in a twin region, by
 * region size: "rest", right after a small commit (the state word
 * MUTATING, the seal accepted), or "mid", inside the transaction after
 * it, after one store. A child creates the region, commits one small
 * transaction (and in "mid" stores in the next) and _exits without
 * closing; the parent then times pmtx_open (recovery) and prints a JSON
 * line. With "full", the child first fills the heap with 1 MiB blocks,
 * one word stored in each 4 KiB page of each, one block a transaction.
 * With "fast", the region is created with PMTX_CREATE_TWIN_FAST_RESTART
 * (a build that has it).
 * usage: reopen PATH SIZE_MIB rest|mid [full|fast|fullfast] */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pmtx.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5)
		return 2;
	int mid = argv[3][0] == 'm';
	int full = argc == 5 && strstr(argv[4], "full");
	int fast = argc == 5 && strstr(argv[4], "fast");
	const char *path = argv[1];
	uint64_t size = strtoull(argv[2], NULL, 10) << 20;
	unlink(path);
	pid_t pid = fork();
	if (pid == 0) {
		pmtx_options o;
		pmtx_options_init(&o);
		o.runtime = PMTX_RT_TWIN;
		o.root_size = 4096;
#ifdef PMTX_CREATE_TWIN_FAST_RESTART
		if (fast)
			o.flags |= PMTX_CREATE_TWIN_FAST_RESTART;
#else
		if (fast)
			_exit(9);
#endif
		pmtx_region *r;
		if (pmtx_create(path, size, &o, &r))
			_exit(3);
		pmtx_tx *tx;
		uint64_t *root = pmtx_root(r, NULL), v = 7;
		while (full) {
			pmtx_off b;
			if (pmtx_begin(r, PMTX_RT_DEFAULT, &tx))
				_exit(6);
			if (pmtx_alloc(tx, 1u << 20, &b)) {
				pmtx_abort(tx);
				break;
			}
			for (uint64_t o = 0; o < (1u << 20); o += 4096)
				if (pmtx_write(tx, (char *)pmtx_ptr(r, b) + o, &o,
				               8))
					_exit(7);
			if (pmtx_commit(tx))
				_exit(8);
		}
		if (pmtx_begin(r, PMTX_RT_DEFAULT, &tx) ||
		    pmtx_write(tx, root, &v, 8) || pmtx_commit(tx))
			_exit(4);
		if (mid && (pmtx_begin(r, PMTX_RT_DEFAULT, &tx) ||
		            pmtx_write(tx, root + 64, &v, 8)))
			_exit(5);
		_exit(0); /* no close: MUTATING and the seal stay */
	}
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return 5;
	double t0 = now();
	pmtx_region *r;
	int rc = pmtx_open(path, NULL, &r);
	double t1 = now();
	if (rc)
		return 6;
	pmtx_heap_stats hs;
	if (pmtx_heap_check(r, &hs))
		return 7;
	printf("{\"size_mib\":%s,\"when\":\"%s\",\"fast\":%d,"
	       "\"heap_used_mib\":%.1f,\"open_ms\":%.3f}\n", argv[2], argv[3],
	       fast, hs.allocated_bytes / 1048576.0, (t1 - t0) * 1e3);
	pmtx_close(r);
	unlink(path);
	return 0;
}
