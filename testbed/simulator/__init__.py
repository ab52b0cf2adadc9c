"""A simulator of what NVIDIA's GPU operator (device plugin, GFD, mig-manager) and the kubelet do,
as a user of the Kubernetes API sees it. See docs/DESIGN.md, "The simulator's contract"."""
