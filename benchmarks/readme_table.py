#!/usr/bin/env python3
"""Put the latest A/B table (bench_ab.py's ab.md) into README.md, between its bench markers.

benchmarks/readme_table.py README.md benchmarks/results/ab.md "<date, commit, machine>"
"""

import sys

START = "<!-- bench:ab:start -->"
END = "<!-- bench:ab:end -->"


def replace_table(readme, table, machine):
    """``readme`` with the text between the markers replaced by the machine line and ``table``."""
    before, start, rest = readme.partition(START)
    _old, end, after = rest.partition(END)
    if not start or not end:
        raise SystemExit("README.md has no %s ... %s section" % (START, END))
    return "%s%s\nMeasured %s.\n\n%s%s%s" % (before, START, machine, table.replace("### ", "#### ", 1), END, after)


def main(argv=None):
    readme_path, table_path, machine = (argv or sys.argv[1:])[:3]
    with open(readme_path) as readme, open(table_path) as table:
        text = replace_table(readme.read(), table.read(), machine)
    with open(readme_path, "w") as readme:
        readme.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
