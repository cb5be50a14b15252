"""Core controllers: the scheduler loop around the admission engine and the Workload,
ClusterQueue, LocalQueue and AdmissionCheck controllers.

The pure decision logic (what a workload's status must become, what a queue's status is) lives in
small modules with no I/O so it can be unit tested without a cluster; the controllers glue that
logic to informers, the engine and :mod:`pykueue.kube`.
"""
