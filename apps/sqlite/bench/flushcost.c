/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flushcost.c - psq-flushcost: what making k scattered 4 KiB pages of a
 * memory-mapped file durable costs on the file system under DIR, the
 * work of one commit on the file backend: one msync(MS_SYNC) per page
 * (pmtx's file backend before 2026-11-26), one fdatasync of the file, or
 * what the backend does now (persist.c invariant 5): every page's
 * write-back started with sync_file_range, each waited for, then one
 * fdatasync.
 *
 *   psq-flushcost [--dir DIR] [--mb N] [--reps R] [--pages k,k,...]
 *
 * Prints one JSON line per (k, method): microseconds per commit, the mean
 * of R commits, each dirtying k random pages of an N MB file (written
 * and synced once before). The file is removed at the end.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096u

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static int commit(int fd, char *m, size_t npages, int k, int method,
                  unsigned *seed)
{
	size_t pg[64];
	for (int j = 0; j < k; j++) {
		pg[j] = (size_t)rand_r(seed) % npages * PAGE;
		m[pg[j]]++;
	}
	if (method == 1)
		return fdatasync(fd);
	if (method == 2) {
		const unsigned wait = SYNC_FILE_RANGE_WAIT_BEFORE |
		                      SYNC_FILE_RANGE_WRITE |
		                      SYNC_FILE_RANGE_WAIT_AFTER;
		for (int j = 0; j < k; j++)
			if (sync_file_range(fd, (off64_t)pg[j], PAGE,
			                    SYNC_FILE_RANGE_WRITE))
				return -1;
		for (int j = 0; j < k; j++)
			if (sync_file_range(fd, (off64_t)pg[j], PAGE, wait))
				return -1;
		return fdatasync(fd);
	}
	for (int j = 0; j < k; j++)
		if (msync(m + pg[j], PAGE, MS_SYNC))
			return -1;
	return 0;
}

static int measure(int fd, char *m, size_t npages, int k, int reps)
{
	static const char *names[] = {"msync-per-page", "fdatasync",
	                              "sync_file_range+fdatasync"};
	unsigned seed = 1;
	for (int method = 0; method < 3; method++) {
		double t0 = now();
		for (int i = 0; i < reps; i++)
			if (commit(fd, m, npages, k, method, &seed)) {
				perror("psq-flushcost: sync");
				return 1;
			}
		printf("{\"bench\":\"flushcost\",\"pages\":%d,\"method\":\"%s\","
		       "\"reps\":%d,\"us_per_commit\":%.1f}\n", k,
		       names[method], reps, (now() - t0) / reps * 1e6);
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = "/var/tmp", *pages = "1,4,16";
	size_t mb = 100;
	int reps = 200;
	static const struct option opts[] = {
		{"dir", 1, 0, 'd'}, {"mb", 1, 0, 'm'}, {"reps", 1, 0, 'r'},
		{"pages", 1, 0, 'p'}, {0, 0, 0, 0}};
	for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
		if (c == 'd')
			dir = optarg;
		else if (c == 'm')
			mb = strtoul(optarg, NULL, 10);
		else if (c == 'r')
			reps = atoi(optarg);
		else if (c == 'p')
			pages = optarg;
		else
			return 2;
	}
	if (mb < 1 || reps < 1) {
		fprintf(stderr, "psq-flushcost: --mb and --reps must be >= 1\n");
		return 2;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/psq-flushcost-%d", dir, (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	size_t len = mb << 20;
	char *m = MAP_FAILED;
	if (ftruncate(fd, (off_t)len) == 0)
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int rc = 1;
	if (m != MAP_FAILED) {
		memset(m, 1, len);
		rc = fdatasync(fd) != 0;
		char *list = strdup(pages), *save = NULL;
		for (char *t = strtok_r(list, ",", &save); t && !rc;
		     t = strtok_r(NULL, ",", &save)) {
			int k = atoi(t);
			rc = k < 1 || k > 64 ? 2 : measure(fd, m, len / PAGE, k,
			                                   reps);
		}
		free(list);
		munmap(m, len);
	} else {
		perror("psq-flushcost: mmap");
	}
	close(fd);
	unlink(path);
	return rc;
}
