"""The client's resource descriptors agree with the API registry the CRDs are generated from.

``pykueue.kube.resources`` spells plural and scope for the REST paths; ``pykueue.api.schema``
spells them for the CRDs. A kind added to one and not the other, or a scope that differs, would
give 404s at run time only; this test finds it first.
"""

from __future__ import annotations

from pykueue.api.constants import AUTOSCALING_GROUP, GROUP, VERSION
from pykueue.api.schema import KINDS, TEST_KINDS
from pykueue.kube.resources import ALL_RESOURCES


def test_every_api_kind_has_a_matching_resource() -> None:
    served = {
        resource.kind: resource
        for resource in ALL_RESOURCES
        if resource.group in (GROUP, AUTOSCALING_GROUP)
    }
    for info in [*KINDS.values(), *TEST_KINDS.values()]:
        resource = served.get(info.kind)
        assert resource is not None, f"no Resource for {info.kind}"
        assert (resource.plural, resource.namespaced) == (info.plural, info.namespaced), info.kind
    assert {r.kind for r in ALL_RESOURCES if r.group == GROUP} == set(KINDS)
    assert all(r.version == VERSION for r in ALL_RESOURCES if r.group == GROUP)


def test_resources_are_unique() -> None:
    assert len({(r.group, r.plural) for r in ALL_RESOURCES}) == len(ALL_RESOURCES)
