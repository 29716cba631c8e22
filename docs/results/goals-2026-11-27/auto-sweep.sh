# sweep.sh OUT SECONDS ROUNDS bench...
OUT=$1; S=$2; R=$3; shift 3
BINS="$*"
: > $OUT
for cfg in "pdom1 hardware" "pdom0 emulated" "pdom1 emulated" "pdom2 emulated"; do
 set -- $cfg; d=$1; b=$2
 for bin in $BINS; do
  tag=$(basename $bin)
  $bin sps --seconds $S --rounds $R --dir /dev/shm --domain $d --backend $b --system pmtx-undo,pmtx-redo,pmtx-redo-async,pmtx-auto --p n=100000 --p k=1,2,8,64,1024 2>/dev/null | sed "s/^{/{\"build\":\"$tag\",/" >> $OUT
  for slot in 4 64; do
  $bin array --seconds $S --rounds $R --dir /dev/shm --domain $d --backend $b --system pmtx-undo,pmtx-redo,pmtx-redo-async,pmtx-auto --p slots=100000 --p slot=$slot --p write_pct=0,10,20,30,50,70,100 2>/dev/null | sed "s/^{/{\"build\":\"$tag\",/" >> $OUT
  done
 done
done
