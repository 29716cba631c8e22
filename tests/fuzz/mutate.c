/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mutate.c - the structure-aware mutator of fuzz_region (libFuzzer's
 * LLVMFuzzerCustomMutator).
 *
 * Random bytes stop at the first check word they break: a mutated header
 * fails its checksum, a mutated log record its own, and recovery never
 * runs. This mutator lets mutations through those gates, and keeps them
 * where the format has something to say.
 *
 * Design
 *  M1. Most mutations are size-preserving and confined to one area of the
 *      image, found from the input's own header: the header fields, the
 *      descriptors, one descriptor's log or allocation-log chunk (from its
 *      first record up to its last non-zero line), the root, the heap
 *      metadata, one heap superblock, or anywhere. A region's size is in
 *      its header, so a size change is a TRUNCATED or CORRUPT rejection
 *      and nothing else.
 *  M2. Inside the window, either libFuzzer's own mutators run (bytes,
 *      dictionary words, cross-over with other inputs), or one aligned
 *      8-byte word becomes an offset the format uses (an area's start, a
 *      superblock, a chunk, the end of the file) plus a small delta: the
 *      values that make links lead somewhere.
 *  M3. Afterwards, each with probability 7/8 (so that bad check words
 *      keep being tried too): every log record with the prolog gets its
 *      check word recomputed (checksum or mark), a redo COMMIT its batch
 *      checksum (over the records before it and its allocation-log
 *      entries, as recovery computes it), and the header its checksum.
 *  M4. One mutation in 16 is libFuzzer's plain one over the whole input,
 *      size changes and broken checksums included.
 *  M5. The mutator only writes bytes; the image it returns is what the
 *      target opens (fuzz_region.c F1).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/util.h"
#include "region/layout.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                               unsigned int seed);

#define MAX_WINDOW 256u
#define MAX_HOPS 4u

struct area {
	uint64_t off, len;
};

static uint64_t rnd(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return pmtx_mix64(*s);
}

static uint64_t get64(const uint8_t *d, uint64_t off)
{
	uint64_t v;
	memcpy(&v, d + off, 8);
	return v;
}

/* The header, if the input has one whose areas lie inside it. */
static int header_of(const uint8_t *d, size_t size, struct pmtx_hdr *h)
{
	if (size < PMTX_HDR_SIZE)
		return 0;
	memcpy(h, d, sizeof(*h));
	return h->ndesc > 0 && h->ndesc <= 4096 && h->desc_off < size &&
	       h->log0_off < size && h->meta_off < size && h->heap_off < size &&
	       h->root_off < size && h->log0_size >= 128 &&
	       h->alog0_size >= 128 && h->log0_size <= size &&
	       h->alog0_size <= size;
}

static uint64_t log0_of(const struct pmtx_hdr *h, unsigned i)
{
	return h->log0_off + (uint64_t)i * (h->log0_size + h->alog0_size);
}

/* [off, off + len) clamped to the input. */
static struct area clamp(uint64_t off, uint64_t len, size_t size)
{
	struct area a = {off, len};
	if (a.off >= size)
		a.off = 0;
	if (a.len > size - a.off)
		a.len = size - a.off;
	return a;
}

/* Bytes up to the last non-zero 64-byte line of a, plus one line. */
static uint64_t used_len(const uint8_t *d, struct area a)
{
	uint64_t end = a.len;
	while (end > 0 && d[a.off + end - 1] == 0)
		end--;
	return MIN(ALIGN_UP(end, 64) + 64, a.len);
}

/* M1: one area of the image, picked at random. */
static struct area pick_area(const uint8_t *d, size_t size, uint64_t *s)
{
	struct pmtx_hdr h;
	struct area a = {0, size};
	if (!header_of(d, size, &h))
		return a;
	unsigned i = (unsigned)(rnd(s) % h.ndesc);
	switch (rnd(s) % 8) {
	case 0: return clamp(0, offsetof(struct pmtx_hdr, reserved), size);
	case 1: return clamp(h.desc_off, (uint64_t)h.ndesc * 256, size);
	case 2:
		a = clamp(log0_of(&h, i), h.log0_size, size);
		a.len = used_len(d, a);
		return a;
	case 3:
		a = clamp(log0_of(&h, i) + h.log0_size, h.alog0_size, size);
		a.len = used_len(d, a);
		return a;
	case 4: return clamp(h.root_off, 16 + MIN(h.root_size, 4096), size);
	case 5: return clamp(h.meta_off, h.nsb * 320, size);
	case 6:
		return clamp(h.heap_off + rnd(s) % (h.nsb ? h.nsb : 1) *
		                                  PMTX_SB_SIZE,
		             PMTX_SB_SIZE, size);
	default: return a;
	}
}

/* M2: an offset the format uses, plus a small delta. */
static uint64_t interesting_offset(const uint8_t *d, size_t size, uint64_t *s)
{
	struct pmtx_hdr h;
	static const int64_t delta[] = {0, 0, 0, 0, 8, -8, 16, 64, -64, 1};
	uint64_t v = size;
	if (header_of(d, size, &h)) {
		unsigned i = (unsigned)(rnd(s) % h.ndesc);
		uint64_t cand[] = {
			h.desc_off, log0_of(&h, i), log0_of(&h, i) + h.log0_size,
			h.root_off, h.root_off + 16, h.meta_off, h.heap_off,
			h.heap_off + rnd(s) % (h.nsb ? h.nsb : 1) * PMTX_SB_SIZE,
			h.heap_off + 16, size, 0, h.nsb, h.log0_size};
		v = cand[rnd(s) % ARRAY_SIZE(cand)];
	}
	return v + (uint64_t)delta[rnd(s) % ARRAY_SIZE(delta)];
}

static void mutate_window(uint8_t *d, size_t size, uint64_t *s)
{
	struct area a = pick_area(d, size, s);
	if (a.len < 8)
		a = (struct area){0, size};
	uint64_t start = ALIGN_DOWN(rnd(s) % a.len, 8);
	uint64_t len = MIN(a.len - start, MAX_WINDOW);
	if (len >= 8 && rnd(s) % 4 == 0) {
		uint64_t v = interesting_offset(d, size, s);
		memcpy(d + a.off + start + ALIGN_DOWN(rnd(s) % len, 8), &v, 8);
		return;
	}
	uint8_t tmp[MAX_WINDOW];
	memcpy(tmp, d + a.off + start, len);
	size_t n = LLVMFuzzerMutate(tmp, len, len);
	memcpy(d + a.off + start, tmp, MIN(n, len));
}

/* ---- M3: check words ---- */

static int rec_fits(const uint8_t *d, uint64_t pos, uint64_t end)
{
	if (pos + sizeof(struct pmtx_rec) + 8 > end ||
	    get64(d, pos) != PMTX_REC_PROLOG)
		return 0;
	struct pmtx_rec h;
	memcpy(&h, d + pos, sizeof(h));
	return h.len <= end - pos && pos + PMTX_REC_BYTES(h.len) <= end;
}

static void fix_record(uint8_t *d, uint64_t pos)
{
	struct pmtx_rec h;
	memcpy(&h, d + pos, sizeof(h));
	uint64_t body = sizeof(h) + ALIGN_UP(h.len, 8), c;
	if (h.flags == PMTX_RF_CSUM)
		c = pmtx_checksum(d + pos, body, PMTX_CSUM_SEED_REC);
	else if (h.flags == PMTX_RF_MARK)
		c = pmtx_checksum(d + pos, sizeof(h), PMTX_CSUM_SEED_MARK);
	else
		return;
	memcpy(d + pos + body, &c, 8);
}

/* Every record-looking line of the chunk at off and up to MAX_HOPS
 * chunks linked after it. */
static void fix_chain(uint8_t *d, size_t size, uint64_t off)
{
	for (unsigned hop = 0; hop < MAX_HOPS; hop++) {
		if (off < PMTX_HDR_SIZE || off % 64 || off > size - 64 ||
		    get64(d, off) != PMTX_CHUNK_MAGIC)
			return;
		uint64_t csize = get64(d, off + 16);
		uint64_t end = csize <= size - off ? off + csize : size;
		for (uint64_t pos = off + 64; pos + 64 <= end; pos += 64)
			if (rec_fits(d, pos, end))
				fix_record(d, pos);
		off = get64(d, off + 8);
	}
}

/* Records of one transaction from the start of the first chunk, as
 * recovery reads them when nothing was skipped; returns the COMMIT's
 * offset, or 0. */
static uint64_t find_commit(const uint8_t *d, uint64_t chunk, uint64_t end)
{
	struct pmtx_rec h;
	uint64_t pos = chunk + 64;
	for (uint32_t seq = 0; rec_fits(d, pos, end); seq++) {
		memcpy(&h, d + pos, sizeof(h));
		if (h.seq != seq)
			return 0;
		if (h.type == PMTX_REC_COMMIT)
			return h.len >= 16 ? pos : 0;
		pos += ALIGN_UP(PMTX_REC_BYTES(h.len), 64);
	}
	return 0;
}

static void fix_batch(uint8_t *d, size_t size, const struct pmtx_hdr *h,
                      unsigned i)
{
	uint64_t chunk = log0_of(h, i), alog = chunk + h->log0_size;
	if (chunk + h->log0_size > size || alog + h->alog0_size > size)
		return;
	uint64_t commit = find_commit(d, chunk, chunk + h->log0_size);
	if (!commit)
		return;
	struct pmtx_rec c;
	memcpy(&c, d + commit, sizeof(c));
	if (c.off > (h->alog0_size - 64) / sizeof(struct pmtx_alog_entry))
		return;
	struct pmtx_hasher hs;
	pmtx_hash_init(&hs, PMTX_CSUM_SEED_REC);
	pmtx_hash_update(&hs, d + chunk + 64, commit - chunk - 64);
	pmtx_hash_update(&hs, d + alog + 64,
	                 c.off * sizeof(struct pmtx_alog_entry));
	uint64_t sum = pmtx_hash_digest(&hs);
	memcpy(d + commit + sizeof(c) + 8, &sum, 8);
	fix_record(d, commit);
}

static void fix_logs(uint8_t *d, size_t size, uint64_t *s)
{
	struct pmtx_hdr h;
	if (!header_of(d, size, &h))
		return;
	for (unsigned i = 0; i < h.ndesc && i < 64; i++) {
		uint64_t dsc = h.desc_off + (uint64_t)i * 256;
		unsigned rt = dsc + 8 <= size ? PMTX_SV_RUNTIME(get64(d, dsc)) : 0;
		fix_chain(d, size, log0_of(&h, i));
		if ((rt == 2 || rt == 3) && rnd(s) % 8)
			fix_batch(d, size, &h, i);
	}
}

static void fix_header(uint8_t *d, size_t size)
{
	if (size < PMTX_HDR_SIZE)
		return;
	uint64_t c = pmtx_checksum(d, offsetof(struct pmtx_hdr, checksum),
	                           PMTX_CSUM_SEED_HDR);
	memcpy(d + offsetof(struct pmtx_hdr, checksum), &c, 8);
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                               unsigned int seed)
{
	uint64_t s = seed;
	if (size < PMTX_HDR_SIZE || rnd(&s) % 16 == 0)
		return LLVMFuzzerMutate(data, size, max_size); /* M4 */
	mutate_window(data, size, &s);
	if (rnd(&s) % 8)
		fix_logs(data, size, &s);
	if (rnd(&s) % 8)
		fix_header(data, size);
	return size;
}
