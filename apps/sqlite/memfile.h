/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memfile.h - files that live in DRAM only, by name, shared by every
 * connection of the process: the rollback journals of pmtx databases.
 *
 * A journal needs no durability of its own here. The database's changes
 * reach the region only in the pmtx transaction of its commit (dbfile.c),
 * so after a crash the database is whole at the last commit and there is
 * nothing to roll back: a journal that vanishes with the process is
 * exactly what recovery then needs. While the process runs, SQLite uses
 * the journal as usual to roll back a statement or a transaction.
 */
#ifndef PSQ_MEMFILE_H
#define PSQ_MEMFILE_H

#include <stddef.h>
#include <stdint.h>

struct memfile;

/* Open (create = 1: create if absent) the file called name; ENOENT if it
 * does not exist and create is 0, ENOMEM. */
int mf_open(const char *name, int create, struct memfile **out);
void mf_close(struct memfile *f);
/* Remove the name (the data lives until its last close); ENOENT. */
int mf_delete(const char *name);
int mf_exists(const char *name);
/* Bytes read (short at the end of the file: the rest is zeroed). */
size_t mf_read(struct memfile *f, void *buf, size_t n, uint64_t off);
int mf_write(struct memfile *f, const void *buf, size_t n, uint64_t off);
int mf_truncate(struct memfile *f, uint64_t size);
uint64_t mf_size(struct memfile *f);

#endif /* PSQ_MEMFILE_H */
