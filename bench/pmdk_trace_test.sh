#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# pmdk_trace_holds_every_counted_flush_barrier_and_transaction:
# a PMDK run of pmtx-bench traced with PMTX_PMDK_TRACE (bench/pmdk_trace.c)
# writes a trace that `pmtx trace analyze` reads, and the trace holds what
# the bench counts of PMDK:
#  - its BARRIER records are the bench's counted drains, one for one;
#  - its FLUSH lines plus its NT lines plus the lines dropped outside any
#    pool (the summary says how many) are the bench's counted flushes;
#  - every transaction is committed and complete (BEGIN inferred, COMMIT
#    at the outermost pmemobj_tx_end), and a pool's REGION record comes
#    before its other records;
#  - in the last measured round, transactions x the bench's JSON
#    flushes_per_op and barriers_per_op give the lines and drains the
#    tracer saw in that round: the COMMIT count is the bench's op count.
# Usage: pmdk_trace_test.sh PMTX_BENCH PMTX_TOOL
set -u
bench=$1
pmtx=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/pmdk_trace.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
trace=$work/sps.trace

fail() {
	echo "FAIL: $*"
	exit 1
}

PMTX_PMDK_TRACE=$trace "$bench" sps --system pmdk --p k=8 --seconds 0.05 \
	--rounds 1 --dir "$work" >"$work/out" 2>"$work/err" ||
	fail "pmtx-bench: $(cat "$work/err")"
json=$(grep '"system":"pmdk"' "$work/out") || fail "no pmdk line"
sum=$(grep '^pmdk-trace: ' "$work/err") || fail "no summary on stderr"
"$pmtx" trace analyze --json "$trace" >"$work/an" ||
	fail "trace analyze failed"
an=$(cat "$work/an")

# A number field of a JSON line; a key=value of the summary.
jnum() { echo "$2" | sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p"; }
kv() { echo "$sum" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

eq() { [ "$2" = "$3" ] || fail "$1: $2 != $3"; }
eq "committed transactions" "$(jnum tx_committed "$an")" "$(kv committed)"
eq "aborted transactions" "$(jnum tx_aborted "$an")" 0
eq "unfinished transactions" "$(jnum tx_unfinished "$an")" 0
[ "$(kv committed)" -gt 0 ] || fail "no transaction traced"
eq "barriers" "$(jnum barriers "$an")" "$(kv counted_barriers)"
eq "flushed lines" "$(jnum flushed_lines "$an")" "$(kv flush_lines)"
eq "records" "$(jnum records "$an")" "$(kv records)"

# The HOPS model reads it too; every drain is of unknown kind.
hops=$("$pmtx" trace hops --json "$trace") || fail "trace hops failed"
eq "hops records" "$(jnum records "$hops")" "$(kv records)"
eq "hops unknown barriers" "$(jnum unknown "$hops")" "$(kv counted_barriers)"

# From the records themselves: NT lines, and REGION before use.
"$pmtx" trace dump "$trace" >"$work/dump" || fail "trace dump failed"
nt=$(awk '
function hex(s,  i, v) {
	v = 0
	for (i = 3; i <= length(s); i++)
		v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
	return v
}
{
	for (i = 4; i <= NF; i++) {
		split($i, kv, "=")
		f[kv[1]] = kv[2]
	}
}
$3 == "REGION" { seen[f["region"]] = 1 }
($3 == "STORE" || $3 == "FLUSH" || $3 == "NT") && !(f["region"] in seen) {
	print "record before its REGION: " $0 > "/dev/stderr"
	bad = 1
}
$3 == "NT" {
	o = hex(f["off"])
	n += int((o + f["size"] - 1) / 64) - int(o / 64) + 1
}
END { if (bad) exit 1; print n + 0 }' "$work/dump") || fail "REGION order"
eq "NT lines" "$nt" "$(kv nt_lines)"
eq "every counted line" \
	$(($(kv flush_lines) + nt + $(kv dropped_lines))) "$(kv counted_flushes)"

# The measured round against the bench's own per-op figures (printed with
# 4 decimals): one transaction more or less would move them by ~1/ops.
per_op() {
	awk -v a="$2" -v n="$3" -v want="$4" 'BEGIN {
		d = a / n - want; if (d < 0) d = -d; exit !(d < 0.00006) }' ||
		fail "$1: $2 / $3 transactions != $4 per op"
}
wtx=$(kv window_tx)
[ "$wtx" -gt 0 ] || fail "no transaction in the measured round"
per_op "flushes" "$(kv window_lines)" "$wtx" "$(jnum flushes_per_op "$json")"
per_op "barriers" "$(kv window_barriers)" "$wtx" \
	"$(jnum barriers_per_op "$json")"

# Unset, nothing is traced.
env -u PMTX_PMDK_TRACE "$bench" sps --system pmdk --p k=8 --seconds 0.01 \
	--rounds 1 --dir "$work" >/dev/null 2>"$work/err" || fail "untraced run"
! grep -q pmdk-trace "$work/err" || fail "traced with PMTX_PMDK_TRACE unset"
echo "ok: $(kv committed) transactions, $(jnum flushed_lines "$an") flushed" \
	"lines, $nt NT lines, $(jnum barriers "$an") barriers"
