/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * journal.c - the journal backend: durable barriers on an ordinary file
 * system at the cost of one sequential append and one fdatasync.
 *
 * Design
 * ------
 * The file backend makes a barrier durable by writing back, in place,
 * every page the barrier's lines lie in. On a disk each scattered page
 * costs a write of its own, and writing back a page of a shared mapping
 * costs more again (the kernel write-protects it and takes a fault at the
 * next store). The journal backend instead maps the region file
 * MAP_PRIVATE, so that no store ever reaches the file by itself, and a
 * barrier appends the lines flushed since the last one, each with its
 * offset and its 64 bytes, as one record to "<region>.pmtxj" (format in
 * jlayout.h). A durable barrier then fdatasyncs the journal; an ordering
 * barrier does not, because replay stops at the first record missing
 * (J2), so whatever a power failure keeps of the journal is a prefix of
 * its barriers. Pages reach the region file only at a checkpoint, when
 * the journal (or its budget of pages, invariant 13) is full and at
 * close, and at open, when the journal is replayed into the file before
 * anything else reads it.
 *
 * Memory. A store to a page of a private mapping makes it a private,
 * anonymous copy, and the copy would stay until the region is unmapped:
 * a process could not write more than its memory between an open and a
 * close. Once a checkpoint has made the region file hold a page, its
 * copy is given back (madvise MADV_DONTNEED: the page reads the file
 * again), unless a store has changed it since the checkpoint took it;
 * jdrop.c does this in a write-protected window, so that no store can
 * fall between the compare and the give-back. And a checkpoint runs
 * before the pages with a line in the journal would pass the journal's
 * size (in pages), so that what the region keeps in anonymous memory is
 * bounded by the journal (invariants 10-13).
 *
 * Why the states a crash leaves are those of a crash of persistent
 * memory (the model every runtime is written and explored against): a
 * line of the file after replay holds either its value at the last
 * barrier whose record survived, or, if no surviving record has it, its
 * value at the last checkpoint. Both are values the line held, no older
 * than its last durable flush, and records are applied in barrier order.
 *
 * Invariants
 *  1. The region file changes only at a checkpoint and at replay. Every
 *     record of the journal is made durable before a checkpoint writes a
 *     page (ckpt_journal), because a checkpoint writes pages as they are
 *     now, with stores that only a record still unsynced may undo (an
 *     undo log entry appended by an ordering barrier).
 *  2. The journal is reset (a new epoch in the other header slot, J1)
 *     only after the pages of every line in it are durable in the region
 *     file (ckpt_region); replay likewise makes the file durable before
 *     the reset that drops what it applied. The new header is durable
 *     before any record of its epoch is written (reset syncs it): those
 *     records overwrite the old epoch's in place, and a disk may keep
 *     later sectors of a write and lose earlier ones, so without it a
 *     crash could leave the old header over a prefix of old records
 *     whose later ones are gone, and replay would roll back lines the
 *     checkpoint had made newer.
 *  3. A line's bytes are read for its record under the journal lock, so
 *     records are in the order their contents were taken: a later record
 *     never holds an older value of a line than an earlier one. Each
 *     word is read with one 8-byte load: a store racing the copy lands
 *     whole or not at all, as in a cache line.
 *  4. A durable barrier returns once the journal is durable up to its
 *     own record: one fdatasync serves every barrier appended before it
 *     started (synced, below), so concurrent commits share it.
 *  5. Every open resets the journal to a new epoch after replay, so that
 *     a record left from an earlier session can never follow a new one
 *     (J2), and a journal is only ever created whole: built as
 *     "<journal>.creating" and renamed.
 *  6. After a failed write or fdatasync nothing is known of what the
 *     file system kept: every later barrier of the region fails
 *     (PMTX_E_IO) until it is closed and opened again, which replays.
 *  7. At close, every page this process changed (found in
 *     /proc/self/pagemap: a private page no longer backed by the file) is
 *     written back, flushed or not, so a clean close keeps every store,
 *     as the file backend's shared mapping does.
 *  8. An ordering barrier's record may wait in DRAM (wbuf) and reach the
 *     file with a later one: records reach the file in order, a durable
 *     barrier writes every record before its own and the checkpoint
 *     every one before it syncs, so what a crash loses of them is a
 *     suffix, as with a record written and not synced.
 *  9. A word of the region file (the mark: region.c gives its offset)
 *     says whether the file may lack commits that only the journal
 *     holds. It is set, durably, when the journal backend opens the
 *     journal, before any record can be appended, and the mapping then
 *     reads it set, so checkpoints and records keep it set; it is
 *     cleared, durably, only once the file holds every commit: after a
 *     clean close's checkpoint and reset, and after a replay by another
 *     backend, before the journal is removed. An open that finds it set
 *     and no journal of this region refuses the region rather than open
 *     it as of its last checkpoint, unless told to forget the journal.
 * 10. A checkpoint gives back its pages' private copies only after its
 *     fdatasync of the region file succeeded, never before it and never
 *     after a failed one: from then on the file holds their bytes
 *     durably, and a page-cache page the kernel evicts reads them back.
 *     After a failed write-back the kernel may drop the dirty page-cache
 *     pages and read the old bytes from the disk; the region has failed
 *     (invariant 6), and every copy is kept, so the process goes on
 *     reading what it wrote until it closes the region. The close's own
 *     checkpoint gives back nothing (the mapping goes). PMTX_JOURNAL_DROP
 *     =0 keeps every page until close, as before.
 * 11. A page is given back only when its copy's bytes equal the file's,
 *     read from the file just before (pread, under mu): a checkpoint
 *     copies its pages before it syncs, and other threads store without
 *     mu, so a page stored to since keeps its copy and the store (it is
 *     in the next checkpoint's page set once a barrier appends it). The
 *     bytes read are the file's until the next checkpoint: nothing else
 *     writes the region file while it is open (invariant 1).
 * 12. The compare and the give-back are one step for every other thread
 *     (jdrop.c D1-D4): the run is write-protected around them, and a
 *     store that faults there waits in jdrop's handler and is made again
 *     on the page as it is after, the file's page holding the bytes the
 *     copy held. A reader reads the same bytes before and after. Against
 *     barriers the give-back needs no step of its own: it runs under mu,
 *     so no record takes a line's bytes (invariant 3) during a window,
 *     and after the journal and the region file are durable (invariants
 *     1 and 10) and before the reset; a later record reads the page as
 *     it is mapped then, the file's bytes or a new copy.
 * 13. The page set (the pages with a line in the journal, which a
 *     checkpoint writes) holds at most cap / 4096 pages while pages are
 *     given back: a record whose new pages would pass that checkpoints
 *     first, and one with more new pages than that is written by a
 *     checkpoint, as one bigger than the journal. So the region's private
 *     pages are at most the journal's size in bytes, plus the pages
 *     stored to and not yet appended by a barrier (a transaction in
 *     flight, or stores never flushed, which stay until close as
 *     invariant 7 says), plus pages a store changed during a checkpoint
 *     (invariant 11), which the next one takes. Beside them the backend
 *     keeps COPY_CHUNK (1 MiB) and WBUF (256 KiB), and each writing
 *     thread its largest record and its line list.
 *
 * Every write and fdatasync goes through one table (struct journal_io)
 * with the site that issues it, so that a test can keep the durable
 * image a power failure would leave, and can leave out one site's sync
 * to show that the crash test notices (tests/test_journal.c); the
 * give-back's madvise too, so that a test can store into a run while it
 * is given back (tests/test_journal_memory.c, whose cases
 * tests/test_mutant.c runs against the mutants of invariants 10-12).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/mutant.h"
#include "jdrop.h"
#include "jlayout.h"
#include "journal.h"

#define JPAGE 4096u
#define DEFAULT_CAP (64ull << 20)
#define COPY_CHUNK (1u << 20)
#define WBUF (256u << 10)

struct journal {
	pthread_mutex_t mu; /* appends, checkpoints, the fields below */
	int jfd, rfd;
	char *base;         /* the region's mapping */
	uint64_t map_len;
	uint8_t uuid[16];
	uint64_t epoch, cap, tail, seq;
	int slot;           /* header slot of the current epoch */
	atomic_int failed;  /* invariant 6: the errno, or 0 */
	_Atomic uint64_t lost_seen; /* lines_lost when last looked at */
	_Atomic uint64_t written; /* record bytes written to the file since
	                           * open, all epochs (not those in wbuf) */
	_Atomic uint64_t synced;  /* of those, durable */
	pthread_mutex_t sync_mu; /* one fdatasync at a time (invariant 4) */
	uint8_t *pgbit;     /* pages with a line in the journal */
	uint64_t *pages;    /* the same, as a list */
	size_t npages, cap_pages;
	char *copy;         /* checkpoint: pages copied out (COPY_CHUNK) */
	char *wbuf;         /* records appended, not yet written (WBUF) */
	size_t wlen;        /* bytes in wbuf; they go at tail - wlen */
	char *path;         /* the journal file, for messages */
	uint64_t mark_off;  /* the region's mark word (invariant 9), or 0 */
	int giving;         /* pages are given back (invariants 10-12) */
	size_t max_pages;   /* the page set's budget (invariant 13) */
};

/* ---- I/O through one table (tests replace it) ---- */

static ssize_t real_pwrite(int fd, const void *b, size_t n, off_t off,
                           enum journal_site s)
{
	(void)s;
	return pwrite(fd, b, n, off);
}

static int real_sync(int fd, enum journal_site s)
{
	(void)s;
	return fdatasync(fd);
}

static const struct journal_io real_io = {real_pwrite, real_sync,
                                          jdrop_madvise};
static const struct journal_io *jio = &real_io;

void journal_set_io(const struct journal_io *io)
{
	jio = io ? io : &real_io;
}

static const char *const site_names[] = {
	"record", "header", "zero", "ckpt_page", "replay_page",
	"commit", "ckpt_journal", "ckpt_region", "reset", "replay_region",
	"create", "mark", "mark_sync"};
_Static_assert(sizeof(site_names) / sizeof(site_names[0]) == JS_NSITES,
               "a name per journal site");

const char *journal_site_name(enum journal_site s)
{
	return (unsigned)s < JS_NSITES ? site_names[s] : "?";
}

/* After a pread or pwrite of a loop that has moved *done bytes returned
 * w: 0 to go on (*done advanced), else the loop's status (at_end: what a
 * call that moved nothing means). */
static int io_step(ssize_t w, size_t *done, int at_end)
{
	if (w < 0 && errno == EINTR)
		return 0;
	if (w <= 0)
		return w < 0 ? errno : at_end;
	*done += (size_t)w;
	return 0;
}

static int write_all(int fd, const void *b, size_t n, uint64_t off,
                     enum journal_site s)
{
	int rc = 0;
	for (size_t d = 0; d < n && !rc;)
		rc = io_step(jio->pwrite(fd, (const char *)b + d, n - d,
		                         (off_t)(off + d), s),
		             &d, EIO);
	return rc;
}

static int sync_fd(int fd, enum journal_site s)
{
	pmtx__tls_counters.msyncs++;
	return jio->sync(fd, s) ? errno : 0;
}

static int read_all(int fd, void *b, size_t n, uint64_t off)
{
	int rc = 0;
	for (size_t d = 0; d < n && !rc;)
		rc = io_step(pread(fd, (char *)b + d, n - d, (off_t)(off + d)),
		             &d, PMTX_E_TRUNCATED);
	return rc;
}

/* ---- the region's mark (invariant 9) ---- */

static int mark_read(int rfd, uint64_t off, uint64_t *v)
{
	*v = 0;
	return off ? read_all(rfd, v, sizeof(*v), off) : 0;
}

static int mark_write(int rfd, uint64_t off, uint64_t v)
{
	if (!off)
		return 0;
	int rc = write_all(rfd, &v, sizeof(v), off, JS_W_MARK);
	return rc ? rc : sync_fd(rfd, JS_S_MARK);
}

static int journal_missing(const char *jpath)
{
	pmtx__set_errmsg("the region's newest commits are in its journal %s, "
	                 "which is missing: put it back beside the region, or "
	                 "open it with PMTX_OPEN_FORGET_JOURNAL (pmtx recover "
	                 "--forget-journal) to take it as of its last "
	                 "checkpoint, without them", jpath);
	return PMTX_E_CORRUPT;
}

/* ---- the header (J1) ---- */

static uint64_t hdr_sum(const struct pmtxj_hdr *h)
{
	return pmtx_checksum(h, offsetof(struct pmtxj_hdr, checksum),
	                     PMTXJ_CSUM_SEED_HDR);
}

static int hdr_valid(const struct pmtxj_hdr *h)
{
	return h->magic == PMTXJ_MAGIC && h->version == PMTXJ_VERSION &&
	       h->slot_size == PMTXJ_SLOT_SIZE && h->checksum == hdr_sum(h);
}

static int write_hdr(int fd, int slot, const uint8_t uuid[16],
                     uint64_t epoch, uint64_t cap)
{
	struct pmtxj_hdr h = {.magic = PMTXJ_MAGIC,
	                      .version = PMTXJ_VERSION,
	                      .slot_size = PMTXJ_SLOT_SIZE,
	                      .epoch = epoch,
	                      .capacity = cap};
	memcpy(h.uuid, uuid, 16);
	h.checksum = hdr_sum(&h);
	return write_all(fd, &h, sizeof(h), (uint64_t)slot * PMTXJ_SLOT_SIZE,
	                 JS_W_HEADER);
}

/* The current header of an open journal: the valid slot of higher epoch. */
static int read_hdr(int fd, const char *path, uint64_t file_size,
                    struct pmtxj_hdr *out, int *slot)
{
	struct pmtxj_hdr h[2];
	int rc = read_all(fd, h, sizeof(h[0]), 0);
	if (!rc)
		rc = read_all(fd, &h[1], sizeof(h[1]), PMTXJ_SLOT_SIZE);
	if (rc && rc != PMTX_E_TRUNCATED)
		return rc;
	int v0 = !rc && hdr_valid(&h[0]), v1 = !rc && hdr_valid(&h[1]);
	if (!v0 && !v1) {
		pmtx__set_errmsg("journal %s has no valid header: not a pmtx "
		                 "journal, or damaged", path);
		return PMTX_E_CORRUPT;
	}
	*slot = v1 && (!v0 || h[1].epoch > h[0].epoch);
	*out = h[*slot];
	if (out->capacity < PMTXJ_MIN_CAP || out->capacity > file_size) {
		pmtx__set_errmsg("journal %s: capacity %llu, file %llu bytes",
		                 path, (unsigned long long)out->capacity,
		                 (unsigned long long)file_size);
		return PMTX_E_CORRUPT;
	}
	return 0;
}

/* A new epoch in the other slot, durable (invariants 2 and 5). */
static int reset(int fd, int *slot, const uint8_t uuid[16], uint64_t *epoch,
                 uint64_t cap)
{
	int s = !*slot;
	int rc = write_hdr(fd, s, uuid, *epoch + 1, cap);
	if (!rc)
		rc = sync_fd(fd, JS_S_RESET);
	if (!rc)
		*slot = s, *epoch += 1;
	return rc;
}

/* ---- creation (invariant 5) ---- */

/* PMTX_JOURNAL_SIZE (bytes, or with K, M, G), PMTXJ_MIN_CAP to 1 TiB. */
static uint64_t capacity_wanted(void)
{
	const char *s = getenv("PMTX_JOURNAL_SIZE");
	if (!s || !*s)
		return DEFAULT_CAP;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = *end == 'k' || *end == 'K'   ? 10
	                 : *end == 'm' || *end == 'M' ? 20
	                 : *end == 'g' || *end == 'G' ? 30
	                                              : 0;
	if (v > (1ull << 40) >> shift)
		return 1ull << 40;
	v = ALIGN_UP(v << shift, JPAGE);
	return v < PMTXJ_MIN_CAP ? PMTXJ_MIN_CAP : v;
}

/* Zeros over the whole file, so that later appends overwrite written
 * blocks and an fdatasync has no metadata to commit. */
static int zero_fill(int fd, uint64_t cap)
{
	char *z = calloc(1, COPY_CHUNK);
	if (!z)
		return ENOMEM;
	int rc = 0;
	for (uint64_t off = 0; off < cap && !rc; off += COPY_CHUNK)
		rc = write_all(fd, z, MIN(COPY_CHUNK, cap - off), off,
		               JS_W_ZERO);
	free(z);
	return rc;
}

static int create_journal(const char *jpath, const uint8_t uuid[16])
{
	char *tmp;
	if (asprintf(&tmp, "%s.creating", jpath) < 0)
		return ENOMEM;
	uint64_t cap = capacity_wanted();
	int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int rc = fd < 0 ? errno : 0;
	if (!rc)
		rc = zero_fill(fd, cap);
	if (!rc)
		rc = write_hdr(fd, 0, uuid, 1, cap);
	if (!rc)
		rc = sync_fd(fd, JS_S_CREATE);
	if (!rc && rename(tmp, jpath) != 0)
		rc = errno;
	if (!rc)
		rc = pmtx__sync_dir_of(jpath);
	if (fd >= 0)
		close(fd);
	if (rc) {
		unlink(tmp);
		pmtx__set_errmsg("cannot create journal %s: %s", jpath,
		                 rc > 0 ? strerror(rc) : "I/O error");
	}
	free(tmp);
	return rc;
}

/* ---- replay (J2, J3; invariant 2) ---- */

struct scan {
	int jfd, rfd;
	const char *path;
	struct pmtxj_hdr h;
	uint64_t rfile;  /* bytes of the region file */
	uint64_t nrec;   /* records found */
	int apply;       /* write them to the region file */
	char *buf;
	size_t buf_cap;
};

/* 1: a whole, current record at pos (its header in r); 0: the end. */
static int rec_header_ok(const struct scan *s, const struct pmtxj_rec *r,
                         uint64_t pos)
{
	return r->magic == PMTXJ_REC_MAGIC && r->epoch == s->h.epoch &&
	       r->seq == s->nrec && r->nlines >= 1 && r->flags == 0 &&
	       r->reserved == 0 && r->pad == 0 &&
	       r->len == pmtxj_rec_len(r->nlines) &&
	       r->len <= s->h.capacity - pos;
}

/* The record's checksum, computed as rec_append made it (the field
 * zero); the field is left zero in rec. */
static int rec_checksum_ok(char *rec, uint64_t len)
{
	uint64_t want;
	char *field = rec + offsetof(struct pmtxj_rec, checksum);
	memcpy(&want, field, 8);
	memset(field, 0, 8);
	return pmtx_checksum(rec, len, PMTXJ_CSUM_SEED_REC) == want;
}

static int grow_buf(struct scan *s, uint64_t len)
{
	if (len <= s->buf_cap)
		return 0;
	char *b = realloc(s->buf, len);
	if (!b)
		return ENOMEM;
	s->buf = b, s->buf_cap = len;
	return 0;
}

/* Validate a record's offsets (J3), then write its lines if applying. */
static int rec_apply(struct scan *s, const char *rec, uint32_t n)
{
	const uint64_t *off = (const uint64_t *)(rec + sizeof(struct pmtxj_rec));
	const char *line = rec + pmtxj_rec_len(n) - (uint64_t)n * PMTXJ_LINE;
	for (uint32_t i = 0; i < n; i++)
		if (off[i] % PMTXJ_LINE || off[i] > s->rfile - PMTXJ_LINE) {
			pmtx__set_errmsg("journal %s: record %llu has line "
			                 "offset %llu outside the region "
			                 "(%llu bytes)", s->path,
			                 (unsigned long long)s->nrec,
			                 (unsigned long long)off[i],
			                 (unsigned long long)s->rfile);
			return PMTX_E_CORRUPT;
		}
	for (uint32_t i = 0; s->apply && i < n; i++) {
		int rc = write_all(s->rfd, line + (uint64_t)i * PMTXJ_LINE,
		                   PMTXJ_LINE, off[i], JS_W_REPLAY);
		if (rc)
			return rc;
	}
	return 0;
}

static int scan_records(struct scan *s)
{
	uint64_t pos = PMTXJ_REC_OFF;
	while (pos + sizeof(struct pmtxj_rec) <= s->h.capacity) {
		struct pmtxj_rec r;
		int rc = read_all(s->jfd, &r, sizeof(r), pos);
		if (rc)
			return rc;
		if (!rec_header_ok(s, &r, pos))
			break;
		if ((rc = grow_buf(s, r.len)) ||
		    (rc = read_all(s->jfd, s->buf, r.len, pos)))
			return rc;
		if (!rec_checksum_ok(s->buf, r.len))
			break;
		if ((rc = rec_apply(s, s->buf, r.nlines)))
			return rc;
		s->nrec++;
		pos += r.len;
	}
	return 0;
}

static char *journal_path(const char *region_path)
{
	char *p;
	return asprintf(&p, "%s.pmtxj", region_path) < 0 ? NULL : p;
}

/* Read the journal's header and check it belongs to this region (J4).
 * 1: another region's journal that holds no record, so nobody's (a
 * region replaced at this path): the caller drops it. */
static int open_existing(struct scan *s, const uint8_t uuid[16], int *slot)
{
	struct stat st;
	if (fstat(s->jfd, &st) != 0)
		return errno;
	int rc = read_hdr(s->jfd, s->path, (uint64_t)st.st_size, &s->h, slot);
	if (rc || memcmp(s->h.uuid, uuid, 16) == 0)
		return rc;
	if ((rc = scan_records(s)) != 0 || s->nrec == 0)
		return rc ? rc : 1;
	pmtx__set_errmsg("journal %s belongs to another region (uuid differs) "
	                 "and holds %llu records", s->path,
	                 (unsigned long long)s->nrec);
	return PMTX_E_CORRUPT;
}

/* Open the journal at jpath: 0 and s->jfd, or ENOENT (none; made first
 * if keep), or another error. A journal that open_existing finds is
 * nobody's is removed first. */
static int open_journal(struct scan *s, const char *jpath,
                        const uint8_t uuid[16], enum journal_mode mode,
                        int *slot, int due)
{
	for (int pass = 0; pass < 2; pass++) {
		s->jfd = open(jpath, (mode == JOURNAL_READONLY ? O_RDONLY
		                                              : O_RDWR) |
		                             O_CLOEXEC);
		if (s->jfd < 0 && errno == ENOENT && due)
			return journal_missing(jpath);
		if (s->jfd < 0 && errno == ENOENT && mode == JOURNAL_CREATE) {
			int rc = create_journal(jpath, uuid);
			if (rc)
				return rc;
			s->jfd = open(jpath, O_RDWR | O_CLOEXEC);
		}
		if (s->jfd < 0)
			return errno;
		int rc = open_existing(s, uuid, slot);
		if (rc != 1)
			return rc;
		close(s->jfd);
		s->jfd = -1;
		if (mode == JOURNAL_READONLY) /* another's: as if none */
			return due ? journal_missing(jpath) : ENOENT;
		if (unlink(jpath) != 0 || (rc = pmtx__sync_dir_of(jpath)) != 0)
			return rc ? rc : errno;
	}
	return EIO;
}

/* Records found; then applied, the file durable, the journal reset. */
static int replay(struct scan *s, int *slot, int readonly)
{
	int rc = scan_records(s); /* validate every record first (J3) */
	if (rc || (readonly && s->nrec)) {
		if (!rc)
			pmtx__set_errmsg("journal %s holds %llu records not "
			                 "yet in the region file: open the "
			                 "region for writing once (pmtx "
			                 "recover) to apply them", s->path,
			                 (unsigned long long)s->nrec);
		return rc ? rc : PMTX_E_UNSUPPORTED;
	}
	if (readonly)
		return 0;
	if (s->nrec) {
		uint64_t n = s->nrec;
		s->nrec = 0, s->apply = 1;
		if ((rc = scan_records(s)))
			return rc;
		if (s->nrec != n) {
			pmtx__set_errmsg("journal %s changed while it was "
			                 "replayed (%llu records, then %llu)",
			                 s->path, (unsigned long long)n,
			                 (unsigned long long)s->nrec);
			return EIO;
		}
		if ((rc = sync_fd(s->rfd, JS_S_REPLAY_REGION)))
			return rc;
	}
	uint64_t epoch = s->h.epoch;
	rc = reset(s->jfd, slot, s->h.uuid, &epoch, s->h.capacity);
	s->h.epoch = epoch;
	return rc;
}

static void journal_free(struct journal *j)
{
	if (!j)
		return;
	if (j->jfd >= 0)
		close(j->jfd);
	if (j->giving)
		jdrop_unregister(j->base);
	if (j->pgbit)
		munmap(j->pgbit, j->map_len / JPAGE / 8 + 1);
	free(j->pages);
	free(j->copy);
	free(j->wbuf);
	free(j->path);
	pthread_mutex_destroy(&j->mu);
	pthread_mutex_destroy(&j->sync_mu);
	free(j);
}

static struct journal *journal_new(int jfd, int rfd, char *path,
                                   const struct pmtxj_hdr *h, int slot,
                                   uint64_t mark_off)
{
	struct journal *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	pthread_mutex_init(&j->mu, NULL);
	pthread_mutex_init(&j->sync_mu, NULL);
	j->jfd = jfd, j->rfd = rfd, j->path = path;
	memcpy(j->uuid, h->uuid, 16);
	j->epoch = h->epoch, j->cap = h->capacity, j->slot = slot;
	j->tail = PMTXJ_REC_OFF;
	j->mark_off = mark_off;
	return j;
}

/* REMOVE: the file holds every commit now: the mark cleared first, then
 * the journal removed (invariant 9). */
static int remove_journal(int rfd, uint64_t mark_off, uint64_t due,
                          const char *jpath)
{
	int rc = due ? mark_write(rfd, mark_off, 0) : 0;
	if (!rc && unlink(jpath) == 0)
		rc = pmtx__sync_dir_of(jpath);
	return rc;
}

/* KEEP: the journal locked while the region is open (journal_forget
 * skips it), the mark durable before any record, even when found set
 * (its write may not have been: invariant 9), then handed over. */
static int keep_journal(struct scan *s, int slot, uint64_t mark_off,
                        char *jpath, struct journal **keep)
{
	if (flock(s->jfd, LOCK_EX | LOCK_NB) != 0)
		return errno == EWOULDBLOCK ? PMTX_E_LOCKED : errno;
	int rc = mark_write(s->rfd, mark_off, 1);
	if (!rc && !(*keep = journal_new(s->jfd, s->rfd, jpath, &s->h, slot,
	                                 mark_off)))
		rc = ENOMEM;
	return rc;
}

int journal_recover(int rfd, const char *region_path, const uint8_t uuid[16],
                    enum journal_mode mode, const struct journal_mark *mk,
                    struct journal **keep)
{
	struct scan s = {.rfd = rfd, .jfd = -1};
	char *jpath = journal_path(region_path);
	if (!jpath)
		return ENOMEM;
	s.path = jpath;
	struct stat st;
	int slot = 0;
	uint64_t due = 0;
	int rc = fstat(rfd, &st) ? errno : 0;
	s.rfile = (uint64_t)st.st_size;
	if (!rc)
		rc = mark_read(rfd, mk->off, &due);
	if (!rc)
		rc = open_journal(&s, jpath, uuid, mode, &slot,
		                  due && !mk->forget);
	if (mode == JOURNAL_CREATE)
		mode = JOURNAL_KEEP;
	if (rc == ENOENT) { /* no journal: nothing to replay */
		rc = 0, s.jfd = -1;
		if (due && mode != JOURNAL_READONLY) /* forgotten */
			rc = mark_write(rfd, mk->off, 0);
	} else if (!rc) {
		rc = replay(&s, &slot, mode == JOURNAL_READONLY);
	}
	free(s.buf);
	if (!rc && s.jfd >= 0 && mode == JOURNAL_REMOVE)
		rc = remove_journal(rfd, mk->off, due, jpath);
	if (!rc && s.jfd >= 0 && mode == JOURNAL_KEEP &&
	    (rc = keep_journal(&s, slot, mk->off, jpath, keep)) == 0)
		return 0; /* the journal owns jfd and jpath now */
	if (s.jfd >= 0)
		close(s.jfd);
	free(jpath);
	return rc;
}

/* ---- the page set: what a checkpoint writes ---- */

static int page_add(struct journal *j, uint64_t pg)
{
	if (j->pgbit[pg / 8] & (1u << (pg % 8)))
		return 0;
	if (pmtx_reserve(&j->pages, j->npages, 1, &j->cap_pages,
	                 sizeof(*j->pages), 1024))
		return ENOMEM;
	j->pgbit[pg / 8] |= (uint8_t)(1u << (pg % 8));
	j->pages[j->npages++] = pg;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Invariant 3: one 8-byte load per word. */
static void copy_words(void *dst, const void *src, size_t n)
{
	uint64_t *d = dst;
	const uint64_t *s = src;
	for (size_t i = 0; i < n / 8; i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

/* Write the listed pages as they are now, in runs (invariant 1). */
static int write_pages(struct journal *j)
{
	if (j->npages > 1)
		qsort(j->pages, j->npages, sizeof(*j->pages), cmp_u64);
	size_t fill = 0;
	uint64_t start = 0;
	for (size_t i = 0; i < j->npages; i++) {
		uint64_t pg = j->pages[i];
		if (fill && (pg * JPAGE != start + fill || fill == COPY_CHUNK)) {
			int rc = write_all(j->rfd, j->copy, fill, start,
			                   JS_W_CKPT);
			if (rc)
				return rc;
			fill = 0;
		}
		if (!fill)
			start = pg * JPAGE;
		copy_words(j->copy + fill, j->base + pg * JPAGE, JPAGE);
		fill += JPAGE;
	}
	return fill ? write_all(j->rfd, j->copy, fill, start, JS_W_CKPT) : 0;
}

static void pages_clear(struct journal *j)
{
	for (size_t i = 0; i < j->npages; i++)
		j->pgbit[j->pages[i] / 8] = 0;
	j->npages = 0;
}

static void raise_synced(struct journal *j, uint64_t to)
{
	uint64_t cur = atomic_load(&j->synced);
	while (cur < to && !atomic_compare_exchange_weak(&j->synced, &cur, to))
		;
}

static int fail(struct journal *j, int rc)
{
	int none = 0;
	atomic_compare_exchange_strong(&j->failed, &none, rc > 0 ? rc : EIO);
	pmtx__set_errmsg("journal %s: %s; the region must be closed and "
	                 "opened again", j->path,
	                 rc > 0 ? strerror(rc) : "I/O error");
	return PMTX_E_IO;
}

/* Under mu: the records held in wbuf into the journal file, in order
 * (invariant 8). */
static int wbuf_write(struct journal *j)
{
	int rc = j->wlen ? write_all(j->jfd, j->wbuf, j->wlen,
	                             j->tail - j->wlen, JS_W_RECORD)
	                 : 0;
	if (!rc)
		atomic_fetch_add(&j->written, j->wlen);
	j->wlen = 0;
	return rc;
}

/* The journal durable up to pos (bytes written): one fdatasync at a
 * time, shared (one that began after those bytes were written covers
 * them: invariant 4), and never after a failed one (invariant 6: a
 * second fdatasync after a failure reports success for pages the file
 * system may have dropped). 0 or PMTX_E_IO. */
static int sync_journal(struct journal *j, uint64_t pos,
                        enum journal_site site)
{
	if (atomic_load(&j->synced) >= pos && !atomic_load(&j->failed))
		return 0;
	pthread_mutex_lock(&j->sync_mu);
	int rc = atomic_load(&j->failed) ? EIO : 0;
	if (!rc && atomic_load(&j->synced) < pos) {
		uint64_t to = atomic_load(&j->written);
		if ((rc = sync_fd(j->jfd, site)))
			fail(j, rc);
		else
			raise_synced(j, to);
	}
	pthread_mutex_unlock(&j->sync_mu);
	return rc ? PMTX_E_IO : 0;
}

/* Pages in the run of the sorted page set from i: consecutive, and at
 * most COPY_CHUNK bytes. */
static size_t run_at(const struct journal *j, size_t i)
{
	size_t k = 1;
	while (i + k < j->npages && k < COPY_CHUNK / JPAGE &&
	       j->pages[i + k] == j->pages[i] + k)
		k++;
	return k;
}

/* Under mu, the page set written (sorted) and durable in the region
 * file: each page whose private copy holds what the file does is given
 * back (invariants 10-12). A run the file cannot be read for is kept. */
static void give_back(struct journal *j)
{
	jdrop_give_fn *give = jio->drop ? jio->drop : jdrop_madvise;
	for (size_t i = 0, k; i < j->npages; i += k) {
		k = run_at(j, i);
		uint64_t off = j->pages[i] * JPAGE;
		size_t n = k * JPAGE;
		if (read_all(j->rfd, j->copy, n, off) == 0)
			(void)jdrop_run(j->base + off, j->copy, n, give);
	}
}

/* Under mu: every line of the journal into the region file, durably,
 * then a new epoch (invariants 1 and 2); give: then the pages given
 * back, once the file is durable (invariant 10). */
static int checkpoint(struct journal *j, int give)
{
	give = give && j->giving;
	int early = give && MUT_ON(MUT_JOURNAL_DROP_AFTER_SYNC);
	int rc = wbuf_write(j);
	if (!rc)
		rc = sync_journal(j, atomic_load(&j->written),
		                  JS_S_CKPT_JOURNAL);
	if (!rc)
		rc = write_pages(j);
	if (!rc && early)
		give_back(j);
	if (!rc)
		rc = sync_fd(j->rfd, JS_S_CKPT_REGION);
	if (!rc && give && !early)
		give_back(j);
	if (!rc)
		rc = reset(j->jfd, &j->slot, j->uuid, &j->epoch, j->cap);
	if (rc)
		return fail(j, rc);
	pages_clear(j);
	j->tail = PMTXJ_REC_OFF;
	j->seq = 0;
	return 0;
}

/* ---- the barrier's lines, per thread ---- */

/* Lines a thread lost track of (out of memory in line_add), counted for
 * every region: each journal writes back all its pages at its next
 * barrier after the count moves. */
static _Atomic uint64_t lines_lost;

struct tls_lines {
	uintptr_t *a;
	size_t n, cap;
	char *rec;  /* the record being built */
	size_t rec_cap;
};
static _Thread_local struct tls_lines tls;
static _Thread_local struct pmtx__thread_exit tls_exit; /* tls_free */

static void tls_free(void *arg)
{
	struct tls_lines *t = arg;
	free(t->a);
	free(t->rec);
	memset(t, 0, sizeof(*t));
}

/* A thread's buffers are freed at its exit (tls_free): registered before
 * the first is made. */
static void tls_register(void)
{
	(void)pmtx__thread_exit_register(&tls_exit, tls_free, &tls);
}

static void line_add(uintptr_t a)
{
	if (tls.n && tls.a[tls.n - 1] == a)
		return;
	if (tls.n == tls.cap)
		tls_register();
	if (pmtx_reserve(&tls.a, tls.n, 1, &tls.cap, sizeof(*tls.a), 256)) {
		atomic_fetch_add(&lines_lost, 1);
		return;
	}
	tls.a[tls.n++] = a;
}

static void j_flush(struct persist *p, const void *a, size_t n)
{
	(void)p;
	uintptr_t l = ALIGN_DOWN((uintptr_t)a, PMTXJ_LINE);
	for (; l < (uintptr_t)a + n; l += PMTXJ_LINE)
		line_add(l);
}

static void j_copy(struct persist *p, void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
	j_flush(p, dst, n);
}

/* Move this region's lines of the thread's list to its front (*k of
 * them), then sort them and drop repeats there: returns how many remain.
 * Other regions' lines stay after the first *k. */
static size_t take_lines(struct persist *p, size_t *k)
{
	uintptr_t lo = (uintptr_t)p->base, hi = lo + p->len;
	size_t m = 0;
	for (size_t i = 0; i < tls.n; i++)
		if (tls.a[i] >= lo && tls.a[i] < hi) {
			uintptr_t t = tls.a[m];
			tls.a[m++] = tls.a[i];
			tls.a[i] = t;
		}
	if (m > 1)
		qsort(tls.a, m, sizeof(*tls.a), cmp_u64);
	size_t u = 0;
	for (size_t i = 0; i < m; i++)
		if (!u || tls.a[u - 1] != tls.a[i])
			tls.a[u++] = tls.a[i];
	*k = m;
	return u;
}

static void drop_lines(size_t k)
{
	memmove(tls.a, tls.a + k, (tls.n - k) * sizeof(*tls.a));
	tls.n -= k;
}

/* Header and offsets of a record of n lines, in tls.rec. */
static int rec_build(struct persist *p, size_t n)
{
	uint64_t len = pmtxj_rec_len(n);
	if (len > tls.rec_cap) {
		tls_register();
		char *r = realloc(tls.rec, len);
		if (!r)
			return ENOMEM;
		tls.rec = r, tls.rec_cap = len;
	}
	memset(tls.rec, 0, pmtxj_rec_len(n) - n * PMTXJ_LINE);
	uint64_t *off = (uint64_t *)(tls.rec + sizeof(struct pmtxj_rec));
	for (size_t i = 0; i < n; i++)
		off[i] = tls.a[i] - (uintptr_t)p->base;
	return 0;
}

/* Under mu: take the lines' bytes (invariant 3), seal, append. */
static int rec_append(struct journal *j, size_t n)
{
	uint64_t len = pmtxj_rec_len(n);
	char *line = tls.rec + len - n * PMTXJ_LINE;
	for (size_t i = 0; i < n; i++)
		copy_words(line + i * PMTXJ_LINE, (const void *)tls.a[i],
		           PMTXJ_LINE);
	struct pmtxj_rec r = {.magic = PMTXJ_REC_MAGIC,
	                      .epoch = j->epoch,
	                      .seq = j->seq,
	                      .len = len,
	                      .nlines = (uint32_t)n};
	memcpy(tls.rec, &r, sizeof(r));
	r.checksum = pmtx_checksum(tls.rec, len, PMTXJ_CSUM_SEED_REC);
	memcpy(tls.rec, &r, sizeof(r));
	int rc = len > WBUF - j->wlen ? wbuf_write(j) : 0;
	if (!rc && len > WBUF) {
		rc = write_all(j->jfd, tls.rec, len, j->tail, JS_W_RECORD);
		if (!rc)
			atomic_fetch_add(&j->written, len);
	} else if (!rc) {
		memcpy(j->wbuf + j->wlen, tls.rec, len), j->wlen += len;
	}
	if (rc)
		return fail(j, rc);
	j->tail += len, j->seq++;
	return 0;
}

static int mark_pages(struct journal *j, struct persist *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t pg = (tls.a[i] - (uintptr_t)p->base) / JPAGE;
		if (page_add(j, pg))
			return fail(j, ENOMEM);
	}
	return 0;
}

/* A record of n lines cannot fit the journal at all. */
static int too_big(const struct journal *j, size_t n)
{
	return pmtxj_rec_len(n) > j->cap - PMTXJ_REC_OFF;
}

/* Under mu: pages of the n lines (sorted) not yet in the page set. */
static size_t fresh_pages(const struct journal *j, struct persist *p,
                          size_t n)
{
	size_t k = 0;
	uint64_t last = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		uint64_t pg = (tls.a[i] - (uintptr_t)p->base) / JPAGE;
		k += pg != last && !(j->pgbit[pg / 8] & (1u << (pg % 8)));
		last = pg;
	}
	return k;
}

/* Under mu: the lines as a record, or, when they cannot fit the journal
 * or the page budget (invariant 13), into the file by a checkpoint. */
static int append_locked(struct journal *j, struct persist *p, size_t n)
{
	uint64_t len = pmtxj_rec_len(n);
	size_t fresh = j->giving ? fresh_pages(j, p, n) : 0; /* no budget */
	int big = too_big(j, n) || fresh > j->max_pages;
	int full = len > j->cap - j->tail || j->npages + fresh > j->max_pages;
	int rc = big ? mark_pages(j, p, n) : 0; /* the checkpoint writes them */
	if (!rc && (big || full))
		rc = checkpoint(j, 1);
	if (!rc && !big && !(rc = mark_pages(j, p, n)))
		rc = rec_append(j, n);
	return rc;
}

static int j_barrier_kind(struct persist *p, int durable)
{
	struct journal *j = p->jrnl;
	int rc = 0;
	uint64_t lost = atomic_load(&lines_lost);
	if (atomic_exchange(&j->lost_seen, lost) != lost) /* all pages */
		rc = journal_write_all_pages(p);
	size_t k, n = take_lines(p, &k);
	if (!rc && n && !too_big(j, n) && rec_build(p, n))
		rc = fail(j, ENOMEM);
	pthread_mutex_lock(&j->mu);
	if (!rc && atomic_load(&j->failed))
		rc = PMTX_E_IO;
	if (!rc && n)
		rc = append_locked(j, p, n);
	if (!rc && durable && (rc = wbuf_write(j)))
		rc = fail(j, rc);
	uint64_t pos = atomic_load(&j->written);
	pthread_mutex_unlock(&j->mu);
	drop_lines(k);
	if (!rc && durable)
		rc = sync_journal(j, pos, JS_S_COMMIT);
	return rc;
}

static int j_barrier(struct persist *p)
{
	return j_barrier_kind(p, 1);
}

static int j_order(struct persist *p)
{
	return j_barrier_kind(p, 0);
}

/* ---- close (invariant 7) ---- */

/* Pages of [base, base+len) this process has written, into the page set:
 * private copies (present and not file-backed, or swapped); every page
 * where pagemap cannot be read. 0 or ENOMEM. */
static int changed_pages(struct journal *j, struct persist *p)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	uint64_t npg = p->len / JPAGE, first = (uintptr_t)p->base / JPAGE;
	uint64_t buf[512];
	int rc = 0;
	for (uint64_t i = 0; i < npg && !rc; i += 512) {
		size_t k = (size_t)MIN(512, npg - i);
		if (fd < 0 || read_all(fd, buf, k * 8, (first + i) * 8)) {
			for (size_t t = 0; t < k && !rc; t++)
				rc = page_add(j, i + t);
			continue;
		}
		for (size_t t = 0; t < k && !rc; t++) {
			uint64_t e = buf[t];
			int present = (e >> 63) & 1, swapped = (e >> 62) & 1;
			int file = (e >> 61) & 1;
			if ((present && !file) || swapped)
				rc = page_add(j, i + t);
		}
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

/* give: the pages given back after (not at close: they go with the
 * mapping). */
static int write_all_pages(struct persist *p, int give)
{
	struct journal *j = p->jrnl;
	pthread_mutex_lock(&j->mu);
	int rc = atomic_load(&j->failed) ? PMTX_E_IO : changed_pages(j, p);
	if (!rc)
		rc = checkpoint(j, give);
	else if (rc > 0)
		rc = fail(j, rc);
	pthread_mutex_unlock(&j->mu);
	return rc;
}

int journal_write_all_pages(struct persist *p)
{
	return write_all_pages(p, 1);
}

static int j_detach(struct persist *p, int clean)
{
	struct journal *j = p->jrnl;
	int rc = clean ? write_all_pages(p, 0) : 0;
	if (clean && !rc) /* invariant 9: the file holds every commit */
		rc = mark_write(j->rfd, j->mark_off, 0);
	journal_free(j);
	p->jrnl = NULL;
	return rc;
}

const persist_ops journal_ops = {.name = "journal",
                                 .flush = j_flush,
                                 .barrier = j_barrier,
                                 .copy_nt = j_copy,
                                 .order = j_order,
                                 .detach = j_detach};

/* PMTX_JOURNAL_DROP=0 keeps every page until close (invariant 10). */
static int giving_wanted(void)
{
	const char *s = getenv("PMTX_JOURNAL_DROP");
	return !s || strcmp(s, "0") != 0;
}

int journal_attach(struct persist *p, struct journal *j, uint64_t map_len)
{
	j->base = p->base;
	j->map_len = map_len;
	j->giving = giving_wanted() &&
	            jdrop_register(j->base, (size_t)map_len) == 0;
	j->max_pages = j->giving ? (size_t)(j->cap / JPAGE) : SIZE_MAX;
	size_t bits = map_len / JPAGE / 8 + 1;
	j->pgbit = mmap(NULL, bits, PROT_READ | PROT_WRITE,
	                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	j->copy = malloc(COPY_CHUNK);
	j->wbuf = malloc(WBUF);
	if (j->pgbit == MAP_FAILED || !j->copy || !j->wbuf) {
		if (j->pgbit == MAP_FAILED)
			j->pgbit = NULL;
		journal_free(j);
		return ENOMEM;
	}
	p->jrnl = j;
	return 0;
}

void journal_discard(struct journal *j)
{
	journal_free(j);
}

void journal_forget(const char *region_path)
{
	char *jpath = journal_path(region_path);
	int fd = jpath ? open(jpath, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
		unlink(jpath); /* nobody holds it open */
	if (fd >= 0)
		close(fd);
	free(jpath);
}
