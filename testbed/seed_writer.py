"""How the seed writes: creates or replaces objects with their seeded state, skipping what is already as seeded (a
reset writes only what a test changed), keeping what Kubernetes' own controllers own, and waiting with watches."""

import copy
import json
import random
import time

from kubernetes.client.exceptions import ApiException

from testbed.simulator.kube import as_dict, discard, get_or_none, merge_patch
from testbed.simulator.names import GFD_TIMESTAMP_LABEL

SEED_THREADS = 16


CONFLICT_RETRIES = 20


CONFLICT_FIRST_PAUSE_SECONDS = 0.05


CONFLICT_MAX_PAUSE_SECONDS = 1.0


def crd(group, plural, kind, version, scope, scale=False, defaults=None):
    """A CRD that keeps any field (the real schemas are large and not what the tests exercise), with the real
    schema's ``defaults`` (``{field: default or {field: ...}}``), which the API server fills in as it does for the
    real CRD."""
    subresources = {"status": {}}
    if scale:
        subresources["scale"] = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "%s.%s" % (plural, group)},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": kind + "List"},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "subresources": subresources,
                    "schema": {"openAPIV3Schema": _schema_keeping_any_field(defaults or {})},
                }
            ],
        },
    }


def _schema_keeping_any_field(defaults):
    """An object schema that keeps every field and declares only the defaulted ones (a structural schema)."""
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if defaults:
        schema["properties"] = {
            field: (
                _schema_keeping_any_field(value) if isinstance(value, dict) else {"type": "string", "default": value}
            )
            for field, value in sorted(defaults.items())
        }
    return schema


class Writer(object):
    """Create-or-replace for each kind the seeding writes, retrying replaces that race a writer."""

    def __init__(self, kube):
        self.kube = kube

    def _apply(self, create, read, replace, body, keep=None, unconditional=False):
        """Create ``body``, or replace the existing object with it unless that would change nothing the seeding
        sets: a reset between tests then costs a read per object the test left alone, not a write that the
        controllers and the simulator would all react to. Returns (object, CREATED, REPLACED or UNCHANGED).
        ``unconditional``: see ``_replace``."""
        current = get_or_none(read, name=body["metadata"]["name"])
        if current is None:
            try:
                return as_dict(create, body=body), CREATED
            except ApiException as exc:
                if exc.status != 409:  # 409: created meanwhile
                    raise
        elif _unchanged(current, body, keep):
            return current, UNCHANGED
        if unconditional:
            return as_dict(replace, name=body["metadata"]["name"], body=body), REPLACED
        return self._replace(read, replace, body, keep), REPLACED

    @staticmethod
    def _replace(read, replace, body, keep=None):
        """Replace at the current resourceVersion, again if another writer got there first.

        ``keep(current, body)``, if given, copies into ``body`` what the replace must not drop. A kind whose
        API allows an update without a resourceVersion (a DaemonSet) is replaced unconditionally instead
        (``_apply``'s ``unconditional``): its controller writes its status while its pods change, so a replace
        at the version just read loses to it again and again on a busy machine.
        """
        name = body["metadata"]["name"]
        pause = CONFLICT_FIRST_PAUSE_SECONDS
        for _attempt in range(CONFLICT_RETRIES):
            current = as_dict(read, name=name)
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            if keep:
                keep(current, body)
            try:
                return as_dict(replace, name=name, body=body)
            except ApiException as exc:
                if exc.status != 409:
                    raise
            time.sleep(random.uniform(0, pause))
            pause = min(pause * 2, CONFLICT_MAX_PAUSE_SECONDS)
        raise RuntimeError("%s keeps changing: could not replace it" % name)

    def namespace(self, name):
        core = self.kube.core
        return self._apply(
            core.create_namespace, core.read_namespace, core.replace_namespace, {"metadata": {"name": name}}
        )[0]

    def crd(self, body):
        api = self.kube.extensions
        result = self._apply(
            api.create_custom_resource_definition,
            api.read_custom_resource_definition,
            api.replace_custom_resource_definition,
            body,
        )[0]
        wait_for(
            lambda: _established(as_dict(api.read_custom_resource_definition, body["metadata"]["name"]))
            and _served(self.kube.custom, body),
            "CRD %s to be established and served in discovery" % body["metadata"]["name"],
        )
        return result

    def custom(self, group, version, plural, body):
        api, namespace = self.kube.custom, body["metadata"].get("namespace")
        if namespace:
            scope = dict(group=group, version=version, namespace=namespace, plural=plural)
            calls = (
                api.create_namespaced_custom_object,
                api.get_namespaced_custom_object,
                api.replace_namespaced_custom_object,
            )
        else:
            scope = dict(group=group, version=version, plural=plural)
            calls = (api.create_cluster_custom_object, api.get_cluster_custom_object, api.replace_cluster_custom_object)
        return self._apply(*(_bind(call, scope) for call in calls), body)[0]

    def custom_with_status(self, group, version, plural, body):
        """A namespaced custom object and its status (a separate write with the status subresource)."""
        body = copy.deepcopy(body)
        status = body.pop("status")
        stored = self.custom(group, version, plural, body)
        if stored.get("status") == status:
            return stored
        return merge_patch(
            self.kube.custom.patch_namespaced_custom_object_status,
            group,
            version,
            body["metadata"]["namespace"],
            plural,
            body["metadata"]["name"],
            body={"status": status},
        )

    def configmap(self, body):
        core, scope = self.kube.core, {"namespace": body["metadata"]["namespace"]}
        return self._apply(
            _bind(core.create_namespaced_config_map, scope),
            _bind(core.read_namespaced_config_map, scope),
            _bind(core.replace_namespaced_config_map, scope),
            body,
        )[0]

    def daemonset(self, body):
        """Create or replace; one of another shape (a Helm install's NFD worker has the NFD chart's selector,
        which a replace cannot change) is deleted and created again. One this process wrote and nobody changed
        since is left as it is: a replace would make the DaemonSet controller sync it again, for every test."""
        apps, scope = self.kube.apps, {"namespace": body["metadata"]["namespace"]}
        current = get_or_none(apps.read_namespaced_daemon_set, body["metadata"]["name"], scope["namespace"])
        if current is not None and _unchanged_since_written(current, body):
            return current
        calls = (
            _bind(apps.create_namespaced_daemon_set, scope),
            _bind(apps.read_namespaced_daemon_set, scope),
            _bind(apps.replace_namespaced_daemon_set, scope),
        )
        try:
            written = self._apply(*calls, copy.deepcopy(body), unconditional=True)[0]
        except ApiException as exc:
            if exc.status != 422:
                raise
            delete_if_exists(apps.delete_namespaced_daemon_set, body["metadata"]["name"], scope["namespace"])
            written = self._apply(*calls, copy.deepcopy(body), unconditional=True)[0]
        _WRITTEN[written["metadata"]["uid"]] = (written["metadata"].get("generation"), _fingerprint(body))
        return written

    def node(self, body):
        """Nodes keep their status on create but not on replace, which needs the status subresource.

        Both replaces keep the annotations Kubernetes' own controllers put on the node and GFD's timestamp
        (``keep_node_fields``) and drop every other annotation the seed does not set.
        """
        core = self.kube.core
        status = body["status"]
        node, outcome = self._apply(
            core.create_node, core.read_node, core.replace_node, copy.deepcopy(body), keep_node_fields
        )
        if outcome != REPLACED:
            return node
        # A node status update takes its metadata from the body (only the spec is kept): send the labels too.
        status_body = {
            "metadata": {
                "name": node["metadata"]["name"],
                "labels": body["metadata"]["labels"],
                "annotations": body["metadata"]["annotations"],
            },
            "status": status,
        }
        return self._replace(core.read_node_status, core.replace_node_status, status_body, keep_node_fields)


CREATED, REPLACED, UNCHANGED = "created", "replaced", "unchanged"


def _unchanged(current, body, keep=None):
    """Whether replacing ``current`` with ``body`` would change nothing the seeding sets: the same labels, annotations
    (with what ``keep`` carries over), owner references and finalizers, and the same value of every other top-level
    field of the body (a node's status compared without its conditions' timestamps, which each seeding writes anew)."""
    body = copy.deepcopy(body)
    if keep:
        keep(current, body)
    for field, empty in (("labels", {}), ("annotations", {}), ("ownerReferences", []), ("finalizers", [])):
        if (current["metadata"].get(field) or empty) != (body["metadata"].get(field) or empty):
            return False
    return all(
        _without_timestamps(current.get(key)) == _without_timestamps(value)
        for key, value in body.items()
        if key not in ("apiVersion", "kind", "metadata")
    )


def _without_timestamps(value):
    if isinstance(value, dict) and "conditions" in value:
        conditions = [(c.get("type"), c.get("status"), c.get("reason"), c.get("message")) for c in value["conditions"]]
        return dict(value, conditions=sorted(conditions))
    return value


# DaemonSets this process wrote: uid -> (the generation the write left, the body's fingerprint). A spec change by
# anyone (the operator's answer to a policy edit, a module, a test) raises the generation.
_WRITTEN = {}


# The API server adds this annotation to every DaemonSet.
DAEMONSET_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"


def _fingerprint(body):
    return json.dumps(body, sort_keys=True)


def _unchanged_since_written(current, body):
    """True when ``current`` is the DaemonSet this process wrote from ``body``, with the same spec generation and
    exactly the body's labels and annotations."""
    meta = current["metadata"]
    annotations = dict(meta.get("annotations") or {})
    annotations.pop(DAEMONSET_GENERATION_ANNOTATION, None)
    return (
        _WRITTEN.get(meta["uid"]) == (meta.get("generation"), _fingerprint(body))
        and (meta.get("labels") or {}) == (body["metadata"].get("labels") or {})
        and annotations == (body["metadata"].get("annotations") or {})
    )


def is_control_plane_annotation(key):
    """True for an annotation key under a prefix Kubernetes reserves for its own components.

    Those are ``kubernetes.io/`` and ``k8s.io/`` and their subdomains (Kubernetes docs, "Labels and
    Selectors" and "Annotations": "The kubernetes.io/ and k8s.io/ prefixes are reserved for Kubernetes
    core components"): on a node, ``node.alpha.kubernetes.io/ttl`` (kube-controller-manager's TTL
    controller) and ``volumes.kubernetes.io/controller-managed-attach-detach`` (the kubelet).
    ``kubectl.kubernetes.io/`` is excluded: kubectl writes it for a user (``last-applied-configuration``).
    """
    prefix, _slash, _name = key.rpartition("/")
    if not prefix or prefix == "kubectl.kubernetes.io":
        return False
    return prefix in ("kubernetes.io", "k8s.io") or prefix.endswith((".kubernetes.io", ".k8s.io"))


def keep_node_fields(current, body):
    """What a node replace keeps of ``current``: the control plane's annotations, and GFD's timestamp, which says
    when GFD last wrote its labels (it stamps only a change of them), not when the seed ran."""
    keep_control_plane_annotations(current, body)
    stamp = (current["metadata"].get("labels") or {}).get(GFD_TIMESTAMP_LABEL)
    if stamp and GFD_TIMESTAMP_LABEL in (body["metadata"].get("labels") or {}):
        body["metadata"]["labels"][GFD_TIMESTAMP_LABEL] = stamp


def keep_control_plane_annotations(current, body):
    """Copy the control plane's annotations of ``current`` into ``body`` (the body's own values win).

    In Kubernetes 1.20 a PUT of a node (or of its status) writes ``metadata.annotations`` from the
    body: without this, a reset would remove ``node.alpha.kubernetes.io/ttl`` and the TTL controller
    would put it back a moment later, so what a test reads right after a reset would depend on timing.
    """
    kept = {
        key: value
        for key, value in (current["metadata"].get("annotations") or {}).items()
        if is_control_plane_annotation(key)
    }
    body["metadata"]["annotations"] = dict(kept, **(body["metadata"].get("annotations") or {}))


def _bind(call, scope):
    return lambda *args, **kwargs: call(*args, **dict(scope, **kwargs))


def _served(custom, body):
    """Whether the API server lists the CRD's resource in its group version's discovery. kube-apiserver sets
    Established, then serves the version's discovery a moment later (another controller); a client that builds its
    REST mapping in between, as Helm does right after installing a chart's CRDs, finds no such kind."""
    spec = body["spec"]
    try:
        listed = custom.get_api_resources(spec["group"], spec["versions"][0]["name"])
    except ApiException as exc:
        if exc.status != 404:
            raise
        return False
    return any(resource.name == spec["names"]["plural"] for resource in listed.resources or [])


def _established(crd_object):
    return any(
        condition["type"] == "Established" and condition["status"] == "True"
        for condition in (crd_object.get("status") or {}).get("conditions") or []
    )


def wait_for(predicate, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out waiting for " + what)
        time.sleep(0.1)


def delete_if_exists(delete, name, namespace):
    try:
        discard(delete, name, namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise
