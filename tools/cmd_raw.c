/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_raw.c - a region file's metadata as stored (pread) and as a private
 * view sees it after recovery, and what recovery changes between the two.
 *
 * Whether a region needs recovery is not "some descriptor is not IDLE":
 * an undo descriptor stays COMMITTED after its commit (undo.c U6), and a
 * redo descriptor whose transaction logged nothing durably stays RUNNING;
 * recovery leaves both as they are. What recovery would do is learnt by
 * letting it run in a private view (PMTX_OPEN_PRIVATE) and comparing:
 *
 * Invariants
 *  1. Recovery writes nothing to a region that needs none (recovery.c R2),
 *     and whatever it writes is either heap metadata (allocation logs,
 *     log chunks adopted) or data followed by an IDLE mark on the
 *     descriptor whose log it applied (R3). So comparing the descriptors,
 *     the region state and the heap metadata of the superblocks in use
 *     between the file and the recovered view tells exactly whether
 *     recovery is needed, in O(metadata), without reading the data.
 *  2. The file is read with pread into memory of its own; the view is
 *     read only at offsets the library's open validated, and each area's
 *     end is checked again against the file or view size (cmd.h rule 3).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"

#define MAX_NDESC 4096u /* src/region/region.c: the most create allows */

int cmd_open_view(const char *name, const char *path, unsigned flags,
                  pmtx_region **out)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.flags = PMTX_OPEN_PRIVATE | flags;
	o.truncation = PMTX_TRUNC_LAZY; /* no background thread */
	int rc = pmtx_open(path, &o, out);
	if (rc)
		cmd_report(name, path, rc, pmtx_errmsg());
	return rc;
}

static int pread_all(int fd, void *buf, uint64_t len, uint64_t off)
{
	unsigned char *p = buf;
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0)
			return errno;
		if (n == 0)
			return PMTX_E_TRUNCATED;
		p += n, off += (uint64_t)n, len -= (uint64_t)n;
	}
	return 0;
}

/* End offsets of every area read; each must lie within size. */
static int areas_fit(const struct cmd_snapshot *s, uint64_t size)
{
	const struct pmtx_hdr *h = &s->hdr;
	if (h->magic != PMTX_MAGIC || h->ndesc == 0 || h->ndesc > MAX_NDESC ||
	    h->desc_size != sizeof(struct pmtx_desc))
		return 0;
	return h->rstate_off <= size &&
	       sizeof(struct pmtx_rstate) <= size - h->rstate_off &&
	       h->desc_off <= size &&
	       (uint64_t)h->ndesc * sizeof(struct pmtx_desc) <=
	               size - h->desc_off &&
	       h->meta_off <= size;
}

static int meta_fits(const struct cmd_snapshot *s, uint64_t size)
{
	const struct pmtx_hdr *h = &s->hdr;
	uint64_t nsb = s->rstate.nsb;
	return nsb >= h->nsb && nsb <= h->max_nsb &&
	       nsb <= (size - h->meta_off) / sizeof(struct pmtx_sb_meta);
}

static int alloc_areas(struct cmd_snapshot *s)
{
	s->meta_bytes = s->rstate.nsb * sizeof(struct pmtx_sb_meta);
	s->desc = calloc(s->hdr.ndesc, sizeof(struct pmtx_desc));
	s->meta = malloc(s->meta_bytes ? s->meta_bytes : 1);
	return s->desc && s->meta ? 0 : ENOMEM;
}

static int read_areas(int fd, struct cmd_snapshot *s)
{
	int rc = pread_all(fd, &s->hdr, sizeof(s->hdr), 0);
	if (!rc && !areas_fit(s, s->file_size))
		rc = PMTX_E_CORRUPT;
	if (!rc)
		rc = pread_all(fd, &s->rstate, sizeof(s->rstate),
		               s->hdr.rstate_off);
	if (!rc && !meta_fits(s, s->file_size))
		rc = PMTX_E_CORRUPT;
	if (!rc)
		rc = alloc_areas(s);
	if (!rc)
		rc = pread_all(fd, s->desc,
		               (uint64_t)s->hdr.ndesc * sizeof(struct pmtx_desc),
		               s->hdr.desc_off);
	if (!rc)
		rc = pread_all(fd, s->meta, s->meta_bytes, s->hdr.meta_off);
	return rc;
}

int cmd_snapshot_file(const char *path, struct cmd_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	struct stat st;
	int rc = fstat(fd, &st) ? errno : 0;
	s->file_size = (uint64_t)st.st_size;
	if (!rc && s->file_size < sizeof(s->hdr))
		rc = PMTX_E_TOO_SMALL;
	if (!rc)
		rc = read_areas(fd, s);
	close(fd);
	if (rc)
		cmd_snapshot_free(s);
	return rc;
}

int cmd_snapshot_view(pmtx_region *r, const struct cmd_snapshot *file,
                      struct cmd_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->hdr = file->hdr;
	s->file_size = file->file_size;
	uint64_t size = pmtx_region_size(r);
	const struct pmtx_rstate *st = pmtx_ptr(r, s->hdr.rstate_off);
	if (!areas_fit(s, size) || !st)
		return PMTX_E_CORRUPT;
	s->rstate = *st;
	if (!meta_fits(s, size))
		return PMTX_E_CORRUPT;
	int rc = alloc_areas(s);
	if (rc) {
		cmd_snapshot_free(s);
		return rc;
	}
	memcpy(s->desc, pmtx_ptr(r, s->hdr.desc_off),
	       (size_t)s->hdr.ndesc * sizeof(struct pmtx_desc));
	if (s->meta_bytes)
		memcpy(s->meta, pmtx_ptr(r, s->hdr.meta_off), s->meta_bytes);
	return 0;
}

void cmd_snapshot_free(struct cmd_snapshot *s)
{
	free(s->desc);
	free(s->meta);
	s->desc = NULL;
	s->meta = NULL;
}

void cmd_recovery_diff(const struct cmd_snapshot *before,
                       const struct cmd_snapshot *after,
                       struct cmd_recovery *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < before->hdr.ndesc; i++) {
		uint64_t sv = before->desc[i].statever;
		out->not_idle += PMTX_SV_STATE(sv) != PMTX_DS_IDLE;
		out->changed += sv != after->desc[i].statever;
	}
	out->meta_changed =
		before->meta_bytes != after->meta_bytes ||
		memcmp(before->meta, after->meta, before->meta_bytes) != 0 ||
		memcmp(&before->rstate, &after->rstate, sizeof(before->rstate));
	out->needed = out->changed || out->meta_changed ||
	              memcmp(before->desc, after->desc,
	                     (size_t)before->hdr.ndesc *
	                             sizeof(struct pmtx_desc)) != 0;
}

const char *cmd_state_name(unsigned state)
{
	static const char *const names[] = {"IDLE", "RUNNING", "ABORTED",
	                                    "COMMITTED"};
	return state < 4 ? names[state] : "?";
}

const char *cmd_rt_name(unsigned rt)
{
	return rt <= PMTX_RT_TWIN ? pmtx_runtime_name((pmtx_runtime)rt) : "?";
}

uint64_t cmd_region_bytes(const struct cmd_snapshot *s)
{
	const struct pmtx_hdr *h = &s->hdr;
	uint64_t nsb = s->rstate.nsb;
	return nsb == h->nsb ? h->size : h->heap_off + nsb * PMTX_SB_SIZE;
}

void cmd_format_uuid(const uint8_t u[16], char out[37])
{
	char *p = out;
	for (unsigned i = 0; i < 16; i++) {
		p += sprintf(p, "%02x", u[i]);
		if (i == 3 || i == 5 || i == 7 || i == 9)
			*p++ = '-';
	}
	*p = 0;
}
