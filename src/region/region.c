/*
 * region.c - creating, validating and mapping region files.
 *
 * Invariants
 *  1. open never writes the file: every check (size, magic, checksum,
 *     version, features, layout, geometry) runs on a pread copy of the
 *     header before the file is mapped, and a failure leaves it untouched.
 *  2. Exactly one process has a region open: an exclusive, non-blocking
 *     flock is taken before anything is read, and held until close.
 *  3. create makes the file with O_EXCL and mode 0600, reserves its blocks
 *     (posix_fallocate), and writes the header last, after every other
 *     area is durable: a crash during create leaves a file that open
 *     rejects (bad magic or checksum), never one that half works.
 *  4. The geometry (where each area lies) is a pure function of (size,
 *     ndesc, root_size); open recomputes it and requires the header to
 *     agree, so every area offset used later is known to be in bounds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "region.h"

#define LOG0_SIZE (16u * 1024u)
#define ALOG0_SIZE (4u * 1024u)
#define MAX_NDESC 4096u
#define PAGE 4096u

int region_geometry(uint64_t size, unsigned ndesc, uint64_t root_size,
                    struct region_geometry *g)
{
	if (ndesc == 0 || ndesc > MAX_NDESC || root_size > size)
		return PMTX_E_INVAL;
	g->log0_size = LOG0_SIZE;
	g->alog0_size = ALOG0_SIZE;
	g->desc_off = PMTX_HDR_SIZE;
	g->log0_off = ALIGN_UP(g->desc_off + (uint64_t)ndesc * 256, PAGE);
	g->root_off = g->log0_off + (uint64_t)ndesc * (LOG0_SIZE + ALOG0_SIZE);
	g->meta_off = ALIGN_UP(g->root_off + sizeof(struct pmtx_objhdr) +
	                               root_size, PAGE);
	if (g->meta_off >= size)
		return PMTX_E_TOO_SMALL;
	uint64_t rest = size - g->meta_off;
	uint64_t nsb = rest / (PMTX_SB_SIZE + sizeof(struct pmtx_sb_meta));
	for (; nsb > 0; nsb--) {
		g->heap_off = ALIGN_UP(g->meta_off +
		                       nsb * sizeof(struct pmtx_sb_meta), PAGE);
		if (g->heap_off + nsb * (uint64_t)PMTX_SB_SIZE <= size)
			break;
	}
	if (nsb == 0)
		return PMTX_E_TOO_SMALL;
	g->nsb = nsb;
	return 0;
}

static int lock_fd(int fd)
{
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK) {
		pmtx__set_errmsg("region is already open in another process");
		return PMTX_E_LOCKED;
	}
	return errno;
}

static int map_file(pmtx_region *r, size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
	               0);
	if (p == MAP_FAILED)
		return errno;
	r->base = p;
	r->size = size;
	r->hdr = p;
	return 0;
}

static int persist_setup(pmtx_region *r, const pmtx_options *o)
{
	return persist_init(&r->persist, o->domain, o->backend, o->barrier_ns,
	                    r->base, r->size);
}

static void fill_uuid(uint8_t uuid[16])
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, uuid, 16) : -1;
	if (fd >= 0)
		close(fd);
	if (n != 16) {
		uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
		memcpy(uuid, &t, 8);
		t = pmtx_checksum(&t, 8, 1);
		memcpy(uuid + 8, &t, 8);
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40); /* RFC 4122 v4 */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
}

static void fill_header(struct pmtx_hdr *h, size_t size, const pmtx_options *o,
                        const struct region_geometry *g)
{
	memset(h, 0, sizeof(*h));
	h->magic = PMTX_MAGIC;
	h->major = PMTX_FORMAT_MAJOR;
	h->minor = PMTX_FORMAT_MINOR;
	h->hdr_size = PMTX_HDR_SIZE;
	if (o->layout)
		strncpy(h->layout, o->layout, PMTX_LAYOUT_LEN - 1);
	fill_uuid(h->uuid);
	h->size = size;
	h->create_time = (uint64_t)time(NULL);
	h->desc_off = g->desc_off;
	h->ndesc = o->ndesc;
	h->desc_size = sizeof(struct pmtx_desc);
	h->log0_off = g->log0_off;
	h->log0_size = g->log0_size;
	h->alog0_size = g->alog0_size;
	h->root_off = g->root_off;
	h->root_size = o->root_size;
	h->meta_off = g->meta_off;
	h->heap_off = g->heap_off;
	h->nsb = g->nsb;
	h->sb_size = PMTX_SB_SIZE;
	h->default_runtime = o->runtime == PMTX_RT_DEFAULT ? PMTX_RT_UNDO
	                                                   : o->runtime;
	h->checksum = pmtx_checksum(h, offsetof(struct pmtx_hdr, checksum),
	                            PMTX_CSUM_SEED_HDR);
}

static int reserve_space(int fd, const char *path, size_t size)
{
	struct statvfs vfs;
	if (fstatvfs(fd, &vfs) == 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < size) {
		pmtx__set_errmsg("%s: %zu bytes requested, %llu free", path,
		                 size,
		                 (unsigned long long)vfs.f_bavail * vfs.f_frsize);
		return PMTX_E_NO_SPACE;
	}
	int rc = posix_fallocate(fd, 0, (off_t)size);
	if (rc == ENOSPC || rc == EFBIG)
		return PMTX_E_NO_SPACE;
	if (rc == EOPNOTSUPP || rc == EINVAL)
		rc = ftruncate(fd, (off_t)size) ? errno : 0;
	return rc;
}

static int options_ok(const pmtx_options *o)
{
	if ((unsigned)o->domain > PMTX_PDOM2 ||
	    (unsigned)o->backend > PMTX_BACKEND_FILE ||
	    (unsigned)o->runtime > PMTX_RT_COW ||
	    (o->layout && strlen(o->layout) >= PMTX_LAYOUT_LEN))
		return PMTX_E_INVAL;
	return 0;
}

int region_create(const char *path, size_t size, const pmtx_options *o,
                  pmtx_region **out)
{
	struct region_geometry g;
	int rc = options_ok(o);
	if (rc)
		return rc;
	if ((rc = region_geometry(size, o->ndesc, o->root_size, &g)))
		return rc;
	pmtx_region *r = calloc(1, sizeof(*r));
	if (!r)
		return ENOMEM;
	r->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (r->fd < 0) {
		rc = errno;
		free(r);
		return rc;
	}
	if ((rc = lock_fd(r->fd)) || (rc = reserve_space(r->fd, path, size)) ||
	    (rc = map_file(r, size)) || (rc = persist_setup(r, o))) {
		if (r->base)
			munmap(r->base, r->size);
		close(r->fd);
		unlink(path);
		free(r);
		return rc;
	}
	/* Build the header in DRAM now; it is copied in by seal, last. */
	struct pmtx_hdr *h = malloc(sizeof(*h));
	if (!h) {
		region_unmap(r);
		unlink(path);
		return ENOMEM;
	}
	fill_header(h, size, o, &g);
	r->hdr = h; /* until sealed */
	r->default_rt = (pmtx_runtime)h->default_runtime;
	*out = r;
	return 0;
}

int region_seal_header(pmtx_region *r)
{
	struct persist *p = &r->persist;
	struct pmtx_hdr *h = (struct pmtx_hdr *)r->hdr;
	/* Every area written during create first (invariant 3): descriptors
	 * and first log chunks. The rest is zero from posix_fallocate. */
	persist_flush(p, r->base + h->desc_off, h->root_off - h->desc_off);
	int rc = persist_barrier(p);
	if (rc)
		return rc;
	memcpy(r->base, h, sizeof(*h));
	free(h);
	r->hdr = (const struct pmtx_hdr *)r->base;
	persist_flush(p, r->base, PMTX_HDR_SIZE);
	rc = persist_barrier(p);
	/* Whatever the domain, a newly created file must survive a power
	 * loss: make its blocks and size durable once. */
	if (!rc && (msync(r->base, r->size, MS_SYNC) != 0 || fsync(r->fd) != 0))
		rc = PMTX_E_IO;
	return rc;
}

/* ---- open-time validation (invariant 1) ---- */

static int check_ident(const struct pmtx_hdr *h)
{
	if (h->magic != PMTX_MAGIC) {
		pmtx__set_errmsg("bad magic %016llx: not a pmtx region",
		                 (unsigned long long)h->magic);
		return PMTX_E_BAD_MAGIC;
	}
	uint64_t c = pmtx_checksum(h, offsetof(struct pmtx_hdr, checksum),
	                           PMTX_CSUM_SEED_HDR);
	if (c != h->checksum) {
		pmtx__set_errmsg("header checksum %016llx, expected %016llx",
		                 (unsigned long long)h->checksum,
		                 (unsigned long long)c);
		return PMTX_E_BAD_CHECKSUM;
	}
	if (h->major != PMTX_FORMAT_MAJOR || h->hdr_size != PMTX_HDR_SIZE ||
	    (h->feat_incompat & ~PMTX_FEAT_INCOMPAT_SUPPORTED) ||
	    (h->feat_ro_compat & ~PMTX_FEAT_RO_COMPAT_SUPPORTED)) {
		pmtx__set_errmsg("format %u.%u (features %llx/%llx) not "
		                 "supported by this build (format %u.%u)",
		                 h->major, h->minor,
		                 (unsigned long long)h->feat_incompat,
		                 (unsigned long long)h->feat_ro_compat,
		                 PMTX_FORMAT_MAJOR, PMTX_FORMAT_MINOR);
		return PMTX_E_BAD_VERSION;
	}
	return 0;
}

static int check_layout_name(const struct pmtx_hdr *h, const pmtx_options *o)
{
	if (memchr(h->layout, 0, PMTX_LAYOUT_LEN) == NULL) {
		pmtx__set_errmsg("layout name is not NUL-terminated");
		return PMTX_E_CORRUPT;
	}
	const char *want = o && o->layout ? o->layout : NULL;
	if (want && strcmp(want, h->layout) != 0) {
		pmtx__set_errmsg("layout is \"%s\", expected \"%s\"", h->layout,
		                 want);
		return PMTX_E_BAD_LAYOUT;
	}
	return 0;
}

static int check_geometry(const struct pmtx_hdr *h, uint64_t file_size)
{
	struct region_geometry g;
	if (h->size > file_size) {
		pmtx__set_errmsg("file is %llu bytes, region needs %llu",
		                 (unsigned long long)file_size,
		                 (unsigned long long)h->size);
		return PMTX_E_TRUNCATED;
	}
	int bad = h->size != file_size || h->desc_size != sizeof(struct pmtx_desc)
	          || h->sb_size != PMTX_SB_SIZE || h->default_runtime == 0 ||
	          h->default_runtime > PMTX_RT_COW ||
	          region_geometry(h->size, h->ndesc, h->root_size, &g) != 0;
	if (!bad)
		bad = g.desc_off != h->desc_off || g.log0_off != h->log0_off ||
		      g.log0_size != h->log0_size ||
		      g.alog0_size != h->alog0_size ||
		      g.root_off != h->root_off || g.meta_off != h->meta_off ||
		      g.heap_off != h->heap_off || g.nsb != h->nsb;
	for (size_t i = 0; !bad && i < ARRAY_SIZE(h->reserved); i++)
		bad = h->reserved[i] != 0;
	if (bad) {
		pmtx__set_errmsg("header geometry is inconsistent");
		return PMTX_E_CORRUPT;
	}
	return 0;
}

static int read_header(int fd, struct pmtx_hdr *h, uint64_t *file_size)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return errno;
	if (!S_ISREG(st.st_mode))
		return PMTX_E_INVAL;
	*file_size = (uint64_t)st.st_size;
	if (st.st_size < (off_t)PMTX_HDR_SIZE) {
		pmtx__set_errmsg("file is %lld bytes, smaller than a header",
		                 (long long)st.st_size);
		return PMTX_E_TOO_SMALL;
	}
	ssize_t n = pread(fd, h, sizeof(*h), 0);
	if (n < 0)
		return errno;
	return n == (ssize_t)sizeof(*h) ? 0 : PMTX_E_TOO_SMALL;
}

static int validate(int fd, const pmtx_options *o, uint64_t *size)
{
	struct pmtx_hdr h;
	int rc = read_header(fd, &h, size);
	if (!rc)
		rc = check_ident(&h);
	if (!rc)
		rc = check_layout_name(&h, o);
	if (!rc)
		rc = check_geometry(&h, *size);
	return rc;
}

int region_open(const char *path, const pmtx_options *o, pmtx_region **out)
{
	int rc = options_ok(o);
	if (rc)
		return rc;
	pmtx_region *r = calloc(1, sizeof(*r));
	if (!r)
		return ENOMEM;
	r->fd = open(path, O_RDWR | O_CLOEXEC);
	if (r->fd < 0) {
		rc = errno;
		free(r);
		return rc;
	}
	uint64_t size = 0;
	if ((rc = lock_fd(r->fd)) || (rc = validate(r->fd, o, &size)) ||
	    (rc = map_file(r, size)) || (rc = persist_setup(r, o))) {
		if (r->base)
			munmap(r->base, r->size);
		close(r->fd);
		free(r);
		return rc;
	}
	r->default_rt = (pmtx_runtime)r->hdr->default_runtime;
	*out = r;
	return 0;
}

void region_unmap(pmtx_region *r)
{
	if (r->hdr && (const char *)r->hdr != r->base)
		free((void *)r->hdr); /* unsealed create */
	if (r->base)
		munmap(r->base, r->size);
	if (r->fd >= 0)
		close(r->fd); /* releases the flock */
	free(r);
}
