"""The long-mode table of README's Reliability section from run-long.sh's
log: per workload the totals line and the wall time.
usage: python3 table.py long.log"""
import re
import sys

rows, tot = [], [0, 0, 0, 0, 0.0]
work, runs = None, [0, 0, 0, 0]
for line in open(sys.argv[1]):
    m = re.match(r"total: \d+ runs?, crash points (\d+), images (\d+) "
                 r"\(\+(\d+) in recovery\), \d+ images/s, violations (\d+)",
                 line)
    if m:
        work = [int(x) for x in m.groups()]
    m = re.match(r"\w+ +[\w-]+ +pdom\d: crash points (\d+)/\d+, images "
                 r"(\d+) \(\+(\d+) in recovery.*violations (\d+)", line)
    if m:  # one runtime's line; a workload of one run prints no total
        runs = [a + int(b) for a, b in zip(runs, m.groups())]
    m = re.match(r"(\w+) wall ([\d.]+) s", line)
    if m and not work:
        work = runs
    if m and work:
        rows.append((m.group(1), *work, float(m.group(2))))
        tot = [a + b for a, b in zip(tot, work + [float(m.group(2))])]
        work, runs = None, [0, 0, 0, 0]
print("| workload | crash points | images | images crashed in recovery "
      "| violations | wall |")
print("|---|---|---|---|---|---|")
for w, cp, im, rec, v, wall in rows:
    print(f"| {w} | {cp:,} | {im:,} | {rec:,} | {v} | {wall:.0f} s |")
print(f"| **total** | **{tot[0]:,}** | **{tot[1]:,}** | **{tot[2]:,}** "
      f"| **{tot[3]}** | **{tot[4] / 60:.0f} min** |")
