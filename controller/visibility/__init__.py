"""Kueue's visibility API (``visibility.kueue.x-k8s.io``), served by the controller process as an
aggregated API: pending workloads of a ClusterQueue or LocalQueue with their positions.
See docs/design/visibility.md."""
