/*
 * diskcost.c - what a durable append costs on this disk: a 64 MiB file,
 * written with zeros and fsynced first (as the journal is), then N times
 * each of: a 4 KiB pwrite and fdatasync; a 4 KiB O_DIRECT pwrite alone;
 * an fdatasync with nothing to write; a 4 KiB O_DIRECT | O_DSYNC pwrite.
 * Medians and 90th percentiles, in microseconds.
 *
 *   cc -O2 diskcost.c -o /tmp/diskcost && /tmp/diskcost /var/tmp
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N 2000
#define SZ 4096

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int fresh(const char *path, int flags)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	char *z = calloc(1, 1 << 20);
	for (int i = 0; fd >= 0 && z && i < 64; i++)
		if (pwrite(fd, z, 1 << 20, (off_t)i << 20) != 1 << 20)
			return -1;
	free(z);
	if (fd < 0 || fsync(fd) || close(fd))
		return -1;
	return open(path, O_RDWR | flags);
}

static void run(const char *path, const char *what, int flags, int write,
                int sync)
{
	static double lat[N];
	char *b;
	int fd = fresh(path, flags);
	if (fd < 0 || posix_memalign((void **)&b, 4096, SZ)) {
		perror(path);
		exit(1);
	}
	memset(b, 7, SZ);
	for (int i = 0; i < N; i++) {
		double t = now_us();
		if (write && pwrite(fd, b, SZ, (off_t)i * SZ) != SZ)
			exit(1);
		if (sync && fdatasync(fd))
			exit(1);
		lat[i] = now_us() - t;
	}
	qsort(lat, N, sizeof(*lat), cmp);
	printf("%-34s median %6.1f  p90 %6.1f\n", what, lat[N / 2],
	       lat[N * 9 / 10]);
	close(fd);
	free(b);
}

int main(int argc, char **argv)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/diskcost.dat", argc > 1 ? argv[1]
	                                                         : ".");
	run(path, "pwrite 4 KiB + fdatasync", 0, 1, 1);
	run(path, "O_DIRECT pwrite 4 KiB", O_DIRECT, 1, 0);
	run(path, "fdatasync, nothing to write", 0, 0, 1);
	run(path, "O_DIRECT|O_DSYNC pwrite 4 KiB", O_DIRECT | O_DSYNC, 1, 0);
	unlink(path);
	return 0;
}
