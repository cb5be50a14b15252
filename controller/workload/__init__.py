"""Everything the controllers share about a Workload (modelled on Kueue's ``pkg/workload``).

The scheduler loop (:mod:`controller.core`), the Job integration (:mod:`controller.jobs`) and
concurrent admission (:mod:`controller.concurrentadmission`) all read Workloads and decide what
their status becomes next. Those decisions live here, once, as pure functions over plain dicts:

* :mod:`.view` -- tolerant read-only accessors (a hand-written object never raises);
* :mod:`.status_plan` -- the value objects a decision produces (:class:`WorkloadPlan`);
* :mod:`.decisions` -- the workload controller's next step (deactivation, admission checks,
  PodsReady timeout, requeue backoff);
* :mod:`.scheduling_patches` -- what a scheduling cycle's reservation, preemption, eviction or
  pending reason writes;
* :mod:`.admissionchecks` -- ``status.admissionChecks`` states and their verdict;
* :mod:`.lifecycle`, :mod:`.podsready` -- what a job's progress means for its Workload
  (``Finished``, ``PodsReady``, releasing quota once the pods are gone, back to pending);
* :mod:`.requeue_backoff` -- requeue delays after evictions;
* :mod:`.patches` -- a plan as a resourceVersion-guarded merge patch, only when something changes;
* :mod:`.indexes` -- the store indexes that find a queue's or a parent's workloads.

Nothing here does I/O; the controllers read stores, call these functions and write the result.
"""
