#!/usr/bin/env python3
"""Put the latest table of a benchmark into README.md, between its markers: bench_ab.py's ab.md between the
bench:ab markers (the default), bench_eda.py's eda.md between the bench:eda ones.

benchmarks/readme_table.py README.md benchmarks/results/ab.md "<date, commit, machine>" [bench:ab|bench:eda]
"""

import sys

SECTION = "bench:ab"
START = "<!-- %s:start -->" % SECTION
END = "<!-- %s:end -->" % SECTION


def replace_table(readme, table, machine, section=SECTION):
    """``readme`` with the text between the ``section`` markers replaced by the machine line and ``table``."""
    start_marker, end_marker = "<!-- %s:start -->" % section, "<!-- %s:end -->" % section
    before, start, rest = readme.partition(start_marker)
    _old, end, after = rest.partition(end_marker)
    if not start or not end:
        raise SystemExit("README.md has no %s ... %s section" % (start_marker, end_marker))
    return "%s%s\nMeasured %s.\n\n%s%s%s" % (
        before,
        start_marker,
        machine,
        table.replace("### ", "#### ", 1),
        end_marker,
        after,
    )


def main(argv=None):
    arguments = argv or sys.argv[1:]
    readme_path, table_path, machine = arguments[:3]
    section = arguments[3] if len(arguments) > 3 else SECTION
    with open(readme_path) as readme, open(table_path) as table:
        text = replace_table(readme.read(), table.read(), machine, section)
    with open(readme_path, "w") as readme:
        readme.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
