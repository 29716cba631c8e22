/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replay.c - run fuzz_region's checks on files, without libFuzzer:
 *
 *   fuzz_replay FILE|DIR...
 *
 * Each file (each file of a directory; NAME.gz is decompressed with
 * `gzip -dc`) is one input of LLVMFuzzerTestOneInput, built here with the
 * ordinary compiler, so the reproducers of the bugs the fuzzer found run
 * in the default test suite and under ASan + UBSan. An input that breaks
 * a check aborts, as under the fuzzer; the exit status is 0 when every
 * input passed, 1 when a file could not be read.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The whole of a stream; NULL on error. */
static uint8_t *slurp(FILE *f, size_t *len)
{
	size_t cap = 1 << 20, n = 0, k;
	uint8_t *buf = malloc(cap);
	while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
		n += k;
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	*len = n;
	return buf;
}

static int replay_file(const char *path)
{
	size_t len = strlen(path), size;
	int gz = len > 3 && strcmp(path + len - 3, ".gz") == 0;
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "gzip -dc -- '%s'", path);
	FILE *f = gz ? popen(cmd, "r") : fopen(path, "rb");
	uint8_t *data = f ? slurp(f, &size) : NULL;
	int bad = !f || (gz ? pclose(f) != 0 : fclose(f) != 0) || !data;
	if (bad) {
		fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
		free(data);
		return 1;
	}
	LLVMFuzzerTestOneInput(data, size);
	printf("%s: passes\n", path);
	free(data);
	return 0;
}

static int replay_dir(const char *dir)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, alphasort), rc = n < 0;
	for (int i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		struct stat st;
		if (ents[i]->d_name[0] != '.' && stat(path, &st) == 0 &&
		    S_ISREG(st.st_mode))
			rc |= replay_file(path);
		free(ents[i]);
	}
	free(ents);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;
	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			rc |= replay_dir(argv[i]);
		else
			rc |= replay_file(argv[i]);
	}
	return rc;
}
