"""MultiKueue: one manager cluster dispatching Workloads (and their batch Jobs) to worker clusters.

See docs/design/multikueue.md. Modules: :mod:`.kubeconfig` (which kubeconfigs are accepted),
:mod:`.clusters` (a client per MultiKueueCluster and its ``Active`` condition),
:mod:`.admissioncheck` (the ``Active`` condition of MultiKueue AdmissionChecks), :mod:`.dispatch`
(pure decisions: remote copies, the winner), :mod:`.workload` (the dispatch loop), :mod:`.gc`
(orphans on workers), :mod:`.setup` (wiring).
"""
