"""Concurrent admission (docs/design/concurrent-admission.md): a Parent workload pursues several flavors at once
through Option workloads, one of which at most holds quota at any instant.

Pure logic (no I/O, unit tested): :mod:`.naming` (option names), :mod:`.option_specs` (the
ClusterQueue's options in preference order and its ``onSuccess`` policy), :mod:`.plan` (what a
parent's options must be right now and what its ``status.options`` says), :mod:`.option_workloads`
(the option Workload built from its parent), :mod:`.jobview` (which option a parent's Job
follows). :mod:`.controller` applies plans through the API; the scheduling side (preference
order, migration, one preemptor per parent) lives in :mod:`controller.engine.options`.
``docs/design/concurrent-admission.md`` describes the state machine and its invariants.
"""
