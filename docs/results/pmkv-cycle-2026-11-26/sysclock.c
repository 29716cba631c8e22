/*
 * sysclock.c - an LD_PRELOAD shim that stamps the calls a pmkv event loop
 * makes (read, write, epoll_wait, epoll_ctl, pwrite, fdatasync) with
 * their start and duration, and at exit writes 300 of them from the
 * middle of the run to $SYSCLOCK_OUT (default sysclock.txt): one cycle
 * of an event loop's group commit, from fdatasync to fdatasync, read off
 * the calls' own clock.
 *
 *   cc -O2 -shared -fPIC sysclock.c -o sysclock.so -ldl
 *   LD_PRELOAD=./sysclock.so pmkv ...
 *
 * It counts every thread's calls in one list without a lock: run it on a
 * server with one event loop (--io-threads 1), whose other threads are
 * idle, and read the list as that loop's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAXC 400000
static double t_start[MAXC], t_len[MAXC];
static char kind[MAXC];
static int arg[MAXC];
static long ret[MAXC], n;

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

#define STAMP(k, a, call)                                                    \
	double t0 = now_us();                                                \
	long r = (long)(call);                                               \
	if (n < MAXC) {                                                      \
		t_start[n] = t0;                                             \
		t_len[n] = now_us() - t0;                                    \
		kind[n] = k;                                                 \
		arg[n] = a;                                                  \
		ret[n++] = r;                                                \
	}                                                                    \
	return r;

#define REAL(name) static __typeof__(name) *real;                           \
	if (!real)                                                           \
		real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name);

int fdatasync(int fd)
{
	REAL(fdatasync)
	STAMP('S', fd, real(fd))
}

ssize_t pwrite(int fd, const void *b, size_t c, off_t o)
{
	REAL(pwrite)
	STAMP('P', fd, real(fd, b, c, o))
}

ssize_t read(int fd, void *b, size_t c)
{
	REAL(read)
	STAMP('R', fd, real(fd, b, c))
}

ssize_t write(int fd, const void *b, size_t c)
{
	REAL(write)
	STAMP('W', fd, real(fd, b, c))
}

int epoll_wait(int e, struct epoll_event *ev, int m, int to)
{
	REAL(epoll_wait)
	STAMP('E', to, real(e, ev, m, to))
}

int epoll_ctl(int e, int op, int fd, struct epoll_event *ev)
{
	REAL(epoll_ctl)
	STAMP('C', fd, real(e, op, fd, ev))
}

__attribute__((destructor)) static void dump(void)
{
	const char *path = getenv("SYSCLOCK_OUT");
	FILE *o = fopen(path ? path : "sysclock.txt", "w");
	if (!o)
		return;
	long from = n / 2;
	fprintf(o, "# call arg ret start_us duration_us (S fdatasync, P pwrite,"
	           " R read, W write, E epoll_wait: arg its timeout, C "
	           "epoll_ctl)\n");
	for (long i = from; i < from + 300 && i < n; i++)
		fprintf(o, "%c %d %ld %.1f %.1f\n", kind[i], arg[i], ret[i],
		        t_start[i] - t_start[from], t_len[i]);
	fclose(o);
}
