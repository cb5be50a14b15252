"""The ProvisioningRequest admission check (Kueue's ``pkg/controller/admissionchecks/provisioning``,
KEP-1136): capacity asked of the cluster-autoscaler before a workload with quota is admitted.

Pure decisions live in :mod:`.naming`, :mod:`.config`, :mod:`.requests` and :mod:`.checkstate`;
:mod:`.controller` reads the informers, applies the decisions and writes; :mod:`.setup` plugs it
into the controller process. See ``docs/design/provisioning.md``.
"""
