/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * region.c - creating, validating and mapping region files.
 *
 * Invariants
 *  1. open never writes the file: every check (size, magic, checksum,
 *     version, features, layout, geometry) runs on a pread copy of the
 *     header before the file is mapped, and a failure leaves it untouched.
 *     (Above region_open, pmtx_open stores the open mark, layout.h G4,
 *     before recovery, and puts it back as it was if the open fails.)
 *  2. Exactly one process has a region open: an exclusive, non-blocking
 *     flock is taken before anything is read, and held until close.
 *  3. create builds the region in "<path>.creating" (mode 0600, locked,
 *     blocks reserved with posix_fallocate), writes the header last,
 *     after every other area is durable, makes the whole file durable,
 *     and only then renames it to path (RENAME_NOREPLACE, or link +
 *     unlink) and syncs the directory. A crash during create therefore
 *     leaves either no file at path or a complete region, never a file
 *     that open must refuse; a stale "<path>.creating" that nobody holds
 *     locked is reused by the next create.
 *  4. The geometry (where each area lies) is a pure function of (size,
 *     max_size, ndesc, root_size); open recomputes it and requires the
 *     header to agree, so every area offset used later is known to be in
 *     bounds. rstate.nsb is read and range-checked (hdr.nsb .. max_nsb)
 *     before the mapping is used, and the file must hold that many
 *     superblocks (else PMTX_E_TRUNCATED).
 *  5. The mapping reserves the maximum size as address space once
 *     (MAP_NORESERVE) and never moves: growth only extends the file
 *     under it, so pointers into a region stay valid while it is open.
 *     Pages past the end of the file are never touched.
 *  6. Growth (G1 in layout.h) extends the file and fdatasyncs it before
 *     rstate.nsb is stored, flushed and fenced; a crash in between leaves
 *     a longer file and the old nsb, which open accepts. The barrier
 *     completes before the pool lock is released, so no other thread can
 *     commit a transaction that uses the new space before it is durable.
 *     Before extending, the file-size limit (RLIMIT_FSIZE) is checked, so
 *     growth fails with a status instead of raising SIGXFSZ. A step
 *     that does not fit (ENOSPC, EDQUOT, EFBIG, the size limit) is tried
 *     again at the smallest size that serves the request, so a nearly
 *     full file system is used up before an allocation fails. A failed
 *     fdatasync is not retried: the length may not be durable.
 *  7. A private view (PMTX_OPEN_PRIVATE) opens the file O_RDONLY with a
 *     shared lock and maps it MAP_PRIVATE: nothing this process does,
 *     recovery included, can reach the file.
 *  8. A journal ("<path>.pmtxj", persist/journal.c) is replayed into the
 *     file once the header's identity is checked and before anything
 *     else is read (nsb, the heap, the logs), whatever the backend: a
 *     region last used with the journal backend may hold commits only
 *     there. Under another backend the journal is then removed; a
 *     private view refuses a journal that holds commits. The journal
 *     backend maps the file MAP_PRIVATE (stores reach the file only
 *     through the journal), and creates a region as the file backend
 *     would, its journal at its first open.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "../common/mutant.h"
#include "../persist/journal.h"
#include "region.h"

#define LOG0_SIZE (16u * 1024u)
#define ALOG0_SIZE (4u * 1024u)
#define MAX_NDESC 4096u
#define PAGE 4096u
#define MAX_REGION (1ull << 44)           /* 16 TiB of address space */
#define GROW_STEP_MAX (16384ull)          /* superblocks: 1 GiB per step */

/* The header fields the geometry decides (invariant 4): create copies
 * them from it, open requires them to equal it. */
#define GEOMETRY_FIELDS(X)                                                    \
	X(size) X(max_size) X(max_nsb) X(nsb) X(rstate_off) X(desc_off)       \
	X(log0_off) X(log0_size) X(alog0_size) X(root_off) X(meta_off)        \
	X(heap_off) X(twin_off) X(seal_off)

/* The largest heap (superblocks) that fits in size bytes once the areas
 * before meta_off are placed, and, in a twin region, the back copy of
 * everything from root_off to the heap's end after it (then the seal, in
 * a sealed one); sets g->heap_off (and g->twin_off, g->seal_off) for
 * it. */
static uint64_t fit_heap(uint64_t size, int twin, struct region_geometry *g)
{
	uint64_t seal = twin == REGION_TWIN_SEALED ? PMTX_TWIN_SEAL_SIZE : 0;
	if (g->meta_off >= size)
		return 0;
	uint64_t nsb = (size - g->meta_off) /
	               ((twin ? 2 : 1) *
	                (PMTX_SB_SIZE + sizeof(struct pmtx_sb_meta)));
	for (; nsb > 0; nsb--) {
		g->heap_off = ALIGN_UP(g->meta_off +
		                       nsb * sizeof(struct pmtx_sb_meta), PAGE);
		uint64_t end = g->heap_off + nsb * (uint64_t)PMTX_SB_SIZE;
		uint64_t back = twin ? end - g->root_off : 0;
		if (end + back + seal <= size) {
			g->twin_off = twin ? end : 0;
			g->seal_off = seal ? end + back : 0;
			break;
		}
	}
	return nsb;
}

int region_geometry(uint64_t size, uint64_t max_size, unsigned ndesc,
                    uint64_t root_size, int twin, struct region_geometry *g)
{
	if (ndesc == 0 || ndesc > MAX_NDESC || root_size > MAX(size, max_size)
	    || (max_size > size && max_size > MAX_REGION))
		return PMTX_E_INVAL;
	if (twin && max_size > size) {
		pmtx__set_errmsg("a twin region has a fixed size (max_size %llu "
		                 "> size %llu)", (unsigned long long)max_size,
		                 (unsigned long long)size);
		return PMTX_E_INVAL;
	}
	g->twin_off = 0;
	g->seal_off = 0;
	g->log0_size = LOG0_SIZE;
	g->alog0_size = ALOG0_SIZE;
	g->rstate_off = PMTX_HDR_SIZE;
	g->desc_off = PMTX_HDR_SIZE + PMTX_RSTATE_SPACE;
	g->log0_off = ALIGN_UP(g->desc_off + (uint64_t)ndesc * 256, PAGE);
	g->root_off = g->log0_off + (uint64_t)ndesc * (LOG0_SIZE + ALOG0_SIZE);
	g->meta_off = ALIGN_UP(g->root_off + sizeof(struct pmtx_objhdr) +
	                               root_size, PAGE);
	g->size = size;
	g->max_size = MAX(size, max_size);
	g->max_nsb = fit_heap(g->max_size, twin, g);
	if (g->max_nsb == 0)
		return PMTX_E_TOO_SMALL;
	if (g->max_size == size) { /* fixed: the heap fills the file */
		g->nsb = g->max_nsb;
		return 0;
	}
	/* Grows: metadata has room for max_nsb; the file starts with at
	 * least one superblock. */
	g->nsb = size > g->heap_off ? (size - g->heap_off) / PMTX_SB_SIZE : 0;
	g->nsb = MAX(g->nsb, 1);
	g->size = g->heap_off + g->nsb * (uint64_t)PMTX_SB_SIZE;
	return 0;
}

static int lock_fd(int fd, int how)
{
	if (flock(fd, how | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK) {
		pmtx__set_errmsg("region is already open in another process");
		return PMTX_E_LOCKED;
	}
	return errno;
}

/* Reserve map_len bytes of address space over the file (invariant 5). */
static int map_file(pmtx_region *r, size_t size, size_t map_len,
                    pmtx_backend b)
{
	int priv = r->private_view || b == PMTX_BACKEND_JOURNAL;
	int flags = (priv ? MAP_PRIVATE : MAP_SHARED) | MAP_NORESERVE;
	void *p = mmap(NULL, map_len, PROT_READ | PROT_WRITE, flags, r->fd, 0);
	if (p == MAP_FAILED)
		return errno;
	r->base = p;
	r->size = size;
	r->map_len = map_len;
	r->hdr = p;
	return 0;
}

/* A private view never reaches storage: PDOM-2 emulated, no delay. */
static int persist_setup(pmtx_region *r, const pmtx_options *o)
{
	if (r->private_view)
		return persist_init(&r->persist, PMTX_PDOM2,
		                    PMTX_BACKEND_EMULATED, 0, r->base, r->size);
	int rc = persist_init(&r->persist, o->domain, o->backend,
	                      o->barrier_ns, r->base, r->size);
	r->persist.fd = r->fd;
	if (!rc && r->jrnl && r->persist.ops == &journal_ops)
		rc = journal_attach(&r->persist, r->jrnl, r->map_len);
	else if (r->jrnl) { /* ops replaced: nothing would reach the file */
		journal_discard(r->jrnl);
		pmtx__set_errmsg("the journal backend cannot run under "
		                 "replaced persist ops");
		rc = rc ? rc : PMTX_E_UNSUPPORTED;
	}
	r->jrnl = NULL;
	return rc;
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

static void fill_header(struct pmtx_hdr *h, const pmtx_options *o,
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
#define FROM_GEOMETRY(f) h->f = g->f;
	GEOMETRY_FIELDS(FROM_GEOMETRY)
#undef FROM_GEOMETRY
	if (g->twin_off)
		h->feat_incompat |= PMTX_FEAT_INCOMPAT_TWIN;
	if (g->seal_off)
		h->feat_incompat |= PMTX_FEAT_INCOMPAT_TWIN_SEAL;
	if (g->seal_off && !(o->flags & PMTX_CREATE_TWIN_FAST_RESTART))
		h->feat_incompat |= PMTX_FEAT_INCOMPAT_TWIN_RESEAL;
	h->feat_incompat |= PMTX_FEAT_INCOMPAT_JOURNAL_MARK;
	h->create_time = (uint64_t)time(NULL);
	h->ndesc = o->ndesc;
	h->desc_size = sizeof(struct pmtx_desc);
	h->root_size = o->root_size;
	h->sb_size = PMTX_SB_SIZE;
	h->default_runtime = o->runtime == PMTX_RT_DEFAULT ? PMTX_RT_UNDO
	                                                   : o->runtime;
	h->checksum = pmtx_checksum(h, offsetof(struct pmtx_hdr, checksum),
	                            PMTX_CSUM_SEED_HDR);
}

/* Blocks for the whole file, except the metadata of superblocks the heap
 * does not have yet (a hole, zero, until the region grows into it). */
static int reserve_range(int fd, const char *path, uint64_t start,
                         uint64_t size);

static int reserve_space(int fd, const char *path,
                         const struct region_geometry *g)
{
	uint64_t size = g->size;
	if (g->max_nsb != g->nsb) {
		if (ftruncate(fd, (off_t)size) != 0)
			return errno;
		uint64_t meta_end = ALIGN_UP(g->meta_off + g->nsb *
		                     sizeof(struct pmtx_sb_meta), PAGE);
		int rc = reserve_range(fd, path, 0, meta_end);
		return rc ? rc : reserve_range(fd, path, g->heap_off,
		                               size - g->heap_off);
	}
	return reserve_range(fd, path, 0, size);
}

static int reserve_range(int fd, const char *path, uint64_t start,
                         uint64_t size)
{
	struct statvfs vfs;
	if (fstatvfs(fd, &vfs) == 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < size) {
		pmtx__set_errmsg("%s: %llu bytes requested, %llu free", path,
		                 (unsigned long long)size,
		                 (unsigned long long)vfs.f_bavail * vfs.f_frsize);
		return PMTX_E_NO_SPACE;
	}
	int rc = posix_fallocate(fd, (off_t)start, (off_t)size);
	if (rc == ENOSPC || rc == EFBIG)
		return PMTX_E_NO_SPACE;
	if (rc == EOPNOTSUPP || rc == EINVAL)
		rc = ftruncate(fd, (off_t)(start + size)) ? errno : 0;
	return rc;
}

static int options_ok(const pmtx_options *o)
{
	if (persist_supported(o->domain, o->backend) ||
	    (unsigned)o->runtime > PMTX_RT_TWIN ||
	    (o->flags & ~(PMTX_OPEN_PRIVATE | PMTX_OPEN_AUTO_ROTATE |
	                  PMTX_OPEN_FORGET_JOURNAL |
	                  PMTX_CREATE_TWIN_FAST_RESTART)) ||
	    (o->layout && strlen(o->layout) >= PMTX_LAYOUT_LEN))
		return PMTX_E_INVAL;
	return 0;
}

static uint64_t geometry_bytes(const struct region_geometry *g, uint64_t nsb)
{
	return region_bytes_for(g->size, g->nsb, g->heap_off, nsb);
}

static uint64_t map_bytes(const struct region_geometry *g)
{
	return geometry_bytes(g, g->max_nsb);
}

/* Open "<path>.creating" for a new region (invariant 3): refused if path
 * exists or another create holds the temporary file; a stale one is
 * emptied and reused. */
static int open_creating(const char *path, pmtx_region **out)
{
	if (access(path, F_OK) == 0)
		return EEXIST;
	pmtx_region *r = calloc(1, sizeof(*r));
	size_t n = strlen(path) + sizeof(".creating");
	if (r && (r->create_path = strdup(path)))
		r->create_tmp = malloc(n);
	if (!r || !r->create_tmp) {
		if (r)
			free(r->create_path);
		free(r);
		return ENOMEM;
	}
	snprintf(r->create_tmp, n, "%s.creating", path);
	r->fd = open(r->create_tmp,
	             O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	int rc = r->fd < 0 ? errno : lock_fd(r->fd, LOCK_EX);
	if (!rc && ftruncate(r->fd, 0))
		rc = errno;
	if (rc) {
		if (rc == PMTX_E_LOCKED)
			pmtx__set_errmsg("%s is being created by another process",
			                 path);
		free(r->create_tmp);
		r->create_tmp = NULL; /* not ours to remove */
		region_unmap(r);
		return rc;
	}
	*out = r;
	return 0;
}

/* Give the finished file its name, never replacing one (invariant 3). */
static int publish(pmtx_region *r)
{
	int rc = renameat2(AT_FDCWD, r->create_tmp, AT_FDCWD, r->create_path,
	                   RENAME_NOREPLACE) ? errno : 0;
	if (rc == EINVAL || rc == ENOSYS) { /* no RENAME_NOREPLACE here */
		rc = link(r->create_tmp, r->create_path) ? errno : 0;
		if (!rc)
			unlink(r->create_tmp);
	}
	if (rc) {
		pmtx__set_errmsg("%s: cannot publish the new region: %s",
		                 r->create_path, strerror(rc));
		return rc;
	}
	free(r->create_tmp);
	r->create_tmp = NULL;
	return pmtx__sync_dir_of(r->create_path) ? PMTX_E_IO : 0;
}

void region_discard_created(pmtx_region *r)
{
	if (r->create_tmp)
		unlink(r->create_tmp);
	else if (r->create_path)
		unlink(r->create_path);
}

int region_create(const char *path, size_t size, const pmtx_options *o,
                  pmtx_region **out)
{
	struct region_geometry g;
	int rc = options_ok(o);
	if (rc)
		return rc;
	if (o->flags & PMTX_OPEN_PRIVATE)
		return PMTX_E_INVAL; /* a private view of a new file is useless */
	pmtx_options fo;
	if (o->backend == PMTX_BACKEND_JOURNAL) { /* invariant 8 */
		fo = *o;
		fo.backend = PMTX_BACKEND_FILE;
		o = &fo;
	}
	if ((rc = region_geometry(size, o->max_size, o->ndesc, o->root_size,
	                          o->runtime == PMTX_RT_TWIN
	                                  ? REGION_TWIN_SEALED
	                                  : REGION_PLAIN,
	                          &g)))
		return rc;
	pmtx_region *r;
	if ((rc = open_creating(path, &r)))
		return rc;
	if ((rc = reserve_space(r->fd, path, &g)) ||
	    (rc = map_file(r, g.size, map_bytes(&g), o->backend)) ||
	    (rc = persist_setup(r, o))) {
		region_discard_created(r);
		region_unmap(r);
		return rc;
	}
	/* Build the header in DRAM now; it is copied in by seal, last. */
	struct pmtx_hdr *h = malloc(sizeof(*h));
	if (!h) {
		region_discard_created(r);
		region_unmap(r);
		return ENOMEM;
	}
	fill_header(h, o, &g);
	r->hdr = h; /* until sealed */
	r->nsb = g.nsb;
	region_rstate(r)->nsb = g.nsb; /* r->hdr: the header to seal */
	r->default_rt = (pmtx_runtime)h->default_runtime;
	r->twin = h->twin_off != 0;
	*out = r;
	return 0;
}

int region_seal_header(pmtx_region *r)
{
	struct persist *p = &r->persist;
	struct pmtx_hdr *h = (struct pmtx_hdr *)r->hdr;
	/* Every area written during create first (invariant 3): the region
	 * state, descriptors and first log chunks. The rest is zero. */
	persist_flush(p, r->base + h->rstate_off, h->root_off - h->rstate_off);
	int rc = persist_order(p);
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
	return rc ? rc : publish(r);
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

static int geometry_differs(const struct pmtx_hdr *h)
{
	struct region_geometry g;
	if (h->desc_size != sizeof(struct pmtx_desc) ||
	    h->sb_size != PMTX_SB_SIZE || h->default_runtime == 0 ||
	    h->default_runtime > PMTX_RT_TWIN ||
	    (h->default_runtime == PMTX_RT_TWIN) != (region_is_twin(h) != 0) ||
	    (h->feat_incompat & PMTX_FEAT_INCOMPAT_TWIN_SEAL &&
	     !(h->feat_incompat & PMTX_FEAT_INCOMPAT_TWIN)) ||
	    (h->feat_incompat & PMTX_FEAT_INCOMPAT_TWIN_RESEAL &&
	     !(h->feat_incompat & PMTX_FEAT_INCOMPAT_TWIN_SEAL)) ||
	    h->max_size < h->size ||
	    region_geometry(h->size, h->max_size, h->ndesc, h->root_size,
	                    region_is_twin(h), &g) != 0)
		return 1;
	for (size_t i = 0; i < ARRAY_SIZE(h->reserved); i++)
		if (h->reserved[i] != 0)
			return 1;
#define DIFFERS(f) g.f != h->f ||
	return GEOMETRY_FIELDS(DIFFERS) 0;
#undef DIFFERS
}

static int check_geometry(const struct pmtx_hdr *h, uint64_t file_size)
{
	if (h->size > file_size) {
		pmtx__set_errmsg("file is %llu bytes, region needs %llu",
		                 (unsigned long long)file_size,
		                 (unsigned long long)h->size);
		return PMTX_E_TRUNCATED;
	}
	if (geometry_differs(h)) {
		pmtx__set_errmsg("header geometry is inconsistent");
		return PMTX_E_CORRUPT;
	}
	return 0;
}

/* The heap's superblock count (invariant 4): read before mapping. */
static int read_nsb(int fd, const struct pmtx_hdr *h, uint64_t file_size,
                    uint64_t *nsb)
{
	struct pmtx_rstate st;
	ssize_t n = pread(fd, &st, sizeof(st), (off_t)h->rstate_off);
	if (n < 0)
		return errno;
	if (n != (ssize_t)sizeof(st))
		return PMTX_E_TRUNCATED;
	for (size_t i = 0; i < ARRAY_SIZE(st.reserved); i++)
		if (st.reserved[i] != 0) {
			pmtx__set_errmsg("region state: reserved word %zu is "
			                 "not zero", i);
			return PMTX_E_CORRUPT;
		}
	if (st.open > 1) {
		pmtx__set_errmsg("region state: bad open mark %016llx",
		                 (unsigned long long)st.open);
		return PMTX_E_CORRUPT;
	}
	if (st.journal > ((h->feat_incompat &
	                   PMTX_FEAT_INCOMPAT_JOURNAL_MARK) != 0)) {
		pmtx__set_errmsg("region state: bad journal mark %016llx",
		                 (unsigned long long)st.journal);
		return PMTX_E_CORRUPT;
	}
	if (region_is_twin(h) ? PMTX_TW_STATE(st.twin) > PMTX_TW_COPYING
	                      : st.twin != 0) {
		pmtx__set_errmsg("region state: bad twin state word %016llx",
		                 (unsigned long long)st.twin);
		return PMTX_E_CORRUPT;
	}
	if (st.nsb < h->nsb || st.nsb > h->max_nsb) {
		pmtx__set_errmsg("region state: %llu superblocks, expected "
		                 "%llu..%llu", (unsigned long long)st.nsb,
		                 (unsigned long long)h->nsb,
		                 (unsigned long long)h->max_nsb);
		return PMTX_E_CORRUPT;
	}
	uint64_t need = region_bytes(h, st.nsb);
	if (file_size < need) {
		pmtx__set_errmsg("file is %llu bytes, its heap of %llu "
		                 "superblocks needs %llu",
		                 (unsigned long long)file_size,
		                 (unsigned long long)st.nsb,
		                 (unsigned long long)need);
		return PMTX_E_TRUNCATED;
	}
	if (h->max_nsb == h->nsb && file_size != h->size) {
		pmtx__set_errmsg("file is %llu bytes, the region %llu",
		                 (unsigned long long)file_size,
		                 (unsigned long long)h->size);
		return PMTX_E_CORRUPT;
	}
	*nsb = st.nsb;
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

/* Everything open checks before mapping; *g gets the mapping's sizes. */
static int validate(int fd, const pmtx_options *o, uint64_t *nsb,
                    struct region_geometry *g)
{
	struct pmtx_hdr h;
	uint64_t file_size = 0;
	int rc = read_header(fd, &h, &file_size);
	if (!rc)
		rc = check_ident(&h);
	if (!rc)
		rc = check_layout_name(&h, o);
	if (!rc)
		rc = check_geometry(&h, file_size);
	if (!rc)
		rc = read_nsb(fd, &h, file_size, nsb);
	if (!rc)
		rc = region_geometry(h.size, h.max_size, h.ndesc, h.root_size,
		                     region_is_twin(&h), g);
	return rc;
}

/* Invariant 8: the header's identity first (its uuid binds the
 * journal), then the journal into the file; validated: the whole region
 * has passed open's checks, and the journal backend makes its journal if
 * it has none (never beside a file open refuses). */
static int replay_journal(pmtx_region *r, const char *path,
                          const pmtx_options *o, int validated)
{
	if (validated && (o->backend != PMTX_BACKEND_JOURNAL || r->jrnl ||
	                  r->private_view))
		return 0;
	struct pmtx_hdr h;
	uint64_t file_size;
	int rc = read_header(r->fd, &h, &file_size);
	if (!rc)
		rc = check_ident(&h);
	if (rc)
		return rc;
	enum journal_mode m = r->private_view ? JOURNAL_READONLY
	                      : o->backend != PMTX_BACKEND_JOURNAL
	                              ? JOURNAL_REMOVE
	                      : validated ? JOURNAL_CREATE
	                                  : JOURNAL_KEEP;
	/* G3: the mark word, in a region that keeps one, where the header
	 * puts the region state. The header is not validated yet: a region
	 * state anywhere but where every geometry puts it is no mark (and
	 * validate refuses the header). */
	struct journal_mark mk = {0, (o->flags & PMTX_OPEN_FORGET_JOURNAL) != 0};
	if ((h.feat_incompat & PMTX_FEAT_INCOMPAT_JOURNAL_MARK) &&
	    h.rstate_off == PMTX_HDR_SIZE &&
	    file_size >= PMTX_HDR_SIZE + sizeof(struct pmtx_rstate))
		mk.off = h.rstate_off + offsetof(struct pmtx_rstate, journal);
	return journal_recover(r->fd, path, h.uuid, m, &mk, &r->jrnl);
}

int region_open(const char *path, const pmtx_options *o, pmtx_region **out)
{
	int rc = options_ok(o);
	if (rc)
		return rc;
	pmtx_region *r = calloc(1, sizeof(*r));
	if (!r)
		return ENOMEM;
	r->private_view = (o->flags & PMTX_OPEN_PRIVATE) != 0;
	r->fd = open(path, (r->private_view ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (r->fd < 0) {
		rc = errno;
		free(r);
		return rc;
	}
	struct region_geometry g;
	uint64_t nsb = 0;
	if ((rc = lock_fd(r->fd, r->private_view ? LOCK_SH : LOCK_EX)) ||
	    (rc = replay_journal(r, path, o, 0)) ||
	    (rc = validate(r->fd, o, &nsb, &g)) ||
	    (rc = replay_journal(r, path, o, 1)) ||
	    (rc = map_file(r, geometry_bytes(&g, nsb), map_bytes(&g),
	                   o->backend)) ||
	    (rc = persist_setup(r, o))) {
		if (r->jrnl)
			journal_discard(r->jrnl);
		if (r->base)
			munmap(r->base, r->map_len);
		close(r->fd);
		free(r);
		return rc;
	}
	r->nsb = nsb;
	r->default_rt = (pmtx_runtime)r->hdr->default_runtime;
	r->twin = r->hdr->twin_off != 0;
	*out = r;
	return 0;
}

void region_unmap(pmtx_region *r)
{
	persist_detach(&r->persist, 0);
	if (r->hdr && (const char *)r->hdr != r->base)
		free((void *)r->hdr); /* unsealed create */
	if (r->base)
		munmap(r->base, r->map_len);
	if (r->fd >= 0)
		close(r->fd); /* releases the flock */
	free(r->create_path);
	free(r->create_tmp);
	free(r);
}

/* ---- growth (invariant 6) ---- */

static int cannot_grow(const pmtx_region *r, uint64_t bytes, const char *why)
{
	pmtx__set_errmsg("region cannot grow from %llu to %llu bytes: %s",
	                 (unsigned long long)r->size,
	                 (unsigned long long)bytes, why);
	return PMTX_E_NOMEM;
}

static int over_size_limit(uint64_t bytes)
{
	struct rlimit rl;
	return getrlimit(RLIMIT_FSIZE, &rl) == 0 &&
	       rl.rlim_cur != RLIM_INFINITY && bytes > rl.rlim_cur;
}

/* Make the file at least bytes long, durably. Returns 0 or an errno:
 * EFBIG past the file-size limit, ENOSPC (or EDQUOT) where the file
 * system is full; a failed fdatasync is EIO whatever its errno, for the
 * length may not be durable and must not be tried again as if it were
 * only too long. */
static int extend_file(pmtx_region *r, uint64_t bytes)
{
	if (over_size_limit(bytes))
		return EFBIG;
	struct stat st;
	if (fstat(r->fd, &st) != 0)
		return errno;
	if ((uint64_t)st.st_size < bytes) {
		int rc = posix_fallocate(r->fd, st.st_size,
		                         (off_t)bytes - st.st_size);
		if (rc == EOPNOTSUPP || rc == EINVAL)
			rc = ftruncate(r->fd, (off_t)bytes) ? errno : 0;
		if (rc)
			return rc;
	}
	return fdatasync(r->fd) ? EIO : 0;
}

static int too_long(int err)
{
	return err == ENOSPC || err == EFBIG || err == EDQUOT;
}

/* Invariant 6: the step first, then only what was asked for. */
static int extend_for(pmtx_region *r, uint64_t want, uint64_t *n)
{
	const struct pmtx_hdr *h = r->hdr;
	int rc = extend_file(r, region_bytes(h, *n));
	if (too_long(rc) && *n > want) {
		*n = want;
		rc = extend_file(r, region_bytes(h, *n));
	}
	if (!rc)
		return 0;
	uint64_t bytes = region_bytes(h, *n);
	return cannot_grow(r, bytes, over_size_limit(bytes) ?
	                   "file size limit (RLIMIT_FSIZE)" : strerror(rc));
}

static uint64_t grow_target(const pmtx_region *r, uint64_t want)
{
	uint64_t n = r->nsb + MIN(r->nsb, GROW_STEP_MAX);
	return MIN(MAX(n, want), r->hdr->max_nsb);
}

/* Does this open keep the open mark (G4)? */
static int keeps_open_mark(const pmtx_region *r)
{
	return !r->private_view && r->persist.backend != PMTX_BACKEND_JOURNAL;
}

/* Store v in the open mark, where this open keeps one (no flush: G4). */
static void mark_store(pmtx_region *r, uint64_t v)
{
	struct pmtx_rstate *rs = region_rstate(r);
	if (keeps_open_mark(r) && rs->open != v) {
		__atomic_store_n(&rs->open, v, __ATOMIC_RELAXED);
		TRACE_STORE(&r->persist, &rs->open, 8, REGION);
	}
}

int region_mark_open(pmtx_region *r)
{
	r->mark_was = region_rstate(r)->open != 0; /* read_nsb: 0 or 1 */
	if (!MUT_SKIP(MUT_REGION_OPEN_MARK))
		mark_store(r, 1);
	r->marked = keeps_open_mark(r);
	return r->mark_was;
}

void region_mark_closed(pmtx_region *r)
{
	mark_store(r, 0);
}

void region_mark_restore(pmtx_region *r)
{
	if (r->marked)
		mark_store(r, (uint64_t)r->mark_was);
}

int region_grow(pmtx_region *r, uint64_t want, uint64_t *got)
{
	const struct pmtx_hdr *h = r->hdr;
	uint64_t n = grow_target(r, want);
	uint64_t bytes = region_bytes(h, n);
	if (want > h->max_nsb)
		return cannot_grow(r, region_bytes(h, want),
		                   h->max_nsb == h->nsb ? "the region has a "
		                   "fixed size" : "maximum size reached");
	if (r->private_view)
		return cannot_grow(r, bytes, "a private view cannot grow");
	int rc = extend_for(r, want, &n);
	if (rc)
		return rc;
	bytes = region_bytes(h, n);
	persist_grow(&r->persist, bytes);
	struct pmtx_rstate *st = region_rstate(r);
	__atomic_store_n(&st->nsb, n, __ATOMIC_RELAXED);
	TRACE_STORE(&r->persist, &st->nsb, 8, REGION);
	MUT_FLUSH(MUT_REGION_GROW_FLUSH, &r->persist, &st->nsb, 8);
	if ((rc = MUT_BARRIER(MUT_REGION_GROW_BARRIER, &r->persist)))
		return rc;
	r->nsb = n;
	atomic_store_explicit(&r->size, bytes, memory_order_release);
	*got = n;
	return 0;
}
