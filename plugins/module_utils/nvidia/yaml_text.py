# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""YAML in and out of the ConfigMaps NVIDIA's components read (device-plugin config, mig-parted config)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    import yaml

    HAS_YAML = True
except ImportError:
    HAS_YAML = False

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError


def _require_yaml():
    if not HAS_YAML:
        raise GpuShareError("The PyYAML Python library is required on the host running this module: pip install PyYAML")


def load_yaml_mapping(text, what):
    """Parse YAML ``text`` that must hold a mapping; ``what`` names it in errors. Shared with mig_layout."""
    _require_yaml()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise GpuShareError("%s is not valid YAML: %s" % (what, exc))
    if not isinstance(data, dict):
        raise GpuShareError(
            "%s must be a YAML mapping, got %s" % (what, "nothing" if data is None else type(data).__name__)
        )
    return data


def dump_config(config):
    """YAML text of a config mapping: block style, keys in insertion order. Shared with mig_layout."""
    _require_yaml()
    return yaml.safe_dump(config, default_flow_style=False, sort_keys=False)
