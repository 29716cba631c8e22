#!/bin/sh
# run.sh PMTX WORKLOAD[=IMAGES]... [process-crash]
# The long mode of the containers' explorer workloads, as the CTests
# crashtest_long_cont_* and crashtest_long_cont_process_crash run them:
# every runtime, PDOM-1, 24 transactions, IMAGES images per crash point
# (20,000 unless given), depth-2 crashes, and at least 1,000,000 images.
pmtx=$1; shift
for arg in "$@"; do
	w=${arg%%=*} images=20000
	[ "$w" != "$arg" ] && images=${arg#*=}
	echo "== $arg $(date -u +%FT%TZ)"
	if [ "$w" = process-crash ]; then
		/usr/bin/time -f "elapsed %e s" "$pmtx" crashtest --containers \
			--domain pdom1 --ntx 24 --images 1000 --process-crash \
			--reopen --no-progress
	else
		/usr/bin/time -f "elapsed %e s" "$pmtx" crashtest --workload "$w" \
			--domain pdom1 --ntx 24 --images "$images" --depth2 4 \
			--d2images 256 --min-images 1000000 --no-progress
	fi
	echo "rc=$?"
done
