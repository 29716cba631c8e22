/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testutil.c - see testutil.h.
 */
#define _GNU_SOURCE /* nftw */
#define XXH_INLINE_ALL
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "testutil.h"

/* The test program's pid (the first to hand out a path) and its prefix. */
static pid_t owner;
static char prefix[48];
static const char *const tmp_dirs[] = {"/dev/shm", "/tmp", "/var/tmp"};

static int remove_entry(const char *p, const struct stat *st, int flag,
                        struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	remove(p);
	return 0;
}

/* At exit of the test program only (a forked child that calls exit()
 * must not remove what its parent still uses). */
static void remove_all(void)
{
	if (getpid() != owner)
		return;
	for (size_t i = 0; i < sizeof(tmp_dirs) / sizeof(tmp_dirs[0]); i++) {
		DIR *d = opendir(tmp_dirs[i]);
		struct dirent *e;
		char p[512];
		while (d && (e = readdir(d)) != NULL) {
			if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
				continue;
			snprintf(p, sizeof(p), "%s/%s", tmp_dirs[i], e->d_name);
			nftw(p, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		}
		if (d)
			closedir(d);
	}
}

/* An abort (a failed assert() in the library, a test's abort()) skips
 * atexit: remove the files on the way down, then abort as asked. */
static void remove_all_and_abort(int sig)
{
	remove_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Before main: the owner is the test program, not a child it forks. */
__attribute__((constructor)) static void own_paths(void)
{
	owner = getpid();
	snprintf(prefix, sizeof(prefix), "pmtx-test-%d-", (int)owner);
	atexit(remove_all);
	signal(SIGABRT, remove_all_and_abort);
}

/* "pmtx-test-<owner>-", or "pmtx-test-<owner>-c<pid>-" in a child: its
 * counter is a copy of its parent's. */
static const char *path_prefix(void)
{
	static char child[64];
	if (getpid() == owner)
		return prefix;
	snprintf(child, sizeof(child), "%sc%d-", prefix, (int)getpid());
	return child;
}

static const char *next_path(const char *dir, const char *tag,
                             const char *suffix)
{
	static char buf[16][160];
	static unsigned n;
	char *p = buf[n % 16];
	const char *pre = path_prefix();
	snprintf(p, sizeof(buf[0]), "%s/%s%u%s%s%s", dir, pre, n++,
	         *tag ? "-" : "", tag, suffix);
	unlink(p);
	return p;
}

const char *tu_path(void)
{
	return next_path("/dev/shm", "", ".pmtx");
}

const char *tu_path_in(const char *dir, const char *tag)
{
	return next_path(dir, tag, "");
}

void tu_copy_file(const char *src, const char *dst)
{
	static char buf[1 << 16];
	int in = open(src, O_RDONLY), out;
	assert_true(in >= 0);
	unlink(dst);
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(out >= 0);
	ssize_t k;
	while ((k = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)k), k);
	assert_int_equal(k, 0);
	close(in);
	close(out);
}

void tu_assert_ok(int rc, const char *what)
{
	if (rc)
		fail_msg("%s: %s %s", what, pmtx_strerror(rc), pmtx_errmsg());
}

pmtx_options tu_options(size_t root_size, pmtx_runtime rt)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.root_size = root_size;
	o.runtime = rt;
	return o;
}

pmtx_region *tu_create_at(const char *path, size_t size,
                          const pmtx_options *o)
{
	pmtx_region *r = NULL;
	tu_assert_ok(pmtx_create(path, size, o, &r), "pmtx_create");
	return r;
}

pmtx_region *tu_create(const char **path, size_t size, size_t root_size,
                       pmtx_domain d, pmtx_backend b, pmtx_runtime rt)
{
	pmtx_options o = tu_options(root_size, rt);
	o.domain = d;
	o.backend = b;
	return tu_create_with(path, size, &o);
}

pmtx_region *tu_create_with(const char **path, size_t size,
                            const pmtx_options *o)
{
	*path = tu_path();
	return tu_create_at(*path, size, o);
}

void tu_close_and_remove(pmtx_region *r, const char *path)
{
	assert_int_equal(pmtx_close(r), 0);
	unlink(path);
}

int tu_open_on(const char *path, pmtx_backend b, unsigned flags,
               pmtx_region **r)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.backend = b;
	o.flags = flags;
	return pmtx_open(path, &o, r);
}

pmtx_region *tu_open(const char *path)
{
	pmtx_region *r = NULL;
	tu_assert_ok(pmtx_open(path, NULL, &r), "pmtx_open");
	return r;
}

void tu_offs_push(struct tu_offs *a, pmtx_off off)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
		assert_non_null(a->v);
	}
	a->v[a->n++] = off;
}

static int push_block(pmtx_off off, size_t usable, void *arg)
{
	tu_offs_push(arg, off);
	return 0;
}

static int cmp_off(const void *a, const void *b)
{
	pmtx_off x = *(const pmtx_off *)a, y = *(const pmtx_off *)b;
	return x < y ? -1 : x > y;
}

void tu_assert_heap_blocks(pmtx_region *r, struct tu_offs *used,
                           const char *ctx)
{
	struct tu_offs walked = {0};
	assert_int_equal(pmtx_heap_walk(r, push_block, &walked), 0);
	if (walked.n) /* qsort's array may not be NULL, even empty */
		qsort(walked.v, walked.n, sizeof(pmtx_off), cmp_off);
	if (used->n)
		qsort(used->v, used->n, sizeof(pmtx_off), cmp_off);
	size_t i = 0;
	while (i < walked.n && i < used->n && walked.v[i] == used->v[i])
		i++;
	pmtx_off heap = i < walked.n ? walked.v[i] : 0;
	pmtx_off in_use = i < used->n ? used->v[i] : 0;
	size_t nheap = walked.n, nused = used->n;
	free(walked.v);
	if (nheap != nused || i < nheap)
		fail_msg("%s: heap has %zu user blocks, %zu in use (leak or lost "
		         "allocation); first difference: heap %#llx, in use "
		         "%#llx", ctx, nheap, nused, (unsigned long long)heap,
		         (unsigned long long)in_use);
}

unsigned tu_run_threads(void *(*fn)(void *), void *args, size_t size,
                        unsigned n)
{
	pthread_t *th = calloc(n, sizeof(*th));
	unsigned failed = 0;
	assert_non_null(th);
	for (unsigned i = 0; i < n; i++) {
		void *arg = size ? (char *)args + i * size : (void *)(uintptr_t)i;
		assert_int_equal(pthread_create(&th[i], NULL, fn, arg), 0);
	}
	for (unsigned i = 0; i < n; i++) {
		void *ret;
		assert_int_equal(pthread_join(th[i], &ret), 0);
		failed += ret != NULL;
	}
	free(th);
	return failed;
}

pid_t tu_fork(void)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	return pid;
}

int tu_wait_exit(pid_t pid)
{
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status))
		fail_msg("child %d killed by signal %d", (int)pid,
		         WTERMSIG(status));
	return WEXITSTATUS(status);
}

void tu_pread(const char *path, void *buf, size_t n, uint64_t off)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, n, (off_t)off), (ssize_t)n);
	close(fd);
}

void tu_pwrite(const char *path, const void *buf, size_t n, uint64_t off)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, n, (off_t)off), (ssize_t)n);
	close(fd);
}

uint64_t tu_file_hash(const char *path)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	uint64_t h = (uint64_t)st.st_size;
	if (st.st_size > 0) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED,
		               fd, 0);
		assert_true(p != MAP_FAILED);
		h ^= XXH3_64bits(p, (size_t)st.st_size);
		munmap(p, (size_t)st.st_size);
	}
	close(fd);
	return h;
}

int tu_long_mode(void)
{
	const char *s = getenv("PMTX_LONG_TESTS");
	return s && *s && strcmp(s, "0") != 0;
}

uint64_t tu_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static pmtx_counters base;

void tu_count_start(void)
{
	pmtx_counters_get(&base);
}

pmtx_counters tu_count(void)
{
	pmtx_counters c;
	pmtx_counters_get(&c);
	c.barriers -= base.barriers;
	c.flushes -= base.flushes;
	c.bytes_logged -= base.bytes_logged;
	c.nt_bytes -= base.nt_bytes;
	c.msyncs -= base.msyncs;
	return c;
}
