/*
 * testutil.c - see testutil.h.
 */
#define XXH_INLINE_ALL
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "testutil.h"

const char *tu_path(void)
{
	static char buf[16][96];
	static unsigned n;
	char *p = buf[n % 16];
	snprintf(p, sizeof(buf[0]), "/dev/shm/pmtx-test-%d-%u.pmtx",
	         (int)getpid(), n++);
	unlink(p);
	return p;
}

pmtx_region *tu_create(const char **path, size_t size, size_t root_size,
                       pmtx_domain d, pmtx_backend b, pmtx_runtime rt)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.root_size = root_size;
	o.domain = d;
	o.backend = b;
	o.runtime = rt;
	return tu_create_with(path, size, &o);
}

pmtx_region *tu_create_with(const char **path, size_t size,
                            const pmtx_options *o)
{
	*path = tu_path();
	pmtx_region *r = NULL;
	int rc = pmtx_create(*path, size, o, &r);
	if (rc)
		fprintf(stderr, "pmtx_create: %s %s\n", pmtx_strerror(rc),
		        pmtx_errmsg());
	assert_int_equal(rc, 0);
	return r;
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
	int rc = pmtx_open(path, NULL, &r);
	if (rc)
		fprintf(stderr, "pmtx_open: %s %s\n", pmtx_strerror(rc),
		        pmtx_errmsg());
	assert_int_equal(rc, 0);
	return r;
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
