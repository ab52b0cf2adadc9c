# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/sharing_planner/solver.py's lexicographic solve on programs small enough to solve by hand (the answers are
worked out in each test's docstring): each of its three ways to prove a level (the relaxation's bound met by the repair,
the program itself when the repair falls short), the levels kept in order, and a level the time limit stops."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.solver import (
    MAXIMIZE,
    MINIMIZE,
    IntegerProgram,
    Objective,
    solve_lexicographic,
)


def solve_choice_and_two_counts(rows, cost_of_the_choice, start):
    """Maximise g1 + g2 - cost x c over c in {0, 1} and g1, g2 relaxed in 0..10, under ``rows`` ([({name: coefficient},
    lower or None, upper)]); the solution, asserted proven."""
    program = IntegerProgram()
    variables = dict(
        c=program.variable("c", upper=1),
        g1=program.variable("g1", upper=10, relaxed=True),
        g2=program.variable("g2", upper=10, relaxed=True),
    )
    for terms, lower, upper in rows:
        bounds = dict(upper=upper) if lower is None else dict(lower=lower, upper=upper)
        program.row(dict((variables[name], coefficient) for name, coefficient in terms.items()), **bounds)
    objective = {variables["g1"]: 1, variables["g2"]: 1, variables["c"]: -cost_of_the_choice}
    solution = solve_lexicographic(program, [Objective("value", MAXIMIZE, objective)], start, 10.0)
    assert solution.exact
    return solution


def test_the_repair_meets_the_relaxations_bound():
    """Maximise g with 2g <= 3 + c, c in {0, 1}, g relaxed: the relaxation gives g = 2 with c = 1 (bound 2); fixed at
    c = 1, the program reaches g = 2."""
    program = IntegerProgram()
    choice = program.variable("c", upper=1)
    count = program.variable("g", upper=10, relaxed=True)
    program.row({count: 2, choice: -1}, upper=3)
    solution = solve_lexicographic(program, [Objective("g", MAXIMIZE, {count: 1})], [0, 0], 10.0)
    assert solution.exact
    assert solution.values == [1.0, 2.0]
    assert solution.levels[0].value == solution.levels[0].bound == 2


def test_when_the_repair_falls_short_the_program_itself_is_solved_and_proven():
    """Maximise g1 + g2 - 3c with 2 g1 - 2 g2 = 1 - c and g1 + g2 <= 4 (g1, g2 relaxed): the relaxation takes c = 0
    (g1 - g2 = 0.5, value 4), which no integer g1, g2 meet, so the repair finds nothing; the program itself takes c = 1,
    g1 = g2 = 2: value 1, proven by HiGHS (the relaxation's 4 is only a bound)."""
    rows = [({"g1": 2, "g2": -2, "c": 1}, 1, 1), ({"g1": 1, "g2": 1}, None, 4)]
    solution = solve_choice_and_two_counts(rows, cost_of_the_choice=3, start=[1, 0, 0])
    assert solution.values[0] == 1.0 and solution.values[1] + solution.values[2] == 4.0
    assert solution.levels[0].value == solution.levels[0].bound == 1


def test_a_repair_short_of_the_bound_proves_nothing():
    """Maximise g1 + g2 - c with 2 g1 <= 3 + 8c, 10 g2 <= 19 + 80c, g1 + g2 <= 4 (g1, g2 relaxed): the relaxation takes
    c = 0 (1.5 + 1.9 = 3.4, bound 3); fixed at c = 0 the integers reach only 1 + 1 = 2, which must not be taken for the
    best: c = 1 with g1 + g2 = 4 gives 3, the bound, proven."""
    rows = [({"g1": 2, "c": -8}, None, 3), ({"g2": 10, "c": -80}, None, 19), ({"g1": 1, "g2": 1}, None, 4)]
    solution = solve_choice_and_two_counts(rows, cost_of_the_choice=1, start=[0, 0, 0])
    assert solution.values[0] == 1.0 and solution.values[1] + solution.values[2] == 4.0
    assert solution.levels[0].value == solution.levels[0].bound == 3


def test_a_later_level_never_trades_an_earlier_one():
    """Maximise a + b with a + b <= 5, then minimise a: the second level keeps a + b = 5 and takes a = 0, b = 5 (with
    weights too small, a = 0, b = 0 would win)."""
    program = IntegerProgram()
    first = program.variable("a", upper=5, relaxed=True)
    second = program.variable("b", upper=5)
    program.row({first: 1, second: 1}, upper=5)
    objectives = [Objective("sum", MAXIMIZE, {first: 1, second: 1}), Objective("a", MINIMIZE, {first: 1})]
    solution = solve_lexicographic(program, objectives, [0, 0], 10.0)
    assert solution.exact
    assert solution.values == [0.0, 5.0]
    assert [level.value for level in solution.levels] == [5, 0]


def test_a_level_past_the_time_limit_is_not_proven_and_keeps_the_start():
    program = IntegerProgram()
    count = program.variable("g", upper=10, relaxed=True)
    solution = solve_lexicographic(program, [Objective("g", MAXIMIZE, {count: 1})], [3], 0.0)
    assert not solution.exact
    assert solution.values == [3.0]
    assert solution.levels[0].value == 3 and solution.levels[0].bound is None
