# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A solution of program.py's ``PoolProgram`` read back as one choice per node (docs/PLANNER.md, "Reading it back").
Pure: no I/O.

Per group, the nodes whose option stops pods are taken fewest pods first; per MIG family the options kept to a state
(none stops pods) are spread evenly, so each node keeps a GPU for a change that stops them; then the pooled options,
most taken first, so that nodes come out alike, each to a GPU in another state first.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import shared_gpu
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.program import OptionKind


def choices_from(program, values):
    """One choice per node of ``program`` (None: keep it) from a solution's ``values``."""
    choices = [None] * len(program.nodes)
    mig_positions = [_give_group_options(group, values, choices) for group in program.groups]
    by_model, mig_nodes = {}, []
    for family in program.families:
        positions = [position for group in family.groups for position in mig_positions[group.number]]
        gpus = [_FreeGpus(program.nodes[position], family.states) for position in positions]
        _place_kept_options(family, gpus, values)
        by_model.setdefault(family.model.name, []).extend(gpus)
        mig_nodes.extend(zip(positions, gpus))
    for name, gpus in by_model.items():
        pooled = [(option.state, int(values[option.variable])) for option in program.pooled[name]]
        for state, count in sorted(pooled, key=lambda entry: (-entry[1], entry[0].sort_key())):
            for node_gpus in gpus:
                count = node_gpus.take(None, state, count)
    for position, node_gpus in mig_nodes:
        choices[position] = node_gpus.choice()
    return choices


def _give_group_options(group, values, choices):
    """Give the group's nodes their options in ``choices``, but MIG; the positions of those that take MIG."""
    gpus = len(group.node.current)
    # The nodes whose option stops their pods: per pods count as many as the solution says, fewest pods first.
    stopping = dict((entry.pods, int(values[entry.variable])) for entry in group.stopping)
    moving, staying = [], []
    for pods, positions in sorted(group.by_pods.items()):
        moving.extend(positions[: stopping.get(pods, 0)])
        staying.extend(positions[stopping.get(pods, 0) :])
    mig = []
    for option in group.options:
        taken = moving if option.stops else staying
        count = int(values[option.variable])
        chosen, taken[:] = taken[:count], taken[count:]
        if option.kind == OptionKind.MIG:
            mig.extend(chosen)
        elif option.kind == OptionKind.WHOLE:
            for position in chosen:
                choices[position] = option.choice
        elif option.kind == OptionKind.SHARED:
            sharing = option.sharing
            total = int(values[sharing.replicas])
            for index, position in enumerate(chosen):
                each = total // count + (1 if index < total % count else 0)
                choices[position] = (shared_gpu(sharing.method, each, sharing.renamed),) * gpus
    return mig


class _FreeGpus(object):
    """A MIG node's GPUs being given their states: per current state, the states given so far."""

    def __init__(self, node, states):
        self.node = node
        self.given = dict((state, []) for state in states)
        self.room = dict((state, list(node.current).count(state)) for state in states)

    def take(self, state, target, count):
        """Give ``target`` to up to ``count`` free GPUs in ``state`` (None: in any, those in another state first, so
        that the change the program counts is one); the count left."""
        if state is not None:
            order = [state]
        else:
            order = sorted(self.given, key=lambda here: (here == target, here.sort_key()))
        for here in order:
            placed = min(count, self.room[here] - len(self.given[here]))
            self.given[here].extend([target] * placed)
            count -= placed
        return count

    def choice(self):
        given = dict((state, list(targets)) for state, targets in self.given.items())
        return tuple(given[state].pop(0) for state in self.node.current)


def _place_kept_options(family, gpus, values):
    """Give the family's MIG nodes (``gpus``) the options kept to a state (none of them stops the node's pods): spread
    evenly, each state's from where the previous state's ended, so that no node gets more than the program's row allows
    (all its GPUs but one). The pooled options take the rest (``choices_from``), so every node has a change that
    stops its pods."""
    count = len(gpus)
    start = 0
    for state in family.states:
        options = [(option.state, int(values[option.variable])) for option in family.kept[state]]
        total = sum(number for _target, number in options)
        shares = [total // count + (1 if (index - start) % count < total % count else 0) for index in range(count)]
        start = (start + total) % count if count else 0
        queue = [target for target, number in options for _copy in range(number)]
        for node_gpus, share in zip(gpus, shares):
            for target in queue[:share]:
                node_gpus.take(state, target, 1)
            del queue[:share]
