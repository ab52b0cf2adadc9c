"""A simulator of what NVIDIA's GPU operator and its operands, and the kubelet, do, as a user of the
Kubernetes API sees it. See docs/DESIGN.md, "The simulator's contract".

One module per component it stands in for: ``gpu_operator`` (ClusterPolicy rollout),
``device_plugin``, ``gpu_feature_discovery``, ``mig_manager``, ``mig_parted``, ``nvml`` (the GPUs
themselves, from ``testbed/nvidia_data/``) and ``kubelet``; ``nodes`` runs a node's operands,
``simulator`` wires informers, a work queue and workers.
"""
