# SPDX-License-Identifier: BSD-3-Clause
"""Files the test suite leaves behind (CTest fixture pmtx_leftovers).

    leftovers.py snapshot LIST         before any test: note what is there
    leftovers.py check LIST BUILD_DIR  after every test: fail on what is new

Looked at: the entries of /dev/shm, /tmp and /var/tmp whose names start
with pmtx- or end with .pmtx, .pmtxj or .creating (regions, journals,
half-made regions), and the directories whose names start with psq-,
pmcached- or pmkv- (those the applications' tests and servers make). An entry that was there before the suite
ran is not the suite's. Nor is one that a live process outside BUILD_DIR
holds (its pid in the name, an open file, a mapping or its working
directory under it): on a shared machine, another tree's tests may be
running. Every other new entry is reported by name, and the check fails.

pytest's own directories (/tmp/pytest-of-<user>) are not looked at:
pytest keeps the last three runs' tmp_path directories there and removes
older ones itself.
"""
import os
import re
import sys

DIRS = ("/dev/shm", "/tmp", "/var/tmp")
NAME = re.compile(r"^pmtx-|\.(pmtx|pmtxj|creating)$")
DIR_NAME = re.compile(r"^(psq|pmcached|pmkv)-")
PID = re.compile(r"-(\d+)(?=[-.]|$)")


def entries():
    found = set()
    for d in DIRS:
        try:
            names = os.listdir(d)
        except OSError:
            continue
        found.update(os.path.join(d, n) for n in names
                     if NAME.search(n) or (DIR_NAME.search(n) and
                                           os.path.isdir(os.path.join(d, n))))
    return found


def foreign_processes(build):
    """pid -> the paths it holds, for every live process that is not run
    from the build tree."""
    build = os.path.realpath(build) + "/"
    held = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        base = "/proc/" + pid
        try:
            with open(base + "/cmdline", "rb") as f:
                cmd = f.read().decode(errors="replace")
            exe = os.readlink(base + "/exe")
        except OSError:
            continue
        if build in cmd.replace("\0", " ") + " " + exe + "/":
            continue
        paths = set()
        try:
            paths.add(os.readlink(base + "/cwd"))
            for fd in os.listdir(base + "/fd"):
                paths.add(os.readlink(base + "/fd/" + fd))
            with open(base + "/maps") as f:
                paths.update(line.split(None, 5)[5].strip()
                             for line in f if len(line.split(None, 5)) == 6)
        except OSError:
            pass
        held[int(pid)] = paths
    return held


def held_by_another(path, held):
    for pid in map(int, PID.findall(os.path.basename(path))):
        if pid in held:
            return True
    return any(p == path or p.startswith(path + "/")
               for paths in held.values() for p in paths)


def main(argv):
    if len(argv) == 3 and argv[1] == "snapshot":
        with open(argv[2], "w") as f:
            f.writelines(p + "\n" for p in sorted(entries()))
        return 0
    if len(argv) != 4 or argv[1] != "check":
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[2]) as f:
        before = set(f.read().split("\n"))
    new = sorted(entries() - before)
    held = foreign_processes(argv[3]) if new else {}
    left = [p for p in new if not held_by_another(p, held)]
    for p in new:
        if p not in left:
            print("not this suite's (held by another process): " + p)
    for p in left:
        print("left behind: " + p)
    print("%d files left behind" % len(left))
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
