# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MIG steps gpu_mig_config and gpu_reset share: read the mig-parted ConfigMaps a MIG change involves, and wait
for mig-manager to apply it, reporting a failed node at once with the reason from its MigConfigFailed Event."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import Failed, wait_for_events, wait_for_nodes
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import mig_manager_config_map
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.mig import MigExpectation

MIG_CONFIG_FAILED = "MigConfigFailed"

# mig-manager may record its Event just after setting the state label.
EVENT_GRACE_SECONDS = 5


def failure_reason(kube, node_name, config_name):
    """The message of the node's latest MigConfigFailed Event about ``config_name``, which is where the
    cluster says why. The Event may be recorded a moment after the state label: watched for a few seconds."""

    def failures(events):
        return [event for event in events if event.get("reason") == MIG_CONFIG_FAILED]

    def about_config(events):
        return [event for event in failures(events) if config_name in (event.get("message") or "")]

    events = failures(wait_for_events(kube, "Node", node_name, about_config, EVENT_GRACE_SECONDS))
    about = about_config(events)
    if not (about or events):
        return (
            "mig-manager set nvidia.com/mig.config.state=failed (no %s event: see the nvidia-mig-manager pod's log)"
            % MIG_CONFIG_FAILED
        )
    latest = max(
        about or events,
        key=lambda event: event.get("lastTimestamp")
        or event.get("eventTime")
        or event["metadata"].get("creationTimestamp")
        or "",
    )
    return latest.get("message") or latest.get("reason")


def wait_for_mig_configs(kube, configs, timeout, strategy=None, devices=None):
    """Wait until every node of ``configs`` (node name -> mig.config value) shows that config applied.

    ``devices`` (node name -> profile -> count) adds the MIG devices each node must advertise. A node
    mig-manager failed is reported at once with the reason from its MigConfigFailed Event; a node
    still pending (operands paused) at the timeout is reported with the gpu-operator #2833 hint.
    """
    expectations = dict(
        (name, MigExpectation(config, (devices or {}).get(name), strategy))
        for name, config in configs.items()
        if config
    )

    def checker(expectation):
        def check(node):
            if expectation.failed(node):
                return Failed(failure_reason(kube, node["metadata"]["name"], expectation.config_name))
            return expectation.problem(node)

        return check

    what = "MIG config %s on %d node(s)" % (
        ", ".join(sorted(set(e.config_name for e in expectations.values()))),
        len(expectations),
    )
    return wait_for_nodes(
        kube, dict((name, checker(expectation)) for name, expectation in expectations.items()), timeout, what
    )


# The mig-parted ConfigMaps a MIG request involves (``read_mig_config_maps``), as ``plan/mig.plan_mig`` takes them.
MigConfigMaps = namedtuple("MigConfigMaps", ["active", "target"])


def read_mig_config_maps(kube, operator, request):
    """The mig-parted ConfigMap mig-manager reads now (``active``) and, for a custom layout, the one ``request``
    writes it into (``target``, the same when they are one; None for a shipped config); None where missing."""
    active_name = mig_manager_config_map(operator.policy)
    active = kube.get_config_map(namespace=operator.namespace, name=active_name)
    target = None
    if request.layout is not None:
        target = (
            active
            if request.config_map == active_name
            else kube.get_config_map(namespace=operator.namespace, name=request.config_map)
        )
    return MigConfigMaps(active, target)


def wait_for_mig_plan(kube, written, timeout):
    """Wait until every node of a MIG plan, as ``written`` (``run/writer.Written``), shows its config applied and
    advertises its MIG devices."""
    return wait_for_mig_configs(
        kube,
        dict((name, expectation.config_name) for name, expectation in written.expectations.items()),
        timeout,
        written.plan.strategy,
        dict((name, expectation.devices) for name, expectation in written.expectations.items()),
    )
