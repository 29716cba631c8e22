/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_hash.c - pmkv's hash commands (cmd.h).
 */
#include "cmd.h"

const struct command pmkv_cmds_hash[] = {
	{NULL, 0, NULL, NULL, 0, 0, 0, 0},
};
