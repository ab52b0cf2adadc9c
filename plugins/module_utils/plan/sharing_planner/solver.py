# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A mixed-integer program solved lexicographically by HiGHS (through ``highspy``), with the proof of what it found.

Pure computation, no I/O: ``IntegerProgram`` holds the variables and rows; ``solve_lexicographic`` optimises a list of
objectives one after the other, each solve fixing the value the previous ones reached (a row), so that the first
objective is never traded for the second (no weights, so no weight can be too small).

Each level takes up to three HiGHS solves. The objectives are integers on integer solutions, so a bound within less
than one of a value proves it:

1. the bound: the program with its ``relaxed`` variables continuous. It is a relaxation, so its dual bound bounds the
   level;
2. the repair: the program itself with its decisions (the integer variables neither ``relaxed`` nor ``derived``) fixed
   where the bound's solution put them, and the objective held to the bound by a row. A solution of the repair that
   reaches the bound is the best there is: the level is proven;
3. when the repair reaches less: the program itself, from the best solution so far, with the bound kept as a row (it is
   valid), proven when HiGHS's dual bound is within less than one of the value found.

Why three: in the planner's programs, the relaxed variables (how many GPUs take each MIG layout) almost never change a
level's best value, but proving that in the integer program alone made HiGHS branch on them for seconds (the benchmark's
scarce fleets with moves took 13 to 22 s that way, and under 3 s with the bound and the repair).

All the solves share ``time_limit`` seconds. When the limit stops a level, the best solution found so far is returned
with the best bound known for that level, and the levels after it are not optimised.

docs/PLANNER.md says why HiGHS: an open-source (MIT) MILP solver, among the fastest there are, maintained by its
authors at the University of Edinburgh, and the solver behind SciPy's ``milp``; ``highspy`` is its own binding, a single
wheel with numpy as its only dependency, and it gives the dual bound, the gap, a time limit and a starting solution.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import time
import traceback
from collections import namedtuple

try:
    import highspy
    import numpy
except ImportError as error:
    HAS_HIGHSPY = False
    HIGHSPY_IMPORT_ERROR = "".join(traceback.format_exception_only(type(error), error))
else:
    HAS_HIGHSPY = True
    HIGHSPY_IMPORT_ERROR = None

# The highspy the tests run with (requirements.txt's floor, pinned in the execution environment).
HIGHSPY_REQUIREMENT = "highspy>=1.15.1"
INFINITY = float("inf")
MAXIMIZE, MINIMIZE = "maximize", "minimize"
# An objective: its name, MAXIMIZE or MINIMIZE, and {variable: coefficient} (integer coefficients on integer variables:
# the objective is an integer, which is what makes "a bound within less than one" a proof).
Objective = namedtuple("Objective", "name sense terms")
# One level's outcome: the value the solution reaches, the best value any solution could reach (HiGHS's dual bound;
# equal to value when proven, None when the level was never solved) and whether it is proven optimal.
Level = namedtuple("Level", "name value bound proven")
Solution = namedtuple("Solution", "values levels exact")


class SolverMissing(Exception):
    """highspy (or numpy) cannot be imported on the host that runs the module."""


class IntegerProgram(object):
    """Variables (integer unless said otherwise) with bounds, and rows ``lower <= sum(coefficient * variable) <=
    upper``. An integer variable is ``relaxed`` when it is continuous in the bounding solve, ``derived`` when it follows
    from the others (left free in the repair); every other integer variable is a decision (module docstring)."""

    def __init__(self):
        self.lower, self.upper, self.integer, self.names = [], [], [], []
        self.relaxed, self.derived = [], []
        self.rows = []  # (lower, upper, {variable: coefficient})

    def variable(self, name, lower=0, upper=INFINITY, integer=True, relaxed=False, derived=False):
        self.lower.append(float(lower))
        self.upper.append(float(upper))
        self.integer.append(bool(integer))
        self.relaxed.append(bool(relaxed))
        self.derived.append(bool(derived))
        self.names.append(name)
        return len(self.names) - 1

    def decisions(self):
        return [
            index
            for index, (integer, relaxed, derived) in enumerate(zip(self.integer, self.relaxed, self.derived))
            if integer and not relaxed and not derived
        ]

    def row(self, terms, lower=-INFINITY, upper=INFINITY):
        terms = dict((variable, coefficient) for variable, coefficient in terms.items() if coefficient)
        self.rows.append((float(lower), float(upper), terms))

    def value_of(self, terms, values):
        return sum(coefficient * values[variable] for variable, coefficient in terms.items())


def _highs(program, threads, relax=False):
    """A HiGHS instance holding ``program`` (with its relaxed variables continuous when ``relax``)."""
    solver = highspy.Highs()
    solver.setOptionValue("output_flag", False)
    solver.setOptionValue("threads", threads)
    solver.setOptionValue("random_seed", 0)
    # Zero gap: HiGHS stops only when its dual bound meets the value found (it rounds the bound of an integer-valued
    # objective to the next integer).
    solver.setOptionValue("mip_rel_gap", 0.0)
    solver.setOptionValue("mip_abs_gap", 0.0)
    # The plan that changes nothing is given as a start, and HiGHS finds the best quickly: its time goes into the proof,
    # which its primal heuristics only slow down (the benchmark's hardest fleets: 22 s with them, 15 s without).
    solver.setOptionValue("mip_heuristic_effort", 0.0)
    count = len(program.names)
    solver.addCols(
        count,
        numpy.zeros(count),
        numpy.array(program.lower, dtype=numpy.float64),
        numpy.array(program.upper, dtype=numpy.float64),
        0,
        numpy.array([], dtype=numpy.int32),
        numpy.array([], dtype=numpy.int32),
        numpy.array([], dtype=numpy.float64),
    )
    integers = [
        index
        for index, (integer, relaxed) in enumerate(zip(program.integer, program.relaxed))
        if integer and not (relax and relaxed)
    ]
    if integers:
        solver.changeColsIntegrality(
            len(integers),
            numpy.array(integers, dtype=numpy.int32),
            numpy.array([1] * len(integers), dtype=numpy.uint8),
        )
    for lower, upper, terms in program.rows:
        _add_row(solver, terms, lower, upper)
    return solver


def _add_row(solver, terms, lower, upper):
    variables = sorted(terms)
    solver.addRow(
        lower,
        upper,
        len(variables),
        numpy.array(variables, dtype=numpy.int32),
        numpy.array([float(terms[variable]) for variable in variables], dtype=numpy.float64),
    )


def _set_objective(solver, count, objective):
    costs = numpy.zeros(count)
    for variable, coefficient in objective.terms.items():
        costs[variable] = coefficient
    solver.changeColsCost(count, numpy.arange(count, dtype=numpy.int32), costs)
    sense = highspy.ObjSense.kMaximize if objective.sense == MAXIMIZE else highspy.ObjSense.kMinimize
    solver.changeObjectiveSense(sense)


def _set_start(solver, values):
    solver.setSolution(len(values), numpy.arange(len(values), dtype=numpy.int32), numpy.array(values, dtype=float))


def _solved_values(solver, count):
    """The integer solution HiGHS holds (values within its tolerance of integers, rounded), or None."""
    if solver.getInfo().primal_solution_status != highspy.SolutionStatus.kSolutionStatusFeasible:
        return None
    return [float(round(value)) for value in list(solver.getSolution().col_value)[:count]]


def _feasible(program, values):
    """Whether ``values`` satisfy every bound and row exactly (the rounded solution is checked, not trusted)."""
    for value, lower, upper in zip(values, program.lower, program.upper):
        if not lower <= value <= upper:
            return False
    for lower, upper, terms in program.rows:
        total = program.value_of(terms, values)
        if not lower - 1e-6 <= total <= upper + 1e-6:
            return False
    return True


def solve_lexicographic(program, objectives, start, time_limit, threads=1):
    """Optimise ``objectives`` (a list of Objective) in order over ``program``, starting from the feasible ``start``
    (one value per variable: the plan that changes nothing), within ``time_limit`` seconds in all."""
    if not HAS_HIGHSPY:
        raise SolverMissing(HIGHSPY_IMPORT_ERROR)
    deadline = time.monotonic() + time_limit
    solver = _highs(program, threads)
    relaxation = _highs(program, threads, relax=True) if any(program.relaxed) else None
    values = [float(value) for value in start]
    levels = []
    for objective in objectives:
        if deadline - time.monotonic() <= 0:
            levels.append(Level(objective.name, program.value_of(objective.terms, values), None, False))
            continue
        values, level = _solve_level(program, solver, relaxation, objective, values, deadline)
        levels.append(level)
        if not level.proven:
            for later in objectives[len(levels) :]:
                levels.append(Level(later.name, program.value_of(later.terms, values), None, False))
            break
        # The next levels keep this one's value.
        for instance in (solver, relaxation):
            if instance is not None:
                _hold(instance, objective, value=level.value)
    return Solution(values, levels, all(level.proven for level in levels))


def _solve_level(program, solver, relaxation, objective, values, deadline):
    """One objective: the bound, the repair, then the program itself if need be (module docstring). The values at the
    end of the level, and its Level."""
    bound = None
    if relaxation is not None:
        relaxed_values, bound = _run(relaxation, program, objective, deadline, start=values)
        if bound is not None:
            # Valid for the program too: held for the repair and the solve after it.
            _hold(solver, objective, bound=bound)
            if relaxed_values is not None:
                repaired = _repair(solver, program, objective, relaxed_values, deadline)
                value = None if repaired is None else program.value_of(objective.terms, repaired)
                if value is not None and abs(value - bound) < 1:
                    return repaired, Level(objective.name, value, value, True)
    if deadline - time.monotonic() > 0:
        found, solver_bound = _run(solver, program, objective, deadline, start=values)
        if found is not None and _feasible(program, found):
            values = _better(program, objective, values, found)
        bound = _tighter(objective, bound, solver_bound)
    value = program.value_of(objective.terms, values)
    proven = bound is not None and abs(bound - value) < 1
    return values, Level(objective.name, value, value if proven else bound, proven)


def _run(solver, program, objective, deadline, start=None):
    """Optimise ``objective`` until the deadline: (the solution's values if HiGHS holds one, rounded, else None;
    HiGHS's dual bound as an integer, or None). The dual bound is valid whatever stopped HiGHS: optimal, or the time
    limit."""
    count = len(program.names)
    _set_objective(solver, count, objective)
    solver.setOptionValue("time_limit", max(deadline - time.monotonic(), 1e-3))
    if start is not None:
        _set_start(solver, start)
    solver.run()
    return _solved_values(solver, count), _integer_bound(solver.getInfo().mip_dual_bound, objective)


def _repair(solver, program, objective, relaxed_values, deadline):
    """The program with its decisions fixed where the bound's solution put them: its best solution, or None."""
    decisions = program.decisions()
    columns = numpy.array(decisions, dtype=numpy.int32)
    fixed = numpy.array([round(relaxed_values[index]) for index in decisions], dtype=numpy.float64)
    solver.changeColsBounds(len(decisions), columns, fixed, fixed)
    try:
        found, _bound = _run(solver, program, objective, deadline)
        found = found if found is not None and _feasible(program, found) else None
    finally:
        solver.changeColsBounds(
            len(decisions),
            columns,
            numpy.array([program.lower[index] for index in decisions], dtype=numpy.float64),
            numpy.array([program.upper[index] for index in decisions], dtype=numpy.float64),
        )
    return found


def _hold(solver, objective, value=None, bound=None):
    """A row keeping ``objective`` at ``value`` or better (a level reached), or within ``bound`` (a level's bound)."""
    if value is not None:
        lower, upper = (value - 0.5, INFINITY) if objective.sense == MAXIMIZE else (-INFINITY, value + 0.5)
    else:
        lower, upper = (-INFINITY, bound + 0.5) if objective.sense == MAXIMIZE else (bound - 0.5, INFINITY)
    _add_row(solver, objective.terms, lower, upper)


def _better(program, objective, values, found):
    """``found`` if it is at least as good as ``values`` on ``objective``, else ``values``."""
    gain = program.value_of(objective.terms, found) - program.value_of(objective.terms, values)
    return found if (gain >= 0 if objective.sense == MAXIMIZE else gain <= 0) else values


def _tighter(objective, first, second):
    """The tighter of two bounds of ``objective`` (either may be None)."""
    known = [bound for bound in (first, second) if bound is not None]
    if not known:
        return None
    return min(known) if objective.sense == MAXIMIZE else max(known)


def _integer_bound(bound, objective):
    """HiGHS's dual bound of an integer-valued objective as the integer it proves (None when it has none)."""
    if bound is None or math.isnan(bound) or math.isinf(bound):
        return None
    if objective.sense == MAXIMIZE:
        return float(math.floor(bound + 1e-6))
    return float(math.ceil(bound - 1e-6))
