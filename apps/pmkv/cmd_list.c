/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_list.c - pmkv's list commands (cmd.h).
 */
#include "cmd.h"

const struct command pmkv_cmds_list[] = {
	{NULL, 0, NULL, NULL, 0, 0, 0, 0},
};
