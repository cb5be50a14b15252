"""Core controllers: the scheduler loop around the admission engine and the Workload,
ClusterQueue, LocalQueue and AdmissionCheck controllers.

What a workload's status must become is decided in :mod:`controller.workload`, and what a queue's
status is in :mod:`.queue_status`; both are pure so they are unit tested without a cluster. The
controllers here glue that logic to informers, the engine and :mod:`pykueue.kube`.
"""
