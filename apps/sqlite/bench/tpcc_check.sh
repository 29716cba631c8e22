#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tpcc_check.sh PSQ_TPCC - the ctest sqlite_tpcc_check.
#
# A tiny TPC-C (scale 0.02, 2 warehouses) is loaded, run for 2,000
# transactions and checked (psq-tpcc --check: consistency conditions 1-10
# and 12 of clause 3.3.2) on the pmtx VFS (redo, PDOM-1), on SQLite's
# default VFS, and on the pmtx VFS again from a copy of a template
# (--from). Then the check is shown to catch what it checks: each of 11
# deliberate corruptions of a copy of the template must make --check
# fail, naming the condition it breaks. Everything lives in a fresh
# directory under /dev/shm, removed at the end.
set -eu
bin=$1
dir=$(mktemp -d /dev/shm/psq-tpcc-check.XXXXXX)
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM
size="--warehouses 2 --scale 0.02"
run="--max-tx 2000 --seconds 60 --check"
pmtx="vfs=pmtx&runtime=redo&domain=pdom1"

"$bin" --db "file:$dir/pmtx.db?$pmtx" $size $run --seed 1 --label check-pmtx
"$bin" --db "$dir/plain.db" $size $run --seed 2 --label check-default
"$bin" --db "$dir/template.db" $size --load-only --check --label template
"$bin" --db "file:$dir/copy.db?$pmtx" --from "$dir/template.db" $run \
       --seed 3 --label check-pmtx-from

# "condition: SQL that breaks it" (the scale-0.02 load has orders 1-60 per
# district, 43-60 undelivered).
breaks() {
	cat <<'SQL'
1: UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 1
2: UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 2
3: DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 3 AND no_o_id = 50
4: DELETE FROM order_line WHERE ol_w_id = 2 AND ol_d_id = 1 AND ol_o_id = 1 AND ol_number = 1
5: UPDATE orders SET o_carrier_id = 1 WHERE o_w_id = 1 AND o_d_id = 1 AND o_id = 60
6: UPDATE orders SET o_ol_cnt = o_ol_cnt + 1 WHERE o_w_id = 1 AND o_d_id = 4 AND o_id = 1
7: UPDATE order_line SET ol_delivery_d = NULL WHERE ol_w_id = 1 AND ol_d_id = 1 AND ol_o_id = 1
8: UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 2
9: UPDATE history SET h_amount = h_amount + 1 WHERE rowid = 1
10: UPDATE customer SET c_balance = c_balance + 1 WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 1
12: UPDATE customer SET c_ytd_payment = c_ytd_payment + 1 WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 1
SQL
}
breaks | while IFS= read -r line; do
	n=${line%%:*}
	cp "$dir/template.db" "$dir/broken.db"
	/usr/bin/python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute(sys.argv[2])
assert c.total_changes >= 1, "the corruption changed no row"
c.commit()' "$dir/broken.db" "${line#*: }"
	if "$bin" --db "$dir/broken.db" --max-tx 0 --check >/dev/null \
	        2>"$dir/err"; then
		echo "tpcc_check: --check missed a break of condition $n" >&2
		exit 1
	fi
	if ! grep -q "condition $n " "$dir/err"; then
		echo "tpcc_check: condition $n not named:" >&2
		cat "$dir/err" >&2
		exit 1
	fi
	echo "tpcc_check: --check caught a break of condition $n"
done
