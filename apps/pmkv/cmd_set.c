/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_set.c - pmkv's set commands (cmd.h).
 */
#include "cmd.h"

const struct command pmkv_cmds_set[] = {
	{NULL, 0, NULL, NULL, 0, 0, 0, 0},
};
