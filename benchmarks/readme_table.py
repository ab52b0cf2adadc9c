#!/usr/bin/env python3
"""Put the latest table of a benchmark into docs/BENCHMARKS.md (DOC), between its markers: bench_ab.py's ab.md
between the bench:ab markers (the default), bench_eda.py's eda.md between the bench:eda ones. The tables lived in
README.md until issue 38 made the README the users' page Galaxy shows.

benchmarks/readme_table.py docs/BENCHMARKS.md benchmarks/results/ab.md "<date, commit, machine>" [bench:ab|bench:eda]
"""

import sys

# Relative to the repository: the file whose tables run.sh and bench_planner.py rewrite.
DOC = "docs/BENCHMARKS.md"
SECTION = "bench:ab"
START = "<!-- %s:start -->" % SECTION
END = "<!-- %s:end -->" % SECTION


def replace_table(text, table, machine, section=SECTION):
    """``text`` with what lies between the ``section`` markers replaced by the machine line and ``table``."""
    start_marker, end_marker = "<!-- %s:start -->" % section, "<!-- %s:end -->" % section
    before, start, rest = text.partition(start_marker)
    _old, end, after = rest.partition(end_marker)
    if not start or not end:
        raise SystemExit("%s has no %s ... %s section" % (DOC, start_marker, end_marker))
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
    doc_path, table_path, machine = arguments[:3]
    section = arguments[3] if len(arguments) > 3 else SECTION
    with open(doc_path) as doc, open(table_path) as table:
        text = replace_table(doc.read(), table.read(), machine, section)
    with open(doc_path, "w") as doc:
        doc.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
