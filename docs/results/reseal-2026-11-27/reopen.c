/* How long pmtx_open takes after a process dies in a twin region, by
 * region size: "rest", right after a small commit (the state word
 * MUTATING, the seal accepted), or "mid", inside the transaction after
 * it, after one store. A child creates the region, commits one small
 * transaction (and in "mid" stores in the next) and _exits without
 * closing; the parent then times pmtx_open (recovery) and prints a JSON
 * line. usage: reopen PATH SIZE_MIB rest|mid */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
	if (argc != 4)
		return 2;
	int mid = argv[3][0] == 'm';
	const char *path = argv[1];
	uint64_t size = strtoull(argv[2], NULL, 10) << 20;
	unlink(path);
	pid_t pid = fork();
	if (pid == 0) {
		pmtx_options o;
		pmtx_options_init(&o);
		o.runtime = PMTX_RT_TWIN;
		o.root_size = 4096;
		pmtx_region *r;
		if (pmtx_create(path, size, &o, &r))
			_exit(3);
		pmtx_tx *tx;
		uint64_t *root = pmtx_root(r, NULL), v = 7;
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
	printf("{\"size_mib\":%s,\"when\":\"%s\",\"open_ms\":%.3f}\n",
	       argv[2], argv[3], (t1 - t0) * 1e3);
	pmtx_close(r);
	unlink(path);
	return 0;
}
