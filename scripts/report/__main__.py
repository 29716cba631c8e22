# SPDX-License-Identifier: BSD-3-Clause
"""The report's command line (usage: the package's docstring):

    python3 scripts/report results/<run>

writes results/<run>/report.md and its plots and prints report.md's path.
"""
import os
import sys

# Run as a directory or a file, this module is not inside its package:
# the package is found beside it.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import report  # noqa: E402


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        sys.stderr.write(report.__doc__)
        return 2
    report.ensure_matplotlib()
    print(report.make_report(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
