# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia/mig_parted: mig-parted's config (parser, device filters, per-GPU fit and placement, shipped configs, merge),
with one table per section of the reference's mig-parted-rules.md (sections 1, 4 and 5;
NVIDIA/mig-parted@bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d) on the shipped config's copy in ``data/nvidia``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

import pytest
import yaml
from nvidia_rules import DEVICE_IDS, PLACEMENTS, SHIPPED, SHIPPED_CONFIGS

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import (
    MIG_GPU_MODELS,
    describe_mig_profiles,
    find_gpu_model,
    model_by_device_id,
    profile_slices,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import (
    build_mig_parted_config,
    filter_problem,
    gpu_indices,
    is_shipped_config_name,
    mig_devices_of,
    normalize_layout,
    parse_device_filter,
    resolve_shipped_config,
    validate_mig_layout,
    validate_mig_parted_document,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import NodeGpuState

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


# One product label per row of the reference's MIG table.
MIG_GPUS = [
    ("NVIDIA-A30", 24576),
    ("NVIDIA-A100-PCIE-40GB", 40960),
    ("NVIDIA-A100-SXM4-80GB", 81920),
    ("NVIDIA-H100-80GB-HBM3", 81559),
    ("NVIDIA-H800", 81559),
    ("NVIDIA-H100-NVL", 95830),
    ("NVIDIA-H100-SXM5-96GB", 97871),
    ("NVIDIA-GH200-480GB", 97871),
    ("NVIDIA-H20", 97871),
    ("NVIDIA-H200", 143771),
    ("NVIDIA-GH200-144G-HBM3e", 146831),
    ("NVIDIA-B200", 183359),
]
MODELS = [find_gpu_model(product, memory) for product, memory in MIG_GPUS]
MODEL_IDS = [model.name for model in MODELS]
PROFILE_CASES = [(model, profile) for model in MODELS for profile in sorted(model.profiles)]
PROFILE_IDS = ["%s/%s" % (model.name, profile) for model, profile in PROFILE_CASES]
# A profile of another row, for each row (3g.20gb exists only on the A100 40GB, 3g.40gb not there).
FOREIGN = {name: ("3g.40gb" if name == "A100 40GB" else "3g.20gb") for name in MODEL_IDS}


def layout(devices, enabled=True, devices_field="all"):
    return [{"devices": devices_field, "mig-enabled": enabled, "mig-devices": devices}]


@pytest.mark.parametrize("model, profile", PROFILE_CASES, ids=PROFILE_IDS)
def test_max_instances_accepted(model, profile):
    validate_mig_layout(layout({profile: model.profiles[profile]}), model, 8)


@pytest.mark.parametrize("model, profile", PROFILE_CASES, ids=PROFILE_IDS)
def test_max_plus_one_refused(model, profile):
    with pytest.raises(
        GpuShareError,
        match=r"node gpu-1 \(%s\).*%d x %s asked, but one %s holds at most %d"
        % (model.name, model.profiles[profile] + 1, re.escape(profile), model.name, model.profiles[profile]),
    ):
        validate_mig_layout(layout({profile: model.profiles[profile] + 1}), model, 8, "gpu-1")


@pytest.mark.parametrize("model", MODELS, ids=MODEL_IDS)
def test_foreign_profile_refused(model):
    with pytest.raises(
        GpuShareError, match="MIG profile %s does not exist on %s; valid profiles: " % (FOREIGN[model.name], model.name)
    ):
        validate_mig_layout(layout({FOREIGN[model.name]: 1}), model, 1)


@pytest.mark.parametrize("model", MODELS, ids=MODEL_IDS)
def test_all_balanced_validates(model):
    resolved = resolve_shipped_config("all-balanced", model, 4)
    assert resolved == [{"devices": "all", "mig-enabled": True, "mig-devices": model.balanced}]
    validate_mig_layout(resolved, model, 4)


@pytest.mark.parametrize("model", MODELS, ids=MODEL_IDS)
def test_too_many_compute_slices_refused(model):
    # One more single-slice instance than the GPU has slices: each count within its max where possible.
    small = sorted(model.profiles, key=profile_slices)[0]
    largest = max(model.profiles, key=profile_slices)
    devices = {largest: 1, small: 1}
    with pytest.raises(
        GpuShareError, match="compute slices per GPU, but a %s has %d" % (model.name, model.compute_slices)
    ):
        validate_mig_layout(layout(devices), model, 1)


def test_eight_compute_slices_refused_on_a100():
    model = find_gpu_model("NVIDIA-A100-PCIE-40GB", 40960)
    with pytest.raises(GpuShareError, match="uses 8 compute slices per GPU, but a A100 40GB has 7"):
        validate_mig_layout(layout({"4g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2}), model, 1)


def test_a30_has_four_slices():
    model = find_gpu_model("NVIDIA-A30", 24576)
    with pytest.raises(GpuShareError, match="uses 5 compute slices per GPU, but a A30 24GB has 4"):
        validate_mig_layout(layout({"4g.24gb": 1, "1g.6gb": 1}), model, 1)


@pytest.mark.parametrize(
    "devices",
    [
        {"3g.20gb": 2, "1g.5gb": 1},  # 7 compute slices but 45GB of 40
        {"1g.10gb": 4, "1g.5gb": 1},
    ],
)
def test_memory_slices_refused(devices):
    model = find_gpu_model("NVIDIA-A100-PCIE-40GB", 40960)
    with pytest.raises(GpuShareError, match=r"do not fit on one A100 40GB: its 8 memory slices have no placement"):
        validate_mig_layout(layout(devices), model, 1)


@pytest.mark.parametrize(
    "devices",
    [
        {"4g.20gb": 1, "2g.10gb": 1, "1g.5gb": 1},
        {"3g.20gb": 1, "2g.10gb": 2},
        {"2g.10gb": 3, "1g.5gb": 1},
        {"7g.40gb": 1},
        {"1g.5gb": 7},
        {"1g.5gb": 0, "7g.40gb": 1},
        {"1g.5gb+me": 1, "1g.5gb": 6},
        {"1c.7g.40gb": 7},
        {},
    ],
)
def test_valid_a100_combinations(devices):
    validate_mig_layout(layout(devices), find_gpu_model("NVIDIA-A100-PCIE-40GB", 40960), 2)


@pytest.mark.parametrize(
    "product", ["Tesla-T4", "NVIDIA-A10G", "NVIDIA-L4", "NVIDIA-L40S", "NVIDIA-RTX-A6000", "Tesla-V100-SXM2-16GB"]
)
def test_non_mig_gpu_refused(product):
    model = find_gpu_model(product, 15360)
    with pytest.raises(GpuShareError, match="node n1 .*%s does not support MIG; use time-slicing or MPS" % model.name):
        validate_mig_layout(layout({"1g.10gb": 1}), model, 1, "n1")
    with pytest.raises(GpuShareError, match="does not support MIG"):
        resolve_shipped_config("all-balanced", model, 1, "n1")
    # MIG off is valid anywhere.
    validate_mig_layout(layout({}, enabled=False), model, 1)
    assert resolve_shipped_config("all-disabled", model, 1) == [
        {"devices": "all", "mig-enabled": False, "mig-devices": {}}
    ]


def test_unknown_model_refused():
    with pytest.raises(GpuShareError, match="is not one the collection's catalog knows"):
        validate_mig_layout(layout({"1g.10gb": 1}), None, 1)


@pytest.mark.parametrize(
    "entries, gpu_count, message",
    [
        # mig-parted matches an index list against the GPUs present: a missing index matches nothing,
        # but every GPU must be matched by some entry.
        ([{"devices": [0, 4], "mig-enabled": True, "mig-devices": {}}], 4, r"leaves GPU\(s\) 1, 2, 3 of its 4"),
        ([{"devices": [-1], "mig-enabled": True, "mig-devices": {}}], 4, r"leaves GPU\(s\) 0, 1, 2, 3"),
        ([{"devices": [], "mig-enabled": True, "mig-devices": {}}], 4, r"leaves GPU\(s\) 0, 1, 2, 3"),
        ([{"devices": "0,1", "mig-enabled": True, "mig-devices": {}}], 4, "devices must be 'all' or a list"),
        ([{"devices": [True], "mig-enabled": True, "mig-devices": {}}], 4, "devices must be 'all' or a list"),
        (
            [{"devices": [0, 1], "mig-enabled": True, "mig-devices": {}}, {"devices": [1, 2], "mig-enabled": False}],
            3,
            "entry 1: GPU 1 is also matched by entry 0 with another layout",
        ),
        (
            [{"devices": [0], "mig-enabled": False}, {"devices": "all", "mig-enabled": True, "mig-devices": {}}],
            4,
            "GPU 0 is also matched by entry 0",
        ),
        (
            [{"devices": "all", "mig-enabled": False}, {"devices": "all", "mig-enabled": True, "mig-devices": {}}],
            None,
            "also matched by entry 0",
        ),
        ([{"devices": "all", "mig-enabled": "yes", "mig-devices": {}}], 1, "mig-enabled must be true or false"),
        ([{"devices": "all"}], 1, "missing required field mig-enabled"),
        ([{"mig-enabled": False}], 1, "missing required field devices"),
        ([{"devices": "all", "mig-enabled": True}], 1, "mig-enabled is true, so mig-devices is required"),
        ([{"devices": "all", "mig-enabled": True, "mig-devices": None}], 1, "so mig-devices is required"),
        (
            [{"devices": "all", "mig-enabled": True, "mig-device": {"1g.10gb": 7}}],
            1,
            "unexpected field 'mig-device'",
        ),
        (
            [{"devices": "all", "mig-enabled": False, "mig-devices": {"1g.10gb": 1}}],
            1,
            "mig-devices is set but mig-enabled is false",
        ),
        ([{"devices": "all", "mig-enabled": True, "mig-devices": ["1g.10gb"]}], 1, "mig-devices must map profiles"),
        ([{"devices": "all", "mig-enabled": False, "mig-devices": []}], 1, "mig-devices must map profiles"),
        ([{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": -1}}], 1, "must be >= 0"),
        ([{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": "2"}}], 1, "must be an integer"),
        (
            [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 0}}],
            1,
            "all counts in mig-devices are 0",
        ),
        ([{"devices": "all", "mig-enabled": True, "mig-devices": {"mig-1g.10gb": 1}}], 1, "mig-devices key"),
        (
            [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb.me": 1}}],
            1,
            "inside mig-devices attributes keep the '\\+': 1g.10gb\\+me",
        ),
        (
            [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb+me": 1, "1g.10gb+me.all": 0}}],
            1,
            "does not exist on H100",
        ),
        ([{"device-filter": 233010, "devices": "all", "mig-enabled": False}], 1, "device-filter must be a string"),
        (["all"], 1, "entry 0 must be a mapping"),
        ([], 1, "must be a non-empty list"),
        ({"devices": "all"}, 1, "must be a non-empty list"),
        (layout({}), -1, "GPU count must be a non-negative integer"),
    ],
)
def test_layout_refusals(entries, gpu_count, message):
    model = find_gpu_model("NVIDIA-H100-80GB-HBM3", 81559)
    with pytest.raises(GpuShareError, match=message):
        validate_mig_layout(entries, model, gpu_count)


def test_split_layout_across_gpus():
    model = find_gpu_model("NVIDIA-H100-80GB-HBM3", 81559)
    entries = [
        {"devices": [0, 1], "mig-enabled": True, "mig-devices": {"1g.10gb": 7}},
        {"devices": [2], "mig-enabled": True, "mig-devices": {"3g.40gb": 2}},
        {"devices": [3], "mig-enabled": False},
    ]
    validate_mig_layout(entries, model, 4, "gpu-1")
    assert mig_devices_of(entries, 4) == {"1g.10gb": 14, "3g.40gb": 2}


def test_mig_devices_of_all():
    model = find_gpu_model("NVIDIA-H100-80GB-HBM3", 81559)
    assert mig_devices_of(resolve_shipped_config("all-balanced", model, 8), 8) == {
        "1g.10gb": 16,
        "2g.20gb": 8,
        "3g.40gb": 8,
    }
    assert mig_devices_of(resolve_shipped_config("all-disabled", model, 8), 8) == {}
    assert mig_devices_of(layout({"1g.10gb": 0, "7g.80gb": 1}), 2) == {"7g.80gb": 2}


@pytest.mark.parametrize(
    "name, shipped",
    [
        ("all-disabled", True),
        ("all-enabled", True),
        ("all-balanced", True),
        ("all-1g.10gb", True),
        ("all-7g.141gb", True),
        ("all-3g", False),
        ("all-everything", False),
        ("custom-split", False),
        ("1g.10gb", False),
        (None, False),
    ],
)
def test_is_shipped_config_name(name, shipped):
    assert is_shipped_config_name(name) is shipped


SHIPPED_CASES = [(m, p) for m, p in PROFILE_CASES if is_shipped_config_name("all-" + p.replace("+", "."))]


@pytest.mark.parametrize("model, profile", SHIPPED_CASES, ids=["%s/%s" % (m.name, p) for m, p in SHIPPED_CASES])
def test_resolve_all_profile_uses_max_instances(model, profile):
    device_id = model.device_ids[0]
    name = "all-" + profile.replace("+", ".")
    try:
        resolved = resolve_shipped_config(name, model, 2, device_id=device_id)
    except GpuShareError as exc:
        # The one shipped per-profile config that does not target every GPU with the profile.
        assert (name, model.name) == ("all-1g.35gb", "H200 NVL 141GB"), exc.msg
        return
    assert resolved == [{"devices": "all", "mig-enabled": True, "mig-devices": {profile: model.profiles[profile]}}]


@pytest.mark.parametrize("model", MODELS, ids=MODEL_IDS)
def test_resolve_all_enabled_and_disabled(model):
    assert resolve_shipped_config("all-enabled", model, 1) == [
        {"devices": "all", "mig-enabled": True, "mig-devices": {}}
    ]
    assert resolve_shipped_config("all-disabled", model, 1) == [
        {"devices": "all", "mig-enabled": False, "mig-devices": {}}
    ]


@pytest.mark.parametrize("model", MODELS, ids=MODEL_IDS)
def test_resolve_foreign_profile_refused(model):
    foreign = FOREIGN[model.name]
    message = "MIG config all-%s: node n1 (%s): MIG layout entry 0: MIG profile %s does not exist on %s; valid " % (
        foreign,
        model.name,
        foreign,
        model.name,
    )
    with pytest.raises(GpuShareError, match="^%s" % re.escape(message + "profiles: " + describe_mig_profiles(model))):
        resolve_shipped_config("all-" + foreign, model, 1, "n1", device_id=(model.device_ids or [None])[0])


@pytest.mark.parametrize("name", ["custom", "all-3g", None])
def test_resolve_unshipped_name_refused(name):
    with pytest.raises(GpuShareError, match="is not a config NVIDIA ships"):
        resolve_shipped_config(name, MODELS[1], 1)


EXISTING = """version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  custom-a:
    - devices: [0]
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
"""


def test_merge_keeps_other_names():
    new_layout = layout({"3g.40gb": 2})
    text, changed = build_mig_parted_config(EXISTING, "gpushare-h100", new_layout)
    assert changed is True
    data = yaml.safe_load(text)
    assert list(data) == ["version", "mig-configs"]
    assert data["version"] == "v1"
    assert data["mig-configs"]["custom-a"] == [{"devices": [0], "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
    assert data["mig-configs"]["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    assert data["mig-configs"]["gpushare-h100"] == new_layout


def test_merge_same_layout_is_unchanged():
    text, changed = build_mig_parted_config(
        EXISTING, "custom-a", [{"devices": [0], "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
    )
    assert changed is False
    assert text == EXISTING


def test_merge_replaces_a_name():
    text, changed = build_mig_parted_config(EXISTING, "custom-a", layout({"7g.80gb": 1}))
    assert changed is True
    assert yaml.safe_load(text)["mig-configs"]["custom-a"] == layout({"7g.80gb": 1})


@pytest.mark.parametrize("existing", [None, "", "  \n"])
def test_merge_into_nothing_adds_all_disabled(existing):
    text, changed = build_mig_parted_config(existing, "all-1g.10gb", layout({"1g.10gb": 7}))
    assert changed is True
    assert yaml.safe_load(text) == {
        "version": "v1",
        "mig-configs": {
            "all-1g.10gb": layout({"1g.10gb": 7}),
            "all-disabled": [{"devices": "all", "mig-enabled": False, "mig-devices": {}}],
        },
    }
    # Second run over its own output: idempotent.
    assert build_mig_parted_config(text, "all-1g.10gb", layout({"1g.10gb": 7})) == (text, False)


def test_merge_adds_missing_all_disabled():
    existing = "version: v1\nmig-configs:\n  custom-a:\n  - devices: all\n    mig-enabled: true\n    mig-devices: {}\n"
    text, changed = build_mig_parted_config(existing, "custom-a", layout({}))
    assert changed is True
    assert "all-disabled" in yaml.safe_load(text)["mig-configs"]


@pytest.mark.parametrize(
    "existing, message",
    [
        ("mig-configs: [oops", "is not valid YAML"),
        ("- a\n", "must be a YAML mapping"),
        ("version: v2\nmig-configs: {}\n", "version must be v1"),
        ("version: v1\nmig-configs: [a, b]\n", "mig-configs must map config names to layouts"),
    ],
)
def test_merge_refuses_bad_existing(existing, message):
    with pytest.raises(GpuShareError, match=message):
        build_mig_parted_config(existing, "x", layout({}))


def test_devices_all_or_absent_is_every_gpu_and_a_list_only_the_gpus_that_exist():
    assert gpu_indices({"devices": "all"}, 3) == [0, 1, 2]
    assert gpu_indices({}, 2) == [0, 1]  # mig-parted's default
    assert gpu_indices({"devices": [2, 0, 5]}, 3) == [2, 0]
