/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memfile.c - DRAM files by name (memfile.h).
 *
 * Invariants
 *  M1. A name is in the registry at most once; a deleted file leaves the
 *      registry at once and is freed at its last close.
 *  M2. Lock order: the registry lock, then a file's own lock. A file's
 *      data is touched only under its own lock (connections of several
 *      threads may share a journal name, though SQLite's locks keep one
 *      writer at a time).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "memfile.h"

struct memfile {
	struct memfile *next;   /* registry list (registry lock) */
	char *name;
	int refs;               /* open handles (registry lock) */
	int linked;             /* still in the registry (registry lock) */
	pthread_mutex_t mu;
	char *data;             /* mu */
	uint64_t size, cap;     /* mu */
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct memfile *reg_head;

static struct memfile **do_find(const char *name)
{
	struct memfile **p = &reg_head;
	while (*p && strcmp((*p)->name, name))
		p = &(*p)->next;
	return p;
}

static struct memfile *mf_new(const char *name)
{
	struct memfile *f = calloc(1, sizeof(*f));
	if (!f || !(f->name = strdup(name))) {
		free(f);
		return NULL;
	}
	pthread_mutex_init(&f->mu, NULL);
	f->linked = 1;
	return f;
}

int mf_open(const char *name, int create, struct memfile **out)
{
	int rc = 0;
	pthread_mutex_lock(&reg_mu);
	struct memfile *f = *do_find(name);
	if (!f && !create) {
		rc = ENOENT;
	} else if (!f) {
		if ((f = mf_new(name))) {
			f->next = reg_head;
			reg_head = f;
		} else {
			rc = ENOMEM;
		}
	}
	if (!rc) {
		f->refs++;
		*out = f;
	}
	pthread_mutex_unlock(&reg_mu);
	return rc;
}

static void mf_destroy(struct memfile *f)
{
	pthread_mutex_destroy(&f->mu);
	free(f->data);
	free(f->name);
	free(f);
}

void mf_close(struct memfile *f)
{
	pthread_mutex_lock(&reg_mu);
	int last = --f->refs == 0 && !f->linked;
	pthread_mutex_unlock(&reg_mu);
	if (last)
		mf_destroy(f);
}

int mf_delete(const char *name)
{
	pthread_mutex_lock(&reg_mu);
	struct memfile **p = do_find(name), *f = *p;
	int gone = 0;
	if (f) {
		*p = f->next;
		f->linked = 0;
		gone = f->refs == 0;
	}
	pthread_mutex_unlock(&reg_mu);
	if (gone)
		mf_destroy(f);
	return f ? 0 : ENOENT;
}

int mf_exists(const char *name)
{
	pthread_mutex_lock(&reg_mu);
	int found = *do_find(name) != NULL;
	pthread_mutex_unlock(&reg_mu);
	return found;
}

size_t mf_read(struct memfile *f, void *buf, size_t n, uint64_t off)
{
	pthread_mutex_lock(&f->mu);
	size_t got = off >= f->size ? 0
	             : (size_t)(f->size - off < n ? f->size - off : n);
	memcpy(buf, f->data + off, got);
	memset((char *)buf + got, 0, n - got);
	pthread_mutex_unlock(&f->mu);
	return got;
}

/* Make room for size bytes (f->mu held). */
static int do_reserve(struct memfile *f, uint64_t size)
{
	if (size <= f->cap)
		return 0;
	uint64_t cap = f->cap ? f->cap : 65536;
	while (cap < size)
		cap *= 2;
	char *d = realloc(f->data, cap);
	if (!d)
		return ENOMEM;
	f->data = d;
	f->cap = cap;
	return 0;
}

int mf_write(struct memfile *f, const void *buf, size_t n, uint64_t off)
{
	pthread_mutex_lock(&f->mu);
	int rc = do_reserve(f, off + n);
	if (!rc) {
		if (off > f->size)
			memset(f->data + f->size, 0, off - f->size);
		memcpy(f->data + off, buf, n);
		if (off + n > f->size)
			f->size = off + n;
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

int mf_truncate(struct memfile *f, uint64_t size)
{
	pthread_mutex_lock(&f->mu);
	int rc = do_reserve(f, size);
	if (!rc) {
		if (size > f->size)
			memset(f->data + f->size, 0, size - f->size);
		f->size = size;
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

uint64_t mf_size(struct memfile *f)
{
	pthread_mutex_lock(&f->mu);
	uint64_t s = f->size;
	pthread_mutex_unlock(&f->mu);
	return s;
}
