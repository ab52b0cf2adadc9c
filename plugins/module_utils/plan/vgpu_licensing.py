# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_vgpu_licensing's plan: the NVIDIA License System client token and ``gridd.conf`` in a Secret (or the
deprecated ConfigMap) of the operator's namespace, named by the ClusterPolicy's ``spec.driver.licensingConfig``
with ``nlsEnabled: true`` (reference sections 3 and 5). Pure.

The token is a credential: it is compared, never shown. The diff and the result say only whether it is set
and whether this task changes it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import re

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import ObjectWrites, recorded
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import created_record, was_created

TOKEN_KEY = "client_configuration_token.tok"
GRIDD_CONF_KEY = "gridd.conf"
# FeatureType=1 asks the guest driver for an NVIDIA vGPU licence (2: RTX Virtual Workstation, 4: Virtual
# Compute Server, 0: unlicensed).
DEFAULT_GRIDD_CONF = "FeatureType=1\n"
LICENSING_FIELD = "driver.licensingConfig"
SECRET, CONFIG_MAP = "secret", "configmap"
_FEATURE_TYPE_RE = re.compile(r"^\s*FeatureType\s*=\s*[0-9]+\s*$", re.MULTILINE)
TOKEN_SET, TOKEN_CHANGED = "<set>", "<set, changed by this task>"


def licensing_config_of(policy):
    return (((policy.get("spec") or {}).get("driver") or {}).get("licensingConfig")) or {}


def _stored(obj, storage):
    """The keys of an existing Secret (decoded) or ConfigMap."""
    if obj is None:
        return {}
    if storage == SECRET:
        return dict((key, base64.b64decode(value).decode("utf-8")) for key, value in (obj.get("data") or {}).items())
    return dict(obj.get("data") or {})


def _shown(data, changed_token=False):
    """What the diff may show of the licence object: gridd.conf, and only whether the token is set."""
    shown = {GRIDD_CONF_KEY: data.get(GRIDD_CONF_KEY)}
    if TOKEN_KEY in data:
        shown[TOKEN_KEY] = TOKEN_CHANGED if changed_token else TOKEN_SET
    else:
        shown[TOKEN_KEY] = None
    return shown


def validate_licence(token, gridd_conf):
    if not (token or "").strip():
        raise GpuShareError(
            "client_configuration_token is empty: give the content of the client_configuration_token.tok file "
            "downloaded from the NVIDIA Licensing Portal or your DLS instance."
        )
    if not _FEATURE_TYPE_RE.search(gridd_conf):
        raise GpuShareError(
            "gridd_conf has no FeatureType line: the guest driver would not know which licence to ask for; add "
            "FeatureType=1 (vGPU), 2 (RTX Virtual Workstation) or 4 (Virtual Compute Server)."
        )


def plan_vgpu_licensing(policy, namespace, existing, params):
    """The writes that make the licence present (or absent) as asked. ``existing`` is the Secret or ConfigMap
    named ``params["name"]`` in ``namespace`` (None when missing)."""
    storage, name, state = params["storage"], params["name"], params["state"]
    current = licensing_config_of(policy)
    stored = _stored(existing, storage)
    plan = ObjectWrites(config_map=name)
    name_field = "secretName" if storage == SECRET else "configMapName"
    other_field = "configMapName" if storage == SECRET else "secretName"
    if state == "present":
        token, gridd_conf = params["client_configuration_token"], params["gridd_conf"]
        validate_licence(token, gridd_conf)
        wanted_data = {TOKEN_KEY: token, GRIDD_CONF_KEY: gridd_conf}
        _plan_licence_object(plan, storage, namespace, name, existing, stored, wanted_data)
        if storage == CONFIG_MAP:
            plan.warnings.append(
                "The operator deprecates licensingConfig.configMapName: a ConfigMap shows the token to anyone who "
                "may read ConfigMaps in %s. Prefer storage: secret." % namespace
            )
        # The other field is dropped, or the driver could keep reading the old object.
        config_patch = {name_field: name, "nlsEnabled": params["nls_enabled"], other_field: None}
        after_config = dict((key, value) for key, value in dict(current, **config_patch).items() if value is not None)
        shown_after = _shown(wanted_data, changed_token=stored.get(TOKEN_KEY) != token)
    else:
        ours = current.get(name_field) == name
        config_patch = None if ours else {}
        after_config = {} if ours else current
        delete = existing is not None and was_created(existing)
        if delete and storage == SECRET:
            plan.object_writes[("Secret", namespace, name)] = ("delete", None)
        elif delete:
            plan.config_map_deletes.append(name)
        shown_after = None if delete or existing is None else _shown(stored)
    plan.before["licensingConfig"] = current or None
    plan.after["licensingConfig"] = after_config or None
    plan.before[storage] = _shown(stored) if existing is not None else None
    plan.after[storage] = shown_after
    if (after_config or None) != (current or None):
        plan.policy_patch = recorded(
            policy, {"spec": {"driver": {"licensingConfig": config_patch}}}, "spec", {LICENSING_FIELD: current or None}
        )
    return plan


def _plan_licence_object(plan, storage, namespace, name, existing, stored, wanted_data):
    changed = dict((key, value) for key, value in wanted_data.items() if stored.get(key) != value)
    if storage == CONFIG_MAP:
        if existing is None:
            plan.config_map_create = wanted_data
        elif changed:
            plan.config_map_patch = {"data": changed}
        return
    encoded = dict((key, base64.b64encode(value.encode("utf-8")).decode("ascii")) for key, value in changed.items())
    if existing is None:
        plan.object_writes[("Secret", namespace, name)] = (
            "create",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "Opaque",
                "metadata": {"name": name, "namespace": namespace, "annotations": created_record()},
                "data": encoded,
            },
        )
    elif changed:
        plan.object_writes[("Secret", namespace, name)] = ("patch", {"data": encoded})
