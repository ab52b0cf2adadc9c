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


def load_yaml_document(text, what):
    """Parse YAML ``text`` into whatever it holds (None when empty); ``what`` names it in errors."""
    _require_yaml()
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise GpuShareError("%s is not valid YAML: %s" % (what, _yaml_problem(exc)))


def _yaml_problem(exc):
    """PyYAML's error on one line: what is wrong and where (its own text spans lines and quotes the input)."""
    mark = getattr(exc, "problem_mark", None)
    if getattr(exc, "problem", None) and mark is not None:
        return "%s (line %d, column %d)" % (exc.problem, mark.line + 1, mark.column + 1)
    return " ".join(str(exc).split())


def yaml_type_name(value):
    """What a parsed YAML value is, for messages: "a string", "a list"..."""
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "null" if value is None else type(value).__name__


def document_shape_problem(document, fields, where, what):
    """Why a parsed ``document`` cannot be ``what`` (e.g. "a device-plugin config"): not a mapping, or a field
    outside ``fields``; None when it is empty or a mapping of those fields only. Messages name ``where``."""
    if document is None:
        return None
    if not isinstance(document, dict):
        return "%s is not %s: it holds %s, not a mapping of %s" % (
            where,
            what,
            yaml_type_name(document),
            ", ".join(fields),
        )
    foreign = sorted(str(field) for field in document if field not in fields)
    if foreign:
        return "%s is not %s: %s %s not among its fields (%s)" % (
            where,
            what,
            ", ".join(foreign),
            "is" if len(foreign) == 1 else "are",
            ", ".join(fields),
        )
    return None


def load_yaml_mapping(text, what):
    """Parse YAML ``text`` that must hold a mapping; ``what`` names it in errors. Shared with mig_layout."""
    data = load_yaml_document(text, what)
    if not isinstance(data, dict):
        raise GpuShareError(
            "%s must be a YAML mapping, got %s" % (what, "nothing" if data is None else type(data).__name__)
        )
    return data


def dump_config(config):
    """YAML text of a config mapping: block style, keys in insertion order. Shared with mig_layout."""
    _require_yaml()
    return yaml.safe_dump(config, default_flow_style=False, sort_keys=False)
