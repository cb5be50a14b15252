"""batch/v1 Job integration: the job side of Kueue's job framework.

A managed Job is represented by exactly one Workload that it owns. This package turns the Job
into that Workload (:mod:`.compose`), starts the Job when the Workload is admitted and stops it
when the Workload is evicted (:mod:`.podsets`), and ties it together in :mod:`.reconciler`. What
the Job's progress means for its Workload's status (``PodsReady``, ``Finished``, releasing quota)
is decided in :mod:`controller.workload.lifecycle`, next to every other Workload decision.

Everything except the reconciler is pure: plain JSON dicts in, plain JSON dicts (objects or
patches) out, so the decisions are unit-tested without a cluster.
"""
