/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_zset.c - pmkv's zset commands (cmd.h).
 */
#include "cmd.h"

const struct command pmkv_cmds_zset[] = {
	{NULL, 0, NULL, NULL, 0, 0, 0, 0},
};
