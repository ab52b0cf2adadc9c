# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia/device_plugin_config: the device plugin's config (build, validate, parse), resource names and the MPS client
limit, with the table of the reference's device-plugin-rules.md
(NVIDIA/k8s-device-plugin@1b826acc6af3079d8923bac395c3124b8861a9a6)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    KUBELET_DEVICE_LIST_LIMIT_BYTES,
    build_sharing_config,
    check_devices_field,
    device_list_bytes,
    mig_profile_of_resource,
    most_replicas_advertised,
    mps_max_clients,
    normalize_resource_name,
    parse_sharing_config,
    sharing_method_of,
    validate_sharing_config,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.yaml_text import dump_config


def test_compute_instance_resources_are_not_advertised():
    """device-plugin-rules.md, resource names: only profiles with C == G become mixed-strategy resources."""
    assert mig_profile_of_resource("nvidia.com/mig-1c.2g.10gb") is None


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


def test_build_time_slicing_default():
    config = build_sharing_config("time-slicing", 4)
    assert config == {
        "version": "v1",
        "sharing": {
            "timeSlicing": {"renameByDefault": False, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}
        },
    }


def test_build_mps_full():
    config = build_sharing_config(
        "mps", 10, ["gpu"], rename_by_default=True, fail_requests_greater_than_one=True, mig_strategy="single"
    )
    assert config == {
        "version": "v1",
        "flags": {"migStrategy": "single"},
        "sharing": {
            "mps": {
                "renameByDefault": True,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 10}],
            }
        },
    }


def test_build_time_slicing_mixed_mig_resources():
    config = build_sharing_config(
        "time-slicing",
        2,
        ["nvidia.com/gpu", "mig-1g.10gb", {"name": "mig-3g.40gb", "replicas": 3}],
        mig_strategy="mixed",
    )
    assert config["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/gpu", "replicas": 2},
        {"name": "nvidia.com/mig-1g.10gb", "replicas": 2},
        {"name": "nvidia.com/mig-3g.40gb", "replicas": 3},
    ]


def test_dump_is_deterministic_and_ordered():
    config = build_sharing_config("time-slicing", 4, mig_strategy="none", fail_requests_greater_than_one=False)
    text = dump_config(config)
    assert text == (
        "version: v1\n"
        "flags:\n"
        "  migStrategy: none\n"
        "sharing:\n"
        "  timeSlicing:\n"
        "    renameByDefault: false\n"
        "    failRequestsGreaterThanOne: false\n"
        "    resources:\n"
        "    - name: nvidia.com/gpu\n"
        "      replicas: 4\n"
    )
    assert parse_sharing_config(text) == config
    assert dump_config(parse_sharing_config(text)) == text


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"method": "vgpu", "replicas": 4}, "Sharing method must be one of time-slicing, mps"),
        ({"method": "time-slicing", "replicas": 1}, "must be an integer >= 2, got 1"),
        ({"method": "time-slicing", "replicas": 0}, "must be an integer >= 2, got 0"),
        ({"method": "mps", "replicas": 1}, "must be an integer >= 2, got 1"),
        ({"method": "time-slicing", "replicas": "4"}, "must be an integer >= 2, got '4'"),
        ({"method": "time-slicing", "replicas": True}, "must be an integer >= 2, got True"),
        ({"method": "time-slicing", "replicas": 4, "resources": []}, "no resources specified"),
        ({"method": "time-slicing", "replicas": 4, "resources": "gpu"}, "resources must be a list"),
        (
            {"method": "time-slicing", "replicas": 4, "resources": [{"replicas": 2}]},
            r"resources\[0\]\.name: name is required",
        ),
        (
            {"method": "time-slicing", "replicas": 4, "resources": ["gpu", "nvidia.com/gpu"]},
            "nvidia.com/gpu is listed twice",
        ),
        ({"method": "time-slicing", "replicas": 4, "resources": ["mig-1g.10gb+me"]}, "incorrect format"),
        ({"method": "mps", "replicas": 49}, "at most 48 clients per GPU"),
        ({"method": "mps", "replicas": 4, "resources": ["mig-1g.10gb"]}, "MPS can share only nvidia.com/gpu"),
        ({"method": "mps", "replicas": 4, "mig_strategy": "mixed"}, "change the MIG strategy to single or none"),
        (
            {"method": "time-slicing", "replicas": 4, "mig_strategy": "auto"},
            "flags.migStrategy: unknown MIG strategy",
        ),
        (
            {"method": "time-slicing", "replicas": 4, "rename_by_default": "yes"},
            "renameByDefault must be true or false",
        ),
        (
            {"method": "mps", "replicas": 4, "fail_requests_greater_than_one": "no"},
            "failRequestsGreaterThanOne must be true or false",
        ),
    ],
)
def test_build_refusals(kwargs, message):
    with pytest.raises(GpuShareError, match=message):
        build_sharing_config(**kwargs)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "version: v1\n",
        "flags:\n  migStrategy: single\n",
        "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 2\n",
        "sharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 10\n",
        "version: v1\nflags: {migStrategy: mixed}\nsharing:\n  timeSlicing:\n    renameByDefault: true\n"
        "    resources:\n    - {name: nvidia.com/mig-1g.10gb, replicas: 2}\n    - {name: nvidia.com/mig-2g.20gb, "
        "replicas: 3}\n",
    ],
)
def test_validate_accepts(text):
    validate_sharing_config(parse_sharing_config(text) if text else {})


@pytest.mark.parametrize(
    "config, message",
    [
        ([], "must be a mapping, got list"),
        ({"version": "v2"}, "version must be v1"),
        ({"flags": "mixed"}, "flags must be a mapping"),
        ({"sharing": []}, "sharing must be a mapping"),
        (
            {
                "sharing": {
                    "timeSlicing": {"resources": [{"name": "gpu", "replicas": 2}]},
                    "mps": {"resources": [{"name": "gpu", "replicas": 2}]},
                }
            },
            "sets both timeSlicing and mps",
        ),
        ({"sharing": {"timeSlicing": "yes"}}, r"sharing\.timeSlicing: no resources specified"),
        ({"sharing": {"timeSlicing": {"renameByDefault": False}}}, "no resources specified"),
        ({"sharing": {"timeSlicing": {}}}, "no resources specified"),
        ({"sharing": {"timeSlicing": None}}, r"sharing\.timeSlicing: no resources specified"),
        ({"sharing": {"mps": {}}}, r"sharing\.mps\.resources: no resources specified"),
        ({"sharing": {"timeSlicing": {"resources": []}}}, "no resources specified"),
        ({"sharing": {"timeSlicing": {"resources": ["nvidia.com/gpu"]}}}, r"resources\[0\] must be a mapping"),
        (
            {"sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu"}]}}},
            "no replicas specified",
        ),
        (
            {"sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 1}]}}},
            "must be an integer >= 2, got 1",
        ),
        (
            {"sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 0}]}}},
            "must be an integer >= 2, got 0",
        ),
        (
            {"flags": {"migStrategy": "mixed"}, "sharing": {"mps": {"resources": [{"name": "gpu", "replicas": 2}]}}},
            "change the MIG strategy to single or none",
        ),
        (
            {"sharing": {"mps": {"resources": [{"name": "nvidia.com/mig-1g.10gb", "replicas": 2}]}}},
            "MPS can share only nvidia.com/gpu",
        ),
        (
            {
                "sharing": {
                    "timeSlicing": {
                        "resources": [{"name": "gpu", "replicas": 2}, {"name": "nvidia.com/gpu", "replicas": 4}]
                    }
                }
            },
            "listed twice",
        ),
    ],
)
def test_validate_refusals(config, message):
    with pytest.raises(GpuShareError, match=message):
        validate_sharing_config(config)


def test_validate_names_the_source():
    with pytest.raises(
        GpuShareError, match=r"^ConfigMap time-slicing-config key 'a100': sharing\.timeSlicing\.resources\[0\]"
    ):
        validate_sharing_config(
            {"sharing": {"timeSlicing": {"resources": [{"name": "gpu", "replicas": 1}]}}},
            "ConfigMap time-slicing-config key 'a100'",
        )


@pytest.mark.parametrize(
    "text, message",
    [
        ("sharing: [unclosed", "is not valid YAML"),
        ("- a\n- b\n", "must be a YAML mapping, got list"),
        ("", "must be a YAML mapping, got nothing"),
        ("just text", "must be a YAML mapping, got str"),
        ("version: v2\n", "version must be v1"),
        ("version: 1\n", "version must be v1"),
    ],
)
def test_parse_refusals(text, message):
    with pytest.raises(GpuShareError, match=message):
        parse_sharing_config(text)


def test_parse_accepts_empty_version():
    assert parse_sharing_config("version: ''\nflags: {migStrategy: none}\n") == {
        "version": "",
        "flags": {"migStrategy": "none"},
    }


@pytest.mark.parametrize(
    "config, method",
    [
        ({}, None),
        ({"version": "v1"}, None),
        (build_sharing_config("time-slicing", 4), "time-slicing"),
        (build_sharing_config("mps", 4), "mps"),
        ({"sharing": {"timeSlicing": {"resources": [{"name": "gpu", "replicas": 1}]}}}, None),
        ({"sharing": {"timeSlicing": {}}}, None),
        # Both set: the plugin uses MPS.
        (
            {
                "sharing": {
                    "timeSlicing": {"resources": [{"name": "gpu", "replicas": 4}]},
                    "mps": {"resources": [{"name": "gpu", "replicas": 2}]},
                }
            },
            "mps",
        ),
        ("not a config", None),
    ],
)
def test_sharing_method_of(config, method):
    assert sharing_method_of(config) == method


@pytest.mark.parametrize(
    "name, normalized",
    [("gpu", "nvidia.com/gpu"), ("nvidia.com/gpu", "nvidia.com/gpu"), ("mig-1g.10gb", "nvidia.com/mig-1g.10gb")],
)
def test_normalize_resource_name(name, normalized):
    assert normalize_resource_name(name) == normalized


@pytest.mark.parametrize("devices", [1, 2, 7, 8, 16])
def test_most_replicas_advertised_is_the_kubelet_limit(devices):
    most = most_replicas_advertised(devices)
    assert device_list_bytes(devices * most) <= KUBELET_DEVICE_LIST_LIMIT_BYTES
    assert device_list_bytes(devices * (most + 1)) > KUBELET_DEVICE_LIST_LIMIT_BYTES


def test_device_list_size_grows_with_the_replica_numbers_digits():
    # Replica numbers 0-9 take one digit, 10-99 two.
    assert device_list_bytes(10) == 10 * 56
    assert device_list_bytes(11) == 10 * 56 + 57
    # 20,000 devices (8 GPUs x 2,500) fit; 8 GPUs x 10,000 do not.
    assert device_list_bytes(20000) < KUBELET_DEVICE_LIST_LIMIT_BYTES < device_list_bytes(80000)
