# no-back-barrier.sh: A=<pmtx-bench as built> B=<pmtx-bench built with the patch> sh no-back-barrier.sh
# (the tag of each line is the basename of its binary: bench-o2 and bench-hack here)
for r in 1 2; do for b in $A $B; do t=$(basename $b)
$b array --seconds 0.5 --rounds 3 --dir /dev/shm --domain pdom1 --backend hardware --system pmtx-twin,pmdk --p slots=100000 --p slot=4 --p write_pct=10,20 2>/dev/null | sed "s/^{/{\"build\":\"$t\",/"
$b hashmap --seconds 0.5 --rounds 3 --dir /dev/shm --domain pdom1 --backend hardware --system pmtx-twin,pmdk --p entry=128 2>/dev/null | sed "s/^{/{\"build\":\"$t\",/"
$b sps --seconds 0.5 --rounds 3 --dir /dev/shm --domain pdom1 --backend hardware --system pmtx-twin,pmdk --p n=100000 --p k=1,8 2>/dev/null | sed "s/^{/{\"build\":\"$t\",/"
$b alloc --seconds 0.5 --rounds 3 --dir /dev/shm --domain pdom1 --backend hardware --system pmtx-twin,pmdk --p x=1 2>/dev/null | sed "s/^{/{\"build\":\"$t\",/"
done; done
