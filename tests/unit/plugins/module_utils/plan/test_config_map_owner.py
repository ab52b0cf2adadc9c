# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""refuse_foreign_config_map and the two predicates behind it (``device_plugin_config.not_a_config``,
``mig_parted.not_a_config_file``): a ConfigMap something else owns, or that holds anything but configs of the
kind a module writes, is refused before any write with a message naming it, each owner and key, and the fix;
one that does not exist, or holds only such configs (the collection's and other users'), is fine."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
import yaml
from k8s_objects import CONFIG_MAP, NAMESPACE, cluster_policy, config_map, t4_node

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    build_sharing_config,
    not_a_config,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import MIG_PARTED_KEY, not_a_config_file
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.yaml_text import dump_config
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.config_map_owner import refuse_foreign_config_map
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.mig import MigRequest, plan_mig
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import RESTORE_ANNOTATION, created_record
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing import SharingRequest, plan_profile

DEVICE_PLUGIN = "device-plugin configs"
MIG_PARTED = "mig-parted config files"
TIME_SLICING = dump_config(build_sharing_config("time-slicing", 4))
MPS = dump_config(build_sharing_config("mps", 2))
CA_CERT = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBdzCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAjMSEwHwYDVQQDDBhrM3Mt\n"
    "-----END CERTIFICATE-----\n"
)
MIG_CONFIG = yaml.safe_dump(
    {
        "version": "v1",
        "mig-configs": {
            "all-disabled": [{"devices": "all", "mig-enabled": False}],
            "all-1g.10gb": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}],
        },
    }
)


def owner(kind, name, controller=None):
    reference = {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": "0f0e0000-0000-4000-8000-000000000001"}
    if controller is not None:
        reference.update(controller=controller, blockOwnerDeletion=controller)
    return reference


def owned(cm, *owners):
    cm["metadata"]["ownerReferences"] = list(owners)
    return cm


def refusal(cm, predicate=not_a_config, what=DEVICE_PLUGIN):
    with pytest.raises(GpuShareError) as error:
        refuse_foreign_config_map(cm, predicate, what)
    return error.value.msg


# --- accepted -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cm",
    [
        pytest.param(None, id="does-not-exist-yet"),
        pytest.param(config_map({}), id="no-keys"),
        pytest.param(config_map({"t4": TIME_SLICING, "a100": MPS}), id="time-slicing-and-mps-profiles"),
        pytest.param(config_map({"unshared": "version: v1\n", "v1-by-default": "sharing: {}\n"}), id="no-sharing"),
        # The device plugin reads an empty document as every default (config.go:113-137).
        pytest.param(config_map({"placeholder": "", "commented": "# nothing yet\n"}), id="empty-documents"),
        pytest.param(config_map({"t4": TIME_SLICING}, annotations=created_record()), id="created-by-the-collection"),
    ],
)
def test_device_plugin_configs_are_accepted(cm):
    refuse_foreign_config_map(cm, not_a_config, DEVICE_PLUGIN)


def test_keys_the_collection_added_are_its_own_whatever_they_hold():
    """A profile the collection added and someone broke by hand is the collection's to rewrite; a key it did not add
    is not, even in the same ConfigMap."""
    record = {RESTORE_ANNOTATION: json.dumps({"data": {"ours": None, "theirs": "version: v1\n"}})}
    refuse_foreign_config_map(
        config_map({"ours": "sharing: [broken", "theirs": TIME_SLICING}, annotations=record),
        not_a_config,
        DEVICE_PLUGIN,
    )
    broken_by_hand = config_map({"ours": "sharing: [broken", "theirs": "sharing: [broken"}, annotations=record)
    message = refusal(broken_by_hand)
    assert "key theirs is not valid YAML" in message
    assert "key ours" not in message


def test_mig_parted_config_files_are_accepted():
    for cm in (
        None,
        config_map({MIG_PARTED_KEY: MIG_CONFIG}, name="custom-mig-parted-config"),
        # mig-parted reads an empty document, or one with only a version (spec_test.go:143-167).
        config_map({MIG_PARTED_KEY: "", "spare.yaml": "version: v1\n"}, name="custom-mig-parted-config"),
    ):
        refuse_foreign_config_map(cm, not_a_config_file, MIG_PARTED)


# --- refused: owners ----------------------------------------------------------------------------------------------


def test_a_config_map_with_owners_is_refused_naming_each_owner_and_its_controller():
    cm = owned(
        config_map({"t4": TIME_SLICING}, name="node-agent-config"),
        owner("DaemonSet", "node-agent", controller=True),
        owner("ConfigMap", "bundle"),
    )
    assert refusal(cm) == (
        "Will not write device-plugin configs into ConfigMap gpu-operator/node-agent-config: it is owned by "
        "DaemonSet/node-agent (its controller), ConfigMap/bundle. The collection writes only into a ConfigMap that "
        "nothing owns and that holds only device-plugin configs: choose another config_map (one that does not exist "
        "yet is created), or, if this one is meant for the collection, remove its ownerReferences."
    )


def test_owners_are_refused_even_on_a_config_map_the_collection_created():
    cm = owned(config_map({"t4": TIME_SLICING}, annotations=created_record()), owner("Application", "gitops", True))
    assert "it is owned by Application/gitops (its controller)" in refusal(cm)


def test_the_operators_mig_config_map_is_refused_for_its_controller_the_cluster_policy():
    """NVIDIA's operator creates default-mig-parted-config with the ClusterPolicy as controller
    (gpu-operator controllers/object_controls.go, ConfigMap(): controllerutil.SetControllerReference)."""
    cm = owned(
        config_map({MIG_PARTED_KEY: MIG_CONFIG}, name="default-mig-parted-config", namespace="nvidia-gpu-operator"),
        dict(owner("ClusterPolicy", "gpu-cluster-policy", True), apiVersion="nvidia.com/v1"),
    )
    message = refusal(cm, not_a_config_file, MIG_PARTED)
    assert message.startswith(
        "Will not write mig-parted config files into ConfigMap nvidia-gpu-operator/default-mig-parted-config: it is "
        "owned by ClusterPolicy/gpu-cluster-policy (its controller). "
    )
    assert message.endswith(", remove its ownerReferences.")


# --- refused: keys that are not configs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, key, reason",
    [
        ({"ca.crt": CA_CERT}, "ca.crt", "key ca.crt is not a device-plugin config: it holds a string, not a mapping"),
        (
            {"application.properties": "server.port=8080\nlogging.level=debug\n"},
            "application.properties",
            "key application.properties is not a device-plugin config: it holds a string",
        ),
        (
            {"settings.yaml": "server:\n  port: 8080\nversion: v1\ndatabase: {}\n"},
            "settings.yaml",
            "key settings.yaml is not a device-plugin config: database, server are not among its fields (version, "
            "flags, resources, sharing, imex)",
        ),
        ({"hosts": "- a\n- b\n"}, "hosts", "key hosts is not a device-plugin config: it holds a list"),
        ({"t4": "sharing: [unclosed"}, "t4", "key t4 is not valid YAML: expected ',' or ']'"),
        ({"t4": "version: 2\n"}, "t4", "key t4: unknown version 2; version must be v1"),
        (
            {"t4": TIME_SLICING.replace("replicas: 4", "replicas: 1")},
            "t4",
            "key t4: sharing.timeSlicing.resources[0]: replicas of nvidia.com/gpu must be an integer >= 2, got 1",
        ),
        ({"mig": MIG_CONFIG}, "mig", "key mig is not a device-plugin config: mig-configs is not among its fields"),
    ],
)
def test_keys_that_are_not_device_plugin_configs_are_refused(data, key, reason):
    message = refusal(config_map(dict(data, kept=TIME_SLICING)))
    assert message.startswith("Will not write device-plugin configs into ConfigMap %s/%s: " % (NAMESPACE, CONFIG_MAP))
    assert reason in message
    assert message.endswith(", remove or fix key(s) %s." % key)
    assert "kept" not in message


def test_binary_data_is_refused():
    cm = config_map({"t4": TIME_SLICING})
    cm["binaryData"] = {"logo.png": "iVBORw0KGgo="}
    assert "key logo.png holds binary data" in refusal(cm)


def test_every_owner_and_key_is_named_at_once():
    cm = owned(config_map({"ca.crt": CA_CERT, "README": "kept by hand\n", "t4": TIME_SLICING}), owner("Job", "setup"))
    message = refusal(cm)
    assert "it is owned by Job/setup; key README is not a device-plugin config" in message
    assert "; key ca.crt is not a device-plugin config" in message
    assert message.endswith(", remove its ownerReferences and remove or fix key(s) README, ca.crt.")


@pytest.mark.parametrize(
    "text, reason",
    [
        (
            TIME_SLICING,
            "key config.yaml is not a mig-parted config file: sharing is not among its fields (version, mig-configs)",
        ),
        ("settings:\n  color: blue\n", "key config.yaml is not a mig-parted config file: settings is not among its "),
        (CA_CERT, "key config.yaml is not a mig-parted config file: it holds a string"),
        ("mig-configs:\n  all-disabled:\n  - devices: all\n    mig-enabled: false\n", "missing 'version' field"),
        ("version: v1\nmig-configs:\n  half:\n  - devices: all\n", "missing required field mig-enabled"),
    ],
)
def test_keys_that_are_not_mig_parted_config_files_are_refused(text, reason):
    cm = config_map({MIG_PARTED_KEY: text}, name="custom-mig-parted-config")
    message = refusal(cm, not_a_config_file, MIG_PARTED)
    assert message.startswith(
        "Will not write mig-parted config files into ConfigMap %s/custom-mig-parted-config: " % NAMESPACE
    )
    assert reason in message
    assert message.endswith(", remove or fix key(s) config.yaml.")


# --- the planners call it before planning any write ---------------------------------------------------------------


def plan_profile_on_one_node(request, cm):
    return plan_profile(request, NAMESPACE, cluster_policy(config_name=CONFIG_MAP), cm, [t4_node("t4-a", config="t4")])


def test_plan_profile_refuses_a_foreign_config_map_for_present():
    cm = config_map({"ca.crt": CA_CERT}, name="kube-root-ca.crt")
    request = SharingRequest("present", "t4", "kube-root-ca.crt", config=build_sharing_config("mps", 2), node_names=[])
    with pytest.raises(GpuShareError, match="Will not write device-plugin configs into ConfigMap .*/kube-root-ca.crt"):
        plan_profile_on_one_node(request, cm)


def test_plan_profile_refuses_to_remove_a_key_from_a_foreign_config_map():
    cm = config_map({"t4": TIME_SLICING, "README": "kept by hand\n"})
    with pytest.raises(GpuShareError, match="key README is not a device-plugin config"):
        plan_profile_on_one_node(SharingRequest("absent", "t4", CONFIG_MAP), cm)


def test_plan_profile_absent_without_a_key_to_remove_writes_nothing_there_and_is_not_refused():
    cm = config_map({"README": "kept by hand\n"})
    plan = plan_profile_on_one_node(SharingRequest("absent", "t4", CONFIG_MAP), cm)
    assert plan.config_map_patch is None and plan.config_map_create is None


MIG_NODE = {
    "metadata": {
        "name": "gpu-h100-0",
        "labels": {
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": "1",
            "nvidia.com/gpu.memory": "81559",
            "nvidia.com/mig.capable": "true",
            "nvidia.com/mig.config": "all-disabled",
            "nvidia.com/mig.config.state": "success",
            "feature.node.kubernetes.io/pci-0302_10de_2330.present": "true",
        },
    },
    "status": {"capacity": {"nvidia.com/gpu": "1"}},
}
MIG_POLICY = {
    "metadata": {"name": "gpu-cluster-policy"},
    "spec": {"migManager": {"config": {"name": "default-mig-parted-config", "default": "all-disabled"}}},
}
OPERATORS_MIG_CONFIG_MAP = owned(
    config_map({MIG_PARTED_KEY: MIG_CONFIG}, name="default-mig-parted-config"),
    dict(owner("ClusterPolicy", "gpu-cluster-policy", True), apiVersion="nvidia.com/v1"),
)


def test_plan_mig_refuses_a_layout_into_the_operators_config_map():
    request = MigRequest(
        ["gpu-h100-0"],
        layout=[{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}],
        config_name="halves",
        config_map="default-mig-parted-config",
    )
    active = target = OPERATORS_MIG_CONFIG_MAP
    with pytest.raises(GpuShareError, match=r"owned by ClusterPolicy/gpu-cluster-policy \(its controller\)"):
        plan_mig(request, MIG_POLICY, active, target, [MIG_NODE], NAMESPACE)


def test_plan_mig_reads_the_operators_config_map_for_a_shipped_config_and_its_own_for_a_layout():
    shipped = plan_mig(
        MigRequest(["gpu-h100-0"], config="all-1g.10gb"),
        MIG_POLICY,
        OPERATORS_MIG_CONFIG_MAP,
        None,
        [MIG_NODE],
        NAMESPACE,
    )
    assert not shipped.config_map_creates and not shipped.config_map_patches
    layout = plan_mig(
        MigRequest(
            ["gpu-h100-0"],
            layout=[{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}],
            config_name="halves",
        ),
        MIG_POLICY,
        OPERATORS_MIG_CONFIG_MAP,
        None,
        [MIG_NODE],
        NAMESPACE,
    )
    assert sorted(layout.config_map_creates) == ["custom-mig-parted-config"]
