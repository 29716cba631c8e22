/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * errors.c - status messages, names of enums, the per-thread detail
 * message, and the library version.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pmtx.h"
#include "util.h"

/* The message of status PMTX_E_e. */
#define MSG(e, text) [PMTX_E_##e - PMTX_E_FIRST] = text

static const char *const messages[] = {
	MSG(INVAL, "invalid argument"),
	MSG(TOO_SMALL, "file or size too small for a region"),
	MSG(BAD_MAGIC, "not a pmtx region (bad magic)"),
	MSG(BAD_VERSION, "unsupported region format version or features"),
	MSG(BAD_LAYOUT, "region layout name does not match"),
	MSG(BAD_CHECKSUM, "region header checksum mismatch"),
	MSG(LOCKED, "region is already open in another process"),
	MSG(NO_SPACE, "not enough free space on the file system"),
	MSG(CORRUPT, "region metadata is corrupt"),
	MSG(NOMEM, "region heap is out of memory"),
	MSG(NO_TX, "no transaction is running"),
	MSG(ABORTED, "transaction was aborted"),
	MSG(TX_STATE, "operation not allowed in the transaction's state"),
	MSG(BUSY, "all transaction descriptors are in use"),
	MSG(RANGE, "address is outside the region"),
	MSG(UNSUPPORTED, "not supported by this runtime or backend"),
	MSG(IO, "persist barrier failed (I/O error)"),
	MSG(TRUNCATED, "region file is shorter than its header records"),
	MSG(NOT_FOUND, "no such key or element"),
	MSG(EXISTS, "the key already exists"),
	MSG(TOO_BIG, "length over the documented limit"),
	MSG(NOT_CONTAINER, "offset names no container of this kind"),
};
_Static_assert(ARRAY_SIZE(messages) == PMTX_E_LAST - PMTX_E_FIRST,
               "a message for every status");

const char *pmtx_strerror(int status)
{
	if (status == 0)
		return "success";
	if (status >= PMTX_E_FIRST && status < PMTX_E_LAST)
		return messages[status - PMTX_E_FIRST];
	if (status > 0)
		return strerror(status);
	return "unknown pmtx status";
}

static _Thread_local char errmsg[256];

void pmtx__set_errmsg(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
}

const char *pmtx_errmsg(void)
{
	return errmsg;
}

void pmtx__clear_errmsg(void)
{
	errmsg[0] = 0;
}

const char *pmtx_version(int *major, int *minor, int *patch)
{
	if (major)
		*major = PMTX_VERSION_MAJOR;
	if (minor)
		*minor = PMTX_VERSION_MINOR;
	if (patch)
		*patch = PMTX_VERSION_PATCH;
	return PMTX_VERSION_STRING;
}

static const char *const domain_names[] = {"pdom0", "pdom1", "pdom2"};
static const char *const backend_names[] = {"hardware", "emulated", "file",
                                            "journal"};
static const char *const runtime_names[] = {"default", "undo", "redo",
                                            "redo-async", "cow",
                                            "auto", "twin"};

/* The index of s in names[0, n), or -1. */
static int index_of(const char *s, const char *const *names, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return (int)i;
	return -1;
}

/* pmtx_T_name and pmtx_T_parse (pmtx.h), over the table T_names. */
#define NAMED_ENUM(T)                                                         \
	const char *pmtx_##T##_name(pmtx_##T v)                               \
	{                                                                     \
		return (unsigned)v < ARRAY_SIZE(T##_names) ? T##_names[v]     \
		                                           : "?";             \
	}                                                                     \
	int pmtx_##T##_parse(const char *s, pmtx_##T *out)                    \
	{                                                                     \
		int i = index_of(s, T##_names, ARRAY_SIZE(T##_names));        \
		if (i < 0)                                                    \
			return PMTX_E_INVAL;                                  \
		*out = (pmtx_##T)i;                                           \
		return 0;                                                     \
	}

NAMED_ENUM(domain)
NAMED_ENUM(backend)
NAMED_ENUM(runtime)
