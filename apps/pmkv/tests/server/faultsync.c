/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * faultsync.c - a disk that fails, for tests/server/test_faults.py: an
 * LD_PRELOAD library whose fdatasync and msync fail with EIO while the
 * file named by PMKV_FAULT_FLAG exists, and are the real ones otherwise.
 * The journal backend's commit is an fdatasync, the file backend's an
 * msync (or sync_file_range runs and an fdatasync).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static int failing(void)
{
	const char *f = getenv("PMKV_FAULT_FLAG");
	return f && access(f, F_OK) == 0;
}

int fdatasync(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	if (failing() || !real) {
		errno = EIO;
		return -1;
	}
	return real(fd);
}

int msync(void *addr, size_t len, int flags)
{
	int (*real)(void *, size_t, int) =
		(int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "msync");
	if (failing() || !real) {
		errno = EIO;
		return -1;
	}
	return real(addr, len, flags);
}
