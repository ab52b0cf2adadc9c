# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA's rules, one table per section of the reference's rule files, checked against the collection.

Facts: ``data/nvidia/`` next to this file (copies; its README names each source and commit). Rules:
``mig-parted-rules.md`` (NVIDIA/mig-parted@bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d,
NVIDIA/go-nvlib@3c161560521e3208792199f2ed0d559a5f3ae4f4) and ``device-plugin-rules.md``
(NVIDIA/k8s-device-plugin@1b826acc6af3079d8923bac395c3124b8861a9a6); each table names its section.
The shipped configs are read here from the JSON copy, not from the collection's generated data, so a
generation mistake is caught."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    build_sharing_config,
    check_devices_field,
    check_resource_name,
    mig_profile_of_resource,
    mig_resource_name,
    mps_max_clients,
    validate_sharing_config,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import (
    MIG_GPU_MODELS,
    find_gpu_model,
    model_by_device_id,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import (
    filter_problem,
    normalize_layout,
    parse_device_filter,
    resolve_shipped_config,
    validate_mig_layout,
    validate_mig_parted_document,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_profile import (
    canonical_profile,
    name_form,
    parse_mig_profile,
    profile_from_name_form,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import NodeGpuState

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "nvidia")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def load(name):
    with open(os.path.join(DATA, name)) as handle:
        return json.load(handle)


SHIPPED = load("default-mig-parted-config.json")
SHIPPED_CONFIGS = SHIPPED["configs"]
DEVICE_IDS = [item["id"] for item in load("pci-device-ids.json")["ids"]]
H100 = model_by_device_id("0x233010DE")
A100_40 = model_by_device_id("0x20B010DE")


def shipped_entries(name):
    """The entries of a shipped config as the YAML has them (absent keys left out)."""
    return [dict((k, v) for k, v in entry.items() if v is not None) for entry in SHIPPED_CONFIGS[name]]


def entry(mig_devices, devices="all", enabled=True, **extra):
    result = dict(extra, devices=devices)
    result["mig-enabled"] = enabled
    if mig_devices is not None:
        result["mig-devices"] = mig_devices
    return result


# --- the data is what the generator makes of the copies -----------------------------------------------


def test_generated_data_is_fresh():
    """plugins/module_utils/nvidia/nvidia_data.py is exactly what tools/gen_nvidia_data.py makes of data/nvidia/."""
    subprocess.check_call([sys.executable, os.path.join(ROOT, "tools", "gen_nvidia_data.py"), "--check"])


def test_every_device_id_of_the_shipped_config_is_in_the_catalog():
    """mig-parted-rules.md section 6, pci-device-ids.json: the 27 device IDs of the shipped filters."""
    assert len(DEVICE_IDS) == 27
    for device_id in DEVICE_IDS:
        assert model_by_device_id(device_id) is not None, device_id
    assert sorted(d for model in MIG_GPU_MODELS for d in model.device_ids) == sorted(DEVICE_IDS)


@pytest.mark.parametrize(
    "dump, device_id", [("h100-80gb-hbm3-nvml.json", "0x233010DE"), ("h200-nvml.json", "0x233510DE")]
)
def test_catalog_matches_nvml_where_measured(dump, device_id):
    """The NVML dumps: every profile with its slices, most instances and memory (MiB), nothing more."""
    gpu = load(dump)["gpus"][0]
    model = model_by_device_id(device_id)
    measured = dict((p["name"][len("MIG ") :], p) for p in gpu["gpu_instance_profiles"])
    assert sorted(model.profiles) == sorted(measured)
    for name, record in measured.items():
        facts = model.facts[name]
        assert (facts["slices"], facts["max_count"], facts["memory_mib"]) == (
            record["sliceCount"],
            record["instanceCount"],
            record["memorySizeMB"],
        ), name
        assert facts["memory_source"].startswith("NVML")
    # found by product and memory as GFD labels the node
    product = gpu["name"].replace(" ", "-")
    assert find_gpu_model(product, gpu["memory_total_mib"]) is model


def test_unmeasured_memory_is_marked_as_the_rule():
    for model in MIG_GPU_MODELS:
        for name, facts in model.facts.items():
            assert facts["memory_source"].startswith("NVML") or facts["memory_source"].startswith("rule"), name


# --- mig-parted-rules.md section 1: file structure -----------------------------------------------------

DOCUMENTS = [
    (None, None),
    ({}, None),
    ({"version": "v1"}, None),
    ({"version": "v1", "mig-configs": {"a": [entry({})]}}, None),
    ({"mig-configs": {"a": [entry({})]}}, "missing 'version'"),
    ({"version": "v2", "mig-configs": {"a": [entry({})]}}, "version must be v1"),
    ({"version": 1, "mig-configs": {"a": [entry({})]}}, "version must be v1"),
    ({"version": "v1", "mig-configs": {}}, "at least one config"),
    ({"version": "v1", "mig-configs": {"a": []}}, "non-empty list"),
    ({"version": "v1", "mig-configs": {"a": [entry({})]}, "extra": 1}, "unexpected field 'extra'"),
    ({"version": "v1", "mig-configs": {"a": [entry({}, typo=1)]}}, "unexpected field 'typo'"),
    ({"version": "v1", "mig-configs": {"a": [{"mig-enabled": False}]}}, "missing required field devices"),
    ({"version": "v1", "mig-configs": {"a": [{"devices": "all"}]}}, "missing required field mig-enabled"),
    ({"version": "v1", "mig-configs": {"a": [entry(None)]}}, "mig-devices is required"),
    ({"version": "v1", "mig-configs": {"a": [entry({}, devices="ALL")]}}, "devices must be 'all'"),
    ({"version": "v1", "mig-configs": {"a": [entry({}, devices=[0, "1"])]}}, "devices must be 'all'"),
    ({"version": "v1", "mig-configs": {"a": [entry({}, devices=[-1])]}}, None),
    ({"version": "v1", "mig-configs": {"a": [entry({}, devices=[])]}}, None),
    ({"version": "v1", "mig-configs": {"a": [entry({}, enabled="true")]}}, "mig-enabled must be true or false"),
    ({"version": "v1", "mig-configs": {"a": [entry({"1g.10gb": 1}, enabled=False)]}}, "mig-enabled is false"),
    ({"version": "v1", "mig-configs": {"a": [entry({}, enabled=False)]}}, None),
    ({"version": "v1", "mig-configs": {"a": [entry(None, enabled=False)]}}, None),
    ({"version": "v1", "mig-configs": {"a": [entry({"1g.10gb": 0})]}}, "all counts in mig-devices are 0"),
    ({"version": "v1", "mig-configs": {"a": [entry({"1g.10gb": 0, "2g.20gb": 1})]}}, None),
    ({"version": "v1", "mig-configs": {"a": [entry({"1g.10gb": -1})]}}, "must be >= 0"),
    ({"version": "v1", "mig-configs": {"a": [entry({"1g.10gb": 1.5})]}}, "must be an integer"),
    ({"version": "v1", "mig-configs": {"a": [entry({"1g.10gb": True})]}}, "must be an integer"),
    ({"version": "v1", "mig-configs": {"a": [entry({"0g.0gb": 100})]}}, None),  # format only (spec_test.go)
    ({"version": "v1", "mig-configs": {"a": [entry({"1g.10gb.me": 1})]}}, r"keep the '\+'"),
    ({"version": "v1", "mig-configs": {"a": [entry({}, **{"device-filter": "0x233010DE"})]}}, None),
    ({"version": "v1", "mig-configs": {"a": [entry({}, **{"device-filter": ["0x233010DE"]})]}}, None),
    ({"version": "v1", "mig-configs": {"a": [entry({}, **{"device-filter": [1]})]}}, "device-filter must be"),
    ({"version": "v1", "mig-configs": {"a": [entry({}, **{"device-filter": {"id": 1}})]}}, "device-filter must be"),
]


@pytest.mark.parametrize("document, error", DOCUMENTS)
def test_mig_parted_file_structure(document, error):
    if error is None:
        validate_mig_parted_document(document, "config.yaml")
    else:
        with pytest.raises(GpuShareError, match=error):
            validate_mig_parted_document(document, "config.yaml")


def test_the_shipped_file_parses():
    """The 81 shipped configs parse (mig-parted's own parser accepts them; so must ours)."""
    document = {"version": SHIPPED["version"], "mig-configs": dict((n, shipped_entries(n)) for n in SHIPPED_CONFIGS)}
    assert len(validate_mig_parted_document(document, "default-mig-parted-config")) == 81


# --- section 2: profile strings (go-nvlib) ------------------------------------------------------------

PROFILES = [
    ("1g.5gb", "1g.5gb"),
    ("1c.1g.5gb", "1g.5gb"),
    ("01g.05gb", "1g.5gb"),
    ("7g.80gb", "7g.80gb"),
    ("1c.7g.80gb", "1c.7g.80gb"),
    ("3c.4g.20gb", "3c.4g.20gb"),  # format only: no range check at parse time
    ("0g.5gb", "0g.5gb"),
    ("1g.10gb+me", "1g.10gb+me"),
    ("1c.1g.10gb+me", "1g.10gb+me"),
    ("1g.24gb+me.all", "1g.24gb+me.all"),
    ("1g.24gb-me", "1g.24gb-me"),
    ("2g.48gb+gfx", "2g.48gb+gfx"),
    ("1g.5gb+me,gfx", "1g.5gb+me,gfx"),
    ("1g.5gb+ME", "1g.5gb+ME"),
    ("1g.5gb+m3", "1g.5gb+m3"),
    ("1g.5gb+me+gfx", None),  # one '+': 'me+gfx' is one attribute with a bad character
    ("1g.5gb+me-gfx", None),
    ("1g.5gb+", None),
    ("1g.5gb+me,", None),
    ("1g.5gb+me,me", None),
    ("1g.5gb+1me", None),
    ("1g.5gb+.me", None),
    ("1g.5gb+me.", None),
    ("1g.5gb+m e", None),
    (" 1g.5gb", None),
    ("1g.5gb ", None),
    ("1G.5gb", None),
    ("1g.5GB", None),
    ("1g5gb", None),
    ("1g.10gb.me", None),
    ("1c.1g.5gb.x", None),
    ("g.5gb", None),
    ("1g.gb", None),
    ("+1g.5gb", None),
    ("-1g.5gb", None),
    ("1.5g.5gb", None),
    ("", None),
    ("mig-1g.10gb", None),
]


@pytest.mark.parametrize("profile, canonical", PROFILES)
def test_profile_grammar(profile, canonical):
    if canonical is None:
        with pytest.raises(GpuShareError, match="MIG profile"):
            parse_mig_profile(profile)
    else:
        assert canonical_profile(profile) == canonical


def test_attribute_profiles_are_distinct():
    assert canonical_profile("1g.10gb+me") != canonical_profile("1g.10gb")
    assert canonical_profile("1g.24gb+me") != canonical_profile("1g.24gb-me")


# --- section 3: config and resource names write '+' as '.' ----------------------------------------------

NAME_FORMS = [
    ("1g.10gb+me", "1g.10gb.me"),
    ("4g.96gb+gfx", "4g.96gb.gfx"),
    ("1g.24gb+me.all", "1g.24gb.me.all"),
    ("1g.24gb-me", "1g.24gb-me"),
    ("3g.40gb", "3g.40gb"),
]


@pytest.mark.parametrize("profile, written", NAME_FORMS)
def test_name_forms(profile, written):
    assert name_form(profile) == written
    assert profile_from_name_form(written) == profile
    assert mig_resource_name(profile) == "nvidia.com/mig-" + written
    assert mig_profile_of_resource("nvidia.com/mig-" + written) == profile
    check_resource_name("nvidia.com/mig-" + written, "resource")


@pytest.mark.parametrize("name", sorted(SHIPPED_CONFIGS))
def test_shipped_config_names_are_all_profile(name):
    """Generated and shipped per-profile configs hold one profile at its most, named all-<profile with '.'>."""
    if name in ("all-disabled", "all-enabled", "all-balanced"):
        return
    profile = profile_from_name_form(name[len("all-") :])
    for item in SHIPPED_CONFIGS[name]:
        assert list(item["mig-devices"]) == [profile]


def test_compute_instance_resources_are_not_advertised():
    """device-plugin-rules.md, resource names: only profiles with C == G become mixed-strategy resources."""
    assert mig_profile_of_resource("nvidia.com/mig-1c.2g.10gb") is None


# --- section 4: device selection --------------------------------------------------------------------------

FILTERS = [
    ("0x233010DE", (0x2330, 0x10DE, None)),
    ("0X233010de", (0x2330, 0x10DE, None)),
    ("0x233010DE:0x16C010DE", (0x2330, 0x10DE, (0x16C0, 0x10DE))),
    (str(0x233010DE), (0x2330, 0x10DE, None)),
    ("0x2330_10DE", (0x2330, 0x10DE, None)),
    ("0x233010DE:0x1:0x2", None),
    ("A100-SXM4-40GB", None),
    ("", None),
    ("0x1233010DE", None),
    ("-1", None),
    ("0x", None),
]


@pytest.mark.parametrize("text, parsed", FILTERS)
def test_device_filter_parsing(text, parsed):
    assert parse_device_filter(text) == parsed


@pytest.mark.parametrize(
    "text, problem",
    [("0x233010DE", None), ("A100-SXM4-40GB", "cannot parse"), ("0x233010DF", "not NVIDIA's"), ("0x12345", "vendor")],
)
def test_filter_that_never_matches_is_warned(text, problem):
    found = filter_problem(text)
    assert (found is None) if problem is None else (problem in found)
    warnings = []
    normalize_layout([entry({}, **{"device-filter": text})], "layout", warnings)
    assert bool(warnings) == (problem is not None)


def test_filtered_entries_pick_the_gpu():
    layout = [
        entry({"1g.10gb": 7}, **{"device-filter": ["0x233010DE"]}),
        entry({"1g.5gb": 7}, **{"device-filter": "0x20B010DE"}),
    ]
    assert validate_mig_layout(layout, H100, 2, device_id="0x233010DE") == [entry({"1g.10gb": 7})]
    assert validate_mig_layout(layout, A100_40, 2, device_id="0x20B010DE") == [entry({"1g.5gb": 7})]
    with pytest.raises(GpuShareError, match=r"leaves GPU\(s\) 0, 1 of its 2 unmatched"):
        validate_mig_layout(layout, model_by_device_id("0x233110DE"), 2, device_id="0x233110DE")


def test_filter_with_a_subsystem_cannot_be_checked():
    with pytest.raises(GpuShareError, match="subsystem"):
        validate_mig_layout([entry({}, **{"device-filter": "0x233010DE:0x16C010DE"})], H100, 1, device_id="0x233010DE")


def test_gpus_matched_by_entries_that_disagree_are_refused():
    with pytest.raises(GpuShareError, match="also matched by entry 0 with another layout"):
        validate_mig_layout([entry({"1g.10gb": 7}), entry({"3g.40gb": 2}, devices=[1])], H100, 2)
    # the same layout twice is fine
    validate_mig_layout([entry({"1g.10gb": 7}), entry({"1g.10gb": 7}, devices=[1])], H100, 2)


def test_unknown_device_id_with_partial_filter_is_not_guessed():
    """An A100 PCIe 40GB may be 0x20B1 or 0x20F1: a filter naming one of them cannot be decided without a label."""
    model = find_gpu_model("NVIDIA-A100-PCIE-40GB", 40960)
    with pytest.raises(GpuShareError, match="no label says which one"):
        validate_mig_layout([entry({}, **{"device-filter": "0x20F110DE"})], model, 1)
    state = NodeGpuState.from_node(
        {
            "metadata": {
                "name": "n",
                "labels": {
                    "nvidia.com/gpu.product": "NVIDIA-A100-PCIE-40GB",
                    "nvidia.com/gpu.memory": "40960",
                    "feature.node.kubernetes.io/pci-0302_10de_20f1.present": "true",
                },
            }
        }
    )
    assert state.pci_device_id == "0x20F110DE" and state.gpu_model is model


def targets(name, model, device_id):
    """Whether a shipped config targets this GPU: an entry's filter names its device ID, or an entry without
    a filter uses only profiles it has (all-disabled and all-enabled target every MIG GPU)."""
    matching = [
        item for item in SHIPPED_CONFIGS[name] if item["device-filter"] is None or device_id in item["device-filter"]
    ]
    if not matching:
        return False
    return all(
        item["device-filter"] is not None or all(p in model.profiles for p in (item["mig-devices"] or {}))
        for item in matching
    )


SHIPPED_TARGETS = [
    (name, device_id)
    for name in SHIPPED_CONFIGS
    for device_id in DEVICE_IDS
    if targets(name, model_by_device_id(device_id), device_id)
]


def test_every_shipped_config_targets_some_gpu_of_the_catalog():
    """All 81 configs: each is accepted on some GPU (or, for 3 of them, the 189GB GB200 matched by memory)."""
    targeted = set(name for name, _device in SHIPPED_TARGETS)
    gb200_189 = find_gpu_model("NVIDIA-GB200", 189 * 1024)
    for name in set(SHIPPED_CONFIGS) - targeted:
        assert all(p in gb200_189.profiles for item in SHIPPED_CONFIGS[name] for p in item["mig-devices"]), name
        resolve_shipped_config(name, gb200_189, 4)


@pytest.mark.parametrize("name, device_id", SHIPPED_TARGETS)
def test_shipped_config_accepted_on_each_gpu_it_targets(name, device_id):
    """mig-parted-rules.md sections 3-6: NVIDIA's own config, applied to a GPU it targets, is accepted and
    gives that GPU exactly what the matching entries say."""
    model = model_by_device_id(device_id)
    resolved = resolve_shipped_config(name, model, 4, "n", device_id=device_id)
    matching = [
        item for item in SHIPPED_CONFIGS[name] if item["device-filter"] is None or device_id in item["device-filter"]
    ]
    wanted = matching[-1]
    assert resolved == [
        {"devices": "all", "mig-enabled": wanted["mig-enabled"], "mig-devices": dict(wanted["mig-devices"] or {})}
    ]


@pytest.mark.parametrize("name", [n for n in SHIPPED_CONFIGS if n.startswith("all-") and "." in n])
def test_shipped_config_refused_on_gpus_it_does_not_target(name):
    for device_id in DEVICE_IDS:
        model = model_by_device_id(device_id)
        if not targets(name, model, device_id):
            with pytest.raises(GpuShareError, match="MIG config %s" % name):
                resolve_shipped_config(name, model, 1, "n", device_id=device_id)


@pytest.mark.parametrize("model", MIG_GPU_MODELS, ids=[m.name for m in MIG_GPU_MODELS])
def test_balanced_is_mig_parteds(model):
    """balanced.go: 7-slice GPUs 2x1g + 1x2g + 1x3g, 4-slice GPUs 2x1g + 1x2g, plain profiles, the 1g with most
    instances; equal to the shipped all-balanced entry of every device ID."""
    wanted = {7: [1, 1, 2, 3], 4: [1, 1, 2]}[model.compute_slices]
    assert sorted(s for p, n in model.balanced.items() for s in [model.facts[p]["slices"]] * n) == wanted
    for item in SHIPPED_CONFIGS["all-balanced"]:
        if set(item["device-filter"]) & set(model.device_ids):
            assert item["mig-devices"] == model.balanced
    validate_mig_layout([entry(model.balanced)], model, 1)


# --- section 5: capacity and placement (on a measured H100 80GB HBM3) ------------------------------------------

PLACEMENTS = [
    ({"4g.40gb": 1, "3g.40gb": 1}, None),
    ({"2g.20gb": 3, "1g.10gb": 1}, None),
    ({"2g.20gb": 3, "1g.20gb": 1}, None),
    ({"1g.20gb": 4}, None),
    ({"3g.40gb": 2}, None),
    ({"1g.10gb": 7}, None),
    ({"1g.10gb+me": 1, "1g.10gb": 6}, None),
    ({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, None),
    ({"1c.7g.80gb": 7}, None),
    ({"3c.7g.80gb": 2, "1c.7g.80gb": 1}, None),
    ({"2c.3g.40gb": 1, "1c.3g.40gb": 1, "3g.40gb": 1}, None),
    ({"7g.80gb": 1}, None),
    ({"3g.40gb": 2, "1g.10gb": 1}, "no placement"),
    ({"1g.20gb": 4, "1g.10gb": 1}, "no placement"),
    ({"4g.40gb": 1, "2g.20gb": 2}, "8 compute slices"),
    ({"1g.10gb": 8}, "holds at most 7"),
    ({"1g.10gb+me": 2}, "holds at most 1"),
    ({"4c.7g.80gb": 2}, "holds at most 1"),
    ({"5c.7g.80gb": 1}, "compute-instance profile 5c.7g.80gb does not exist"),
    ({"3c.4g.40gb": 1}, "compute-instance profile 3c.4g.40gb does not exist"),
    ({"1g.5gb": 1}, "does not exist on H100 80GB HBM3"),
    ({"1g.5gb": 0, "1g.10gb": 1}, "does not exist on H100 80GB HBM3"),
    ({"1g.10gb-me": 1}, "does not exist"),
]


@pytest.mark.parametrize("mig_devices, error", PLACEMENTS)
def test_placement_on_h100(mig_devices, error):
    if error is None:
        validate_mig_layout([entry(mig_devices)], H100, 1)
    else:
        with pytest.raises(GpuShareError, match=error):
            validate_mig_layout([entry(mig_devices)], H100, 1)


def test_media_extension_is_one_per_gpu():
    model = model_by_device_id("0x2BB510DE")  # RTX PRO 6000: +me, +me.all
    with pytest.raises(GpuShareError, match="media extension"):
        validate_mig_layout([entry({"1g.24gb+me": 1, "1g.24gb+me.all": 1})], model, 1)
    validate_mig_layout([entry({"1g.24gb+me.all": 1, "1g.24gb+gfx": 3})], model, 1)


def test_non_canonical_profile_rewritten_with_a_warning():
    warnings = []
    layout = normalize_layout([entry({"1c.1g.10gb": 7})], "layout", warnings)
    assert layout == [entry({"1g.10gb": 7})]
    assert "rewritten as 1g.10gb" in warnings[0]


# --- device-plugin-rules.md -------------------------------------------------------------------------------------


def config(method="timeSlicing", resources=None, **top):
    result = dict(top)
    result["sharing"] = {method: {"resources": resources or [{"name": "nvidia.com/gpu", "replicas": 2}]}}
    return result


PLUGIN_CONFIGS = [
    # How a config file is read: version
    (config(), None),
    (config(version="v1"), None),
    (config(version=""), None),
    (config(version="v2"), "unknown version"),
    (config(version=1), "unknown version"),
    ({}, None),
    # sharing.timeSlicing / sharing.mps
    ({"sharing": {"timeSlicing": {}}}, "no resources specified"),
    ({"sharing": {"timeSlicing": None}}, "no resources specified"),
    ({"sharing": {"mps": {}}}, "no resources specified"),
    ({"sharing": {"mps": None}}, None),
    ({"sharing": {"timeSlicing": {"resources": []}}}, "no resources specified"),
    # Resource entries
    (config(resources=[{"replicas": 2}]), "name is required"),
    (config(resources=[{"name": "gpu"}]), "no replicas specified"),
    (config(resources=[{"name": "gpu", "replicas": 1}]), ">= 2"),
    (config(resources=[{"name": "gpu", "replicas": "2"}]), ">= 2"),
    (config(resources=[{"name": "gpu", "replicas": 1000}]), None),  # time-slicing: no upper bound
    (config("mps", [{"name": "gpu", "replicas": 48}]), None),
    (config("mps", [{"name": "gpu", "replicas": 49}]), "at most 48 clients"),
    # devices and rename forms
    (config(resources=[{"name": "gpu", "replicas": 2, "devices": "all"}]), None),
    (config(resources=[{"name": "gpu", "replicas": 2, "devices": 2}]), None),
    (config(resources=[{"name": "gpu", "replicas": 2, "devices": 0}]), "count of devices must be > 0"),
    (config(resources=[{"name": "gpu", "replicas": 2, "devices": "some"}]), "only valid string input is 'all'"),
    (config(resources=[{"name": "gpu", "replicas": 2, "devices": None}]), "only valid string input is 'all'"),
    (config(resources=[{"name": "gpu", "replicas": 2, "devices": [0, "1", "0:1"]}]), None),
    (config(resources=[{"name": "gpu", "replicas": 2, "devices": [-1]}]), "unsupported type for device"),
    (config(resources=[{"name": "gpu", "replicas": 2, "devices": ["-1"]}]), "unsupported type for device"),
    (config(resources=[{"name": "gpu", "replicas": 2, "devices": ["GPU-UUID"]}]), "unsupported type for device"),
    (
        config(resources=[{"name": "gpu", "replicas": 2, "devices": ["GPU-8b2ba2bb-4b5a-4ea4-8e5a-1c6bd2a1e5c7"]}]),
        None,
    ),
    (
        config(resources=[{"name": "gpu", "replicas": 2, "devices": ["MIG-GPU-8b2ba2bb-4b5a-4ea4-8e5a-1c6bd2a1e5c7"]}]),
        "unsupported type for device",
    ),
    (
        config(
            resources=[{"name": "gpu", "replicas": 2, "devices": ["MIG-GPU-8b2ba2bb-4b5a-4ea4-8e5a-1c6bd2a1e5c7/1/0"]}]
        ),
        None,
    ),
    (config(resources=[{"name": "gpu", "replicas": 2, "rename": "gpu-shared"}]), None),
    (config(resources=[{"name": "gpu", "replicas": 2, "rename": "GPU"}]), "incorrect format"),
    # Resource names
    (config(resources=[{"name": "GPU", "replicas": 2}]), "incorrect format"),
    (config(resources=[{"name": "mig-1g.10gb+me", "replicas": 2}]), "incorrect format"),
    (config(resources=[{"name": "example.com/gpu", "replicas": 2}]), "incorrect format"),
    (config(resources=[{"name": "a" * 52, "replicas": 2}]), None),
    (config(resources=[{"name": "a" * 53, "replicas": 2}]), "at most 63"),
    # timeSlicing and mps together
    (
        {"sharing": {"timeSlicing": {"resources": [{"name": "gpu", "replicas": 2}]}, "mps": {"resources": []}}},
        "both timeSlicing and mps",
    ),
    # MPS and MIG, flags
    (config("mps", flags={"migStrategy": "mixed"}), "change the MIG strategy"),
    (config("mps", flags={"migStrategy": "single"}), None),
    (config(flags={"migStrategy": "auto"}), "unknown MIG strategy"),
]


@pytest.mark.parametrize("document, error", PLUGIN_CONFIGS)
def test_device_plugin_config_rules(document, error):
    if error is None:
        validate_sharing_config(document)
    else:
        with pytest.raises(GpuShareError, match=error):
            validate_sharing_config(document)


def test_a_name_matching_no_device_is_a_warning():
    warnings = validate_sharing_config(config(resources=[{"name": "not-gpu", "replicas": 2}]))
    assert "nvidia.com/not-gpu matches no device" in warnings[0]


@pytest.mark.parametrize("compute, limit", [((7, 0), 16), ((7, 2), 16), ((7, 5), 48), ((9, 0), 48), (None, 48)])
def test_mps_client_limit_by_compute_capability(compute, limit):
    assert mps_max_clients(compute) == limit


def test_gpu_mps_replicas_49_refused_before_anything():
    with pytest.raises(GpuShareError, match="at most 48 clients per GPU"):
        build_sharing_config("mps", 49)


@pytest.mark.parametrize("devices", ["all", 1, [0], ["0"], ["0:0"]])
def test_devices_forms(devices):
    check_devices_field(devices, "devices")
