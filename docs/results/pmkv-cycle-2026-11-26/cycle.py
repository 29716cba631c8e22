#!/usr/bin/python3
"""cycle.py FILE: the parts of each event-loop cycle in a sysclock.c
list (from one fdatasync to the next), and their medians."""
import statistics
import sys

rows = []
for line in open(sys.argv[1]):
    if not line.startswith("#"):
        k, a, r, s, d = line.split()
        rows.append((k, float(s), float(d)))
syncs = [i for i, x in enumerate(rows) if x[0] == "S"]
parts = {"cycle": [], "fdatasync": [], "replies": [], "first write": [],
         "waiting for requests": [], "running them": [], "pwrite": []}
for i, j in zip(syncs, syncs[1:]):
    seg = rows[i:j]
    ws = [x for x in seg if x[0] == "W"]
    rs = [x for x in seg if x[0] == "R"]
    ps = [x for x in seg if x[0] == "P"]
    if not (ws and rs and ps):
        continue
    s_end = seg[0][1] + seg[0][2]
    w_end = ws[-1][1] + ws[-1][2]
    r_end = rs[-1][1] + rs[-1][2]
    parts["cycle"].append(rows[j][1] - seg[0][1])
    parts["fdatasync"].append(seg[0][2])
    parts["replies"].append(w_end - s_end)
    parts["first write"].append(ws[0][2])
    parts["waiting for requests"].append(r_end - w_end)
    parts["running them"].append(ps[0][1] - r_end)
    parts["pwrite"].append(ps[0][2])
print(f"{len(parts['cycle'])} cycles; medians, us:")
for k, v in parts.items():
    print(f"  {k:22s} {statistics.median(v):6.1f}  (range {min(v):.1f}-{max(v):.1f})")
