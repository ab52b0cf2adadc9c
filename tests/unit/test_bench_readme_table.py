"""benchmarks/readme_table.py: the README's A/B table is replaced between its markers, nothing else."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

from readme_table import END, START, replace_table  # noqa: E402


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
