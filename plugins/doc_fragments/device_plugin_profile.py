# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Options shared by the modules that write a device-plugin sharing profile (time-slicing, MPS).
    DOCUMENTATION = r"""
options:
  state:
    description:
      - C(present) writes the profile and applies it to the chosen nodes.
      - C(absent) removes the profile from the chosen nodes (their C(nvidia.com/device-plugin.config)
        label), or, when I(nodes) is not given, from every node, from the ConfigMap and from the
        policy default.
    type: str
    choices: [present, absent]
    default: present
  replicas:
    description:
      - How many pods may share each GPU. Must be 2 or more (the device plugin rejects 0 and 1).
      - Required when I(state=present).
    type: int
  rename_by_default:
    description:
      - Advertise the shared resource as C(nvidia.com/gpu.shared) instead of C(nvidia.com/gpu), so
        that pods opt in to sharing explicitly. The plain resource's allocatable drops to 0.
    type: bool
    default: false
  fail_requests_greater_than_one:
    description:
      - Reject pods that request more than one replica of a shared GPU (they would not get more
        compute, only more of the same GPU).
      - Not written when omitted; MPS then behaves as if it were true.
    type: bool
  config_map:
    description:
      - ConfigMap in the operator's namespace that holds the device-plugin profiles.
      - Default is the one the ClusterPolicy names in C(spec.devicePlugin.config.name), else
        C(time-slicing-config). Other keys of the ConfigMap are never touched.
      - One that does not exist is created. An existing one is used only when nothing owns it (no
        C(metadata.ownerReferences)) and each of its keys holds a device-plugin config (a YAML mapping of
        C(version), C(flags), C(resources), C(sharing) and C(imex) that the device plugin accepts, or an empty
        document; other users' profiles are kept, and keys the collection added are its own). Otherwise the module
        fails before any write, in check mode too, naming each owner and key, so that a ConfigMap such as
        C(kube-root-ca.crt), one a controller owns or an application's settings is never taken over (the device
        plugin would then read none of it, and every GPU node would lose its sharing).
    type: str
  config_key:
    description:
      - Name of the profile, the ConfigMap key and the value of the nodes' C(nvidia.com/device-plugin.config) label.
    type: str
  nodes:
    description:
      - The nodes to label with the profile. Give I(names), a label I(selector), or both.
      - With I(state=present), either I(nodes) or I(make_default=true) is required.
    type: dict
  make_default:
    description:
      - Make the profile the ClusterPolicy's default (C(spec.devicePlugin.config.default)), which
        applies to every GPU node without a C(nvidia.com/device-plugin.config) label.
    type: bool
    default: false
  restart_device_plugin:
    description:
      - Restart the device-plugin DaemonSet (as C(kubectl rollout restart) does) after writing.
      - Default restarts only when nodes already using the profile would otherwise not see its
        new content (the plugin does not reload an edited ConfigMap by itself).
    type: bool
  force:
    description:
      - Change the nodes' profile even while GPU pods run on them. The device plugin restarts under them;
        their containers keep the devices they were given.
      - Set C(false) to refuse instead while GPU pods run on a node whose profile changes (Scaleway asks for no
        reconfiguration while GPU jobs run), or use O(drain).
    type: bool
    default: true
  drain:
    description:
      - When GPU pods run on a node whose profile changes, cordon the changing nodes, evict those pods through
        the Eviction API (PodDisruptionBudgets respected), wait until they are gone, make the change and
        uncordon the nodes once it succeeded. A node whose change fails or times out stays cordoned.
    type: bool
    default: false
  wait:
    description:
      - Wait until every affected node advertises the profile (labels and allocatable resources).
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait. On timeout the module fails and lists what each node still shows.
    type: int
    default: 300
"""

    # What both profile modules return about the profile: tools/gen_docs.py writes it into their RETURN (an extended
    # RETURN fragment breaks ansible-doc before 2.20, ansible/ansible#85644).
    RETURN = r"""
config_map:
  description: The device-plugin ConfigMap.
  returned: always
  type: str
  sample: time-slicing-config
config_key:
  description: The profile's key in the ConfigMap.
  returned: always
  type: str
  sample: time-slicing
restarted:
  description: Whether the device-plugin DaemonSet was (or in check mode would be) restarted.
  returned: always
  type: bool
"""
