"""ConfigMaps the collection does not own, named as ``config_map``: gpu_timeslicing, gpu_mps and gpu_mig_config refuse
each before any write, for real and in check mode, with a message naming the ConfigMap, why it is not theirs (each
owner, each key that is not a config of the kind they write) and what to do.

Four kinds: ``kube-root-ca.crt`` (Kubernetes publishes it in every namespace), one a DaemonSet owns (holding nothing
but a config), an application's settings, and the GPU Operator's own ``default-mig-parted-config`` (the ClusterPolicy
is its controller, as NVIDIA's operator creates it). Written into, each would have been named in the ClusterPolicy and
every GPU node would have lost its sharing. On Scaleway the operator's namespace is ``kube-system``, where such
ConfigMaps abound.
"""

import pytest

pytestmark = pytest.mark.profiles("openshift", "scaleway")

DAEMONSET_OWNER = "nvidia-dcgm-exporter"


def kube_root_ca(kube):
    """Kubernetes' own: the cluster CA under ca.crt, in every namespace."""
    return "kube-root-ca.crt", {
        "gpu_timeslicing": ["key ca.crt is not a device-plugin config: it holds a string"],
        "gpu_mps": ["key ca.crt is not a device-plugin config: it holds a string"],
        "gpu_mig_config": ["key ca.crt is not a mig-parted config file: it holds a string"],
        "all": ["remove or fix key(s) ca.crt"],
    }


def owned_by_a_daemonset(kube):
    """Holds only what is a config of either kind; a DaemonSet is its controller."""
    daemonset = kube.apps.read_namespaced_daemon_set(DAEMONSET_OWNER, kube.namespace).to_dict()
    body = {
        "metadata": {
            "name": "dcgm-exporter-profiles",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": DAEMONSET_OWNER,
                    "uid": daemonset["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": {"config.yaml": "version: v1\n"},
    }
    kube.core.create_namespaced_config_map(kube.namespace, body)
    return "dcgm-exporter-profiles", {
        "all": ["it is owned by DaemonSet/%s (its controller)." % DAEMONSET_OWNER, "remove its ownerReferences."]
    }


def application_settings(kube):
    kube.put_config_map("web-app-settings", {"application.yaml": "server:\n  port: 8080\n", "LOG_LEVEL": "debug"})
    return "web-app-settings", {
        "gpu_timeslicing": [
            "key LOG_LEVEL is not a device-plugin config: it holds a string",
            "key application.yaml is not a device-plugin config: server is not among its fields",
        ],
        "gpu_mps": ["key LOG_LEVEL is not a device-plugin config", "key application.yaml is not a device-plugin"],
        "gpu_mig_config": [
            "key LOG_LEVEL is not a mig-parted config file: it holds a string",
            "key application.yaml is not a mig-parted config file: server is not among its fields",
        ],
        "all": ["remove or fix key(s) LOG_LEVEL, application.yaml"],
    }


def the_operators_mig_config_map(kube):
    owner = "it is owned by ClusterPolicy/%s (its controller)" % kube.profile.policy_name
    device_plugin = [owner, "key config.yaml is not a device-plugin config: mig-configs is not among its fields"]
    return "default-mig-parted-config", {
        "gpu_timeslicing": device_plugin,
        "gpu_mps": device_plugin,
        "gpu_mig_config": [owner + ". ", ", remove its ownerReferences."],
    }


def module_args(kube, config_map):
    node = kube.gpu_nodes()[0]
    layout = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 1}}]
    return {
        "gpu_timeslicing": dict(replicas=2, config_map=config_map, nodes={"names": [node]}),
        "gpu_mps": dict(replicas=2, config_map=config_map, nodes={"names": [node]}),
        "gpu_mig_config": dict(
            layout=layout,
            config_name="foreign-config-map",
            config_map=config_map,
            nodes={"names": [kube.mig_capable_nodes()[0]]},
        ),
    }


@pytest.mark.parametrize("check", [False, True], ids=["real", "check-mode"])
@pytest.mark.parametrize(
    "foreign", [kube_root_ca, owned_by_a_daemonset, application_settings, the_operators_mig_config_map]
)
def test_each_module_refuses_a_config_map_it_does_not_own_before_any_write(
    kube, run_module, audit_writes, foreign, check
):
    config_map, fragments = foreign(kube)
    before = kube.config_map(config_map)
    with audit_writes() as audit:
        results = dict(
            (module, run_module(module, args, check=check)) for module, args in module_args(kube, config_map).items()
        )

    for module, result in results.items():
        message = result.get("msg", "")
        assert result.get("failed"), (module, result)
        assert "Traceback" not in message and "MODULE FAILURE" not in message, (module, message)
        kind = "mig-parted config files" if module == "gpu_mig_config" else "device-plugin configs"
        assert message.startswith("Will not write %s into ConfigMap %s/%s: " % (kind, kube.namespace, config_map))
        assert "choose another config_map" in message, (module, message)
        for fragment in fragments.get(module, []) + fragments.get("all", []):
            assert fragment in message, (module, fragment, message)
    assert audit.writes == [], audit.summary()
    assert kube.config_map(config_map) == before
