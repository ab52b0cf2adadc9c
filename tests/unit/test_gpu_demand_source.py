# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_demand event source plugin's glue, without a cluster: loaded from its file as ansible-rulebook loads it,
its watches (threads) fed by a fake API's LISTs and watch events, its events read from the queue ansible-rulebook
hands it."""

import asyncio
import importlib.util
import os
import threading
import time

import pytest

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError

PLUGIN = os.path.join(
    os.path.dirname(__file__), "..", "..", "extensions", "eda", "plugins", "event_source", "gpu_demand.py"
)
POOL_LABEL = "k8s.scaleway.com/pool-name"
MIG_SMALL = "nvidia.com/mig-1g.10gb"


def load_plugin():
    spec = importlib.util.spec_from_file_location("gpu_demand_source", PLUGIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def unschedulable(name):
    return {
        "metadata": {"name": name, "namespace": "ml", "resourceVersion": "1"},
        "spec": {
            "nodeSelector": {POOL_LABEL: "gpu-h100"},
            "containers": [{"name": "cuda", "resources": {"limits": {MIG_SMALL: "1"}}}],
        },
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


class FakeKube(object):
    """Lists what it is given; its first pod watch brings ``added``, every other watch nothing, each lasting a little
    while as a real one would."""

    def __init__(self, pods, nodes, added):
        self.pods, self.nodes, self.added = pods, nodes, added
        self.retry_policy = None
        self.threads = set()

    def _quiet_watch(self, resource_version, seconds):
        self.threads.add(threading.current_thread().name)
        time.sleep(0.05)
        return iter(())

    def watch_unscheduled_pods(self, resource_version, seconds):
        if self.added:
            added, self.added = self.added, []
            return iter([("ADDED", pod) for pod in added])
        return self._quiet_watch(resource_version, seconds)

    def list_unscheduled_pods(self):
        return list(self.pods), "10"

    def list_nodes(self, label_selector=None):
        assert label_selector == "nvidia.com/gpu.present=true"
        return list(self.nodes), "10"

    def watch_nodes(self, resource_version, seconds, label_selector=None):
        return self._quiet_watch(resource_version, seconds)


async def first_event(plugin, args):
    queue = asyncio.Queue()
    source = asyncio.create_task(plugin.main(queue, args))
    try:
        return await asyncio.wait_for(queue.get(), 10)
    finally:
        source.cancel()
        with pytest.raises(asyncio.CancelledError):
            await source


def test_the_plugin_gives_the_settled_demand_of_its_watches_as_one_event(monkeypatch):
    plugin = load_plugin()
    node = {"metadata": {"name": "gpu-0", "labels": {POOL_LABEL: "gpu-h100"}}}
    kube = FakeKube([unschedulable("a"), unschedulable("b")], [node], [unschedulable("c")])
    monkeypatch.setattr(plugin, "_connect", lambda options: kube)
    args = {"pool_label": POOL_LABEL, "settle_seconds": 1, "host": "https://127.0.0.1:6443", "api_key": "token"}
    event = asyncio.run(first_event(plugin, args))["gpu_demand"]
    assert event["demand"] == {"gpu-h100": {MIG_SMALL: 3}}
    assert [pod["name"] for pod in event["pods"]] == ["a", "b", "c"]
    assert event["gpu_nodes"] == {"gpu-h100": ["gpu-0"]}
    assert kube.threads == {"gpu_demand-pods", "gpu_demand-nodes"}  # the watches ran off the loop's thread


def test_the_plugin_refuses_wrong_args_before_connecting(monkeypatch):
    plugin = load_plugin()
    monkeypatch.setattr(plugin, "_connect", lambda options: pytest.fail("connected"))
    with pytest.raises(GpuShareError, match="settle_seconds"):
        asyncio.run(plugin.main(asyncio.Queue(), {"settle_seconds": "soon"}))
