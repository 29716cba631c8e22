/* How long pmtx_open takes, and the barriers and flushed lines it issues,
 * after the last process to open a region died with it open ("kill": a
 * child _exits without pmtx_close, after its last commit) or closed it
 * ("clean"), by runtime and heap. A child creates a region of SIZE_MIB
 * on PATH (PDOM-1, hardware backend), commits one transaction (with
 * "full", after filling the heap with 1 MiB blocks, one word stored in
 * each 4 KiB page of each, one block a transaction), and exits; the
 * parent times pmtx_open and prints a JSON line.
 * usage: reopen PATH SIZE_MIB undo|twin kill|clean [full] */
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

static void fill(pmtx_region *r)
{
	for (;;) {
		pmtx_tx *tx;
		pmtx_off b;
		if (pmtx_begin(r, PMTX_RT_DEFAULT, &tx))
			_exit(6);
		if (pmtx_alloc(tx, 1u << 20, &b)) {
			pmtx_abort(tx);
			return;
		}
		for (uint64_t o = 0; o < (1u << 20); o += 4096)
			if (pmtx_write(tx, (char *)pmtx_ptr(r, b) + o, &o, 8))
				_exit(7);
		if (pmtx_commit(tx))
			_exit(8);
	}
}

static void child(const char *path, uint64_t size, int twin, int kill,
                  int full)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.runtime = twin ? PMTX_RT_TWIN : PMTX_RT_UNDO;
	o.root_size = 4096;
	pmtx_region *r;
	if (pmtx_create(path, size, &o, &r))
		_exit(3);
	if (full)
		fill(r);
	pmtx_tx *tx;
	uint64_t *root = pmtx_root(r, NULL), v = 7;
	if (pmtx_begin(r, PMTX_RT_DEFAULT, &tx) ||
	    pmtx_write(tx, root, &v, 8) || pmtx_commit(tx))
		_exit(4);
	if (!kill && pmtx_close(r))
		_exit(5);
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 5 && argc != 6)
		return 2;
	const char *path = argv[1];
	uint64_t size = strtoull(argv[2], NULL, 10) << 20;
	int twin = !strcmp(argv[3], "twin"), kill = !strcmp(argv[4], "kill");
	int full = argc == 6 && !strcmp(argv[5], "full");
	unlink(path);
	pid_t pid = fork();
	if (pid == 0)
		child(path, size, twin, kill, full);
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return 5;
	pmtx_counters a, b;
	pmtx_counters_get(&a);
	double t0 = now();
	pmtx_region *r;
	int rc = pmtx_open(path, NULL, &r);
	double t1 = now();
	pmtx_counters_get(&b);
	if (rc)
		return 6;
	pmtx_heap_stats hs;
	if (pmtx_heap_check(r, &hs))
		return 7;
	printf("{\"size_mib\":%s,\"runtime\":\"%s\",\"exit\":\"%s\","
	       "\"heap_used_mib\":%.1f,\"open_ms\":%.3f,\"barriers\":%llu,"
	       "\"flushes\":%llu}\n", argv[2], argv[3], argv[4],
	       hs.allocated_bytes / 1048576.0, (t1 - t0) * 1e3,
	       (unsigned long long)(b.barriers - a.barriers),
	       (unsigned long long)(b.flushes - a.flushes));
	pmtx_close(r);
	unlink(path);
	return 0;
}
