"""benchmarks/readme_table.py: a benchmark's table is replaced between its markers, nothing else; the tables live in
docs/BENCHMARKS.md, where run.sh and bench_planner.py write them, and no longer in README.md (issue 38)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

from readme_table import DOC, END, START, replace_table  # noqa: E402

REPO = os.path.join(os.path.dirname(__file__), "..", "..")


def test_the_table_between_the_markers_is_replaced_and_the_rest_kept():
    readme = "# Title\n\n%s\nold table\n%s\n\n## After\n" % (START, END)
    text = replace_table(readme, "### A/B\n\n| a | b |\n", "2026-11-23 18:00 UTC, 2 CPUs")
    assert text == (
        "# Title\n\n%s\nMeasured 2026-11-23 18:00 UTC, 2 CPUs.\n\n#### A/B\n\n| a | b |\n%s\n\n## After\n"
        % (START, END)
    )
    assert replace_table(text, "### A/B\n\n| a | b |\n", "2026-11-23 18:00 UTC, 2 CPUs") == text


def test_a_readme_without_the_markers_is_an_error():
    with pytest.raises(SystemExit, match="bench:ab:start"):
        replace_table("# Title\n", "| a |\n", "now")


def test_another_sections_table_is_replaced_between_its_own_markers():
    readme = "%s\nab\n%s\n<!-- bench:eda:start -->\nold\n<!-- bench:eda:end -->\n" % (START, END)
    text = replace_table(readme, "### Autopilot\n\n| a |\n", "now", "bench:eda")
    assert (
        text
        == "%s\nab\n%s\n<!-- bench:eda:start -->\nMeasured now.\n\n#### Autopilot\n\n| a |\n<!-- bench:eda:end -->\n"
        % (
            START,
            END,
        )
    )


def read(path):
    with open(os.path.join(REPO, path)) as stream:
        return stream.read()


def test_the_benchmark_doc_holds_every_tables_markers_and_the_readme_none():
    """Each table's markers once in DOC, in order, and the writers aimed at DOC; README.md (Galaxy's page) has none."""
    markers = [
        "<!-- %s:%s -->" % (section, end)
        for section in ("bench:ab", "bench:eda", "planner-bench")
        for end in ("start", "end")
    ]
    doc, readme = read(DOC), read("README.md")
    assert [doc.count(marker) for marker in markers] == [1] * len(markers)
    assert [doc.index(marker) for marker in markers] == sorted(doc.index(marker) for marker in markers)
    assert [marker for marker in markers if marker in readme] == []
    assert read("benchmarks/run.sh").count("benchmarks/readme_table.py %s " % DOC) == 2
    assert 'DOC = "%s"' % DOC in read("benchmarks/bench_planner.py")
    assert "benchmarks/bench_planner.py --doc" in read("Makefile")
