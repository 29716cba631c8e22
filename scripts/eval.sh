#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The evaluation, end to end: install the packages (scripts/setup.sh),
# build (scripts/build.sh build), run every workload and write the report.
#
#   scripts/eval.sh [--smoke|--quick|--full] [scripts/eval.py options...]
#
# Results go to results/<timestamp>/ (results.jsonl, report.md, *.png),
# and results/latest points at the newest run. See scripts/eval.py.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# SQLite's source (Debian's source package) for psq-speedtest1; without
# it the sqlite stage runs TPC-C only, and says so in its results.
sqlsrc=$(apps/sqlite/tools/sqlite_src.sh --quiet) || {
	echo "eval: no SQLite source: speedtest1 is left out" >&2
	sqlsrc=""
}
echo "== build" >&2
scripts/build.sh build -DPSQ_SQLITE_SRC="$sqlsrc"
# Debian's python3 has the apt packages (matplotlib); a python3 earlier
# in PATH (pyenv, a venv) may not.
py=python3
if ! python3 -c 'import matplotlib' 2>/dev/null && [ -x /usr/bin/python3 ]; then
	py=/usr/bin/python3
fi
exec "$py" scripts/eval.py --bench build/bench/pmtx-bench "$@"
