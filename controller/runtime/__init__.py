"""The controller runtime: reflectors and informers over raw watch streams, a thread-safe store
with indexers, rate-limited work queues and the worker loop around them, the process's one Event
recorder, Lease leader election, and the health/metrics server.

The threading model and the guarantees are described in ``docs/design/runtime.md``.
"""
