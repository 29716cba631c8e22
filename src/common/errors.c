/*
 * errors.c - status messages, names of enums, the per-thread detail
 * message, and the library version.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pmtx.h"
#include "util.h"

static const char *const messages[] = {
	[PMTX_E_INVAL - PMTX_E_FIRST] = "invalid argument",
	[PMTX_E_TOO_SMALL - PMTX_E_FIRST] = "file or size too small for a region",
	[PMTX_E_BAD_MAGIC - PMTX_E_FIRST] = "not a pmtx region (bad magic)",
	[PMTX_E_BAD_VERSION - PMTX_E_FIRST] =
		"unsupported region format version or features",
	[PMTX_E_BAD_LAYOUT - PMTX_E_FIRST] = "region layout name does not match",
	[PMTX_E_BAD_CHECKSUM - PMTX_E_FIRST] = "region header checksum mismatch",
	[PMTX_E_LOCKED - PMTX_E_FIRST] =
		"region is already open in another process",
	[PMTX_E_NO_SPACE - PMTX_E_FIRST] =
		"not enough free space on the file system",
	[PMTX_E_CORRUPT - PMTX_E_FIRST] = "region metadata is corrupt",
	[PMTX_E_NOMEM - PMTX_E_FIRST] = "region heap is out of memory",
	[PMTX_E_NO_TX - PMTX_E_FIRST] = "no transaction is running",
	[PMTX_E_ABORTED - PMTX_E_FIRST] = "transaction was aborted",
	[PMTX_E_TX_STATE - PMTX_E_FIRST] =
		"operation not allowed in the transaction's state",
	[PMTX_E_BUSY - PMTX_E_FIRST] = "all transaction descriptors are in use",
	[PMTX_E_RANGE - PMTX_E_FIRST] = "address is outside the region",
	[PMTX_E_UNSUPPORTED - PMTX_E_FIRST] =
		"not supported by this runtime or backend",
	[PMTX_E_IO - PMTX_E_FIRST] = "persist barrier failed (I/O error)",
	[PMTX_E_TRUNCATED - PMTX_E_FIRST] =
		"region file is shorter than its header records",
	[PMTX_E_NOT_FOUND - PMTX_E_FIRST] = "no such key or element",
	[PMTX_E_EXISTS - PMTX_E_FIRST] = "the key already exists",
	[PMTX_E_TOO_BIG - PMTX_E_FIRST] = "length over the documented limit",
	[PMTX_E_NOT_CONTAINER - PMTX_E_FIRST] =
		"offset names no container of this kind",
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

const char *pmtx_domain_name(pmtx_domain d)
{
	return (unsigned)d < ARRAY_SIZE(domain_names) ? domain_names[d] : "?";
}

const char *pmtx_backend_name(pmtx_backend b)
{
	return (unsigned)b < ARRAY_SIZE(backend_names) ? backend_names[b] : "?";
}

const char *pmtx_runtime_name(pmtx_runtime rt)
{
	return (unsigned)rt < ARRAY_SIZE(runtime_names) ? runtime_names[rt]
	                                                : "?";
}

static int parse(const char *s, const char *const *names, unsigned n,
                 unsigned *out)
{
	for (unsigned i = 0; s && i < n; i++)
		if (strcmp(s, names[i]) == 0) {
			*out = i;
			return 0;
		}
	return PMTX_E_INVAL;
}

int pmtx_domain_parse(const char *s, pmtx_domain *out)
{
	unsigned v;
	int rc = parse(s, domain_names, ARRAY_SIZE(domain_names), &v);
	if (!rc)
		*out = (pmtx_domain)v;
	return rc;
}

int pmtx_backend_parse(const char *s, pmtx_backend *out)
{
	unsigned v;
	int rc = parse(s, backend_names, ARRAY_SIZE(backend_names), &v);
	if (!rc)
		*out = (pmtx_backend)v;
	return rc;
}

int pmtx_runtime_parse(const char *s, pmtx_runtime *out)
{
	unsigned v;
	int rc = parse(s, runtime_names, ARRAY_SIZE(runtime_names), &v);
	if (!rc)
		*out = (pmtx_runtime)v;
	return rc;
}
