"""Wait until the local cluster has nothing left to do, before a measurement.

After a large fleet is seeded the controller manager creates every DaemonSet's pods (about seven per GPU
node) and the simulator reconciles every node: minutes of work at 1,000 nodes, which would be counted in
whatever runs meanwhile.
"""

import json
import time

from kubernetes import client

QUIET_SECONDS = 2


def wait_until_settled(api_client, limit=900):
    """Every DaemonSet rolled out to every node it targets, then QUIET_SECONDS with no node change."""
    apps = client.AppsV1Api(api_client)
    watch_until(apps.list_daemon_set_for_all_namespaces, lambda items: all(map(rolled_out, items.values())), limit)
    watch_until(client.CoreV1Api(api_client).list_node, None, limit)


def rolled_out(daemon_set):
    status = daemon_set.get("status") or {}
    desired = status.get("desiredNumberScheduled", 0)
    return status.get("observedGeneration") == daemon_set["metadata"].get("generation") and desired == status.get(
        "currentNumberScheduled"
    ) == status.get("updatedNumberScheduled", 0) == status.get("numberAvailable", 0)


def watch_until(list_call, done, limit=900):
    """LIST, then watch in QUIET_SECONDS windows until ``done({name: object})`` holds; with ``done`` None, until a
    window passes with no change at all. Bounded by ``limit`` seconds."""
    deadline = time.monotonic() + limit
    listed = json.loads(list_call(_preload_content=False).data)
    items = dict(
        (item["metadata"].get("namespace", "") + "/" + item["metadata"]["name"], item) for item in listed["items"]
    )
    resource_version = listed["metadata"]["resourceVersion"]
    while time.monotonic() < deadline:
        if done is not None and done(items):
            return
        changed = False
        stream = list_call(
            watch=True, resource_version=resource_version, timeout_seconds=QUIET_SECONDS, _preload_content=False
        )
        for line in stream:
            if not line.strip():
                continue
            event = json.loads(line)
            obj = event["object"]
            resource_version = obj["metadata"].get("resourceVersion", resource_version)
            key = obj["metadata"].get("namespace", "") + "/" + obj["metadata"].get("name", "")
            if event["type"] == "DELETED":
                items.pop(key, None)
            elif event["type"] in ("ADDED", "MODIFIED"):
                items[key] = obj
            changed = True
        if done is None and not changed:
            return
    raise SystemExit("the cluster was still changing after %ds (%s)" % (limit, list_call.__name__))
