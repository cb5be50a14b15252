"""The apiserver's JSON is decoded by orjson, and by the standard library where orjson refuses."""

from __future__ import annotations

import json

import pytest

from pykueue.kube import wirejson


def test_an_object_decodes_to_the_same_dict_as_the_standard_library() -> None:
    raw = json.dumps(
        {"type": "MODIFIED", "object": {"metadata": {"name": "w", "labels": {"a": "ü"}}, "spec": {"n": 2**62}}}
    ).encode()
    assert wirejson.loads(raw) == json.loads(raw)
    assert wirejson.loads(raw.decode()) == json.loads(raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # A lone surrogate escape in a user's string field: orjson refuses the document.
        (b'{"note": "\\ud800"}', {"note": "\ud800"}),
        # Beyond the range of a double: orjson refuses, the standard library gives infinity.
        (b'{"big": 1e400}', {"big": float("inf")}),
    ],
)
def test_documents_orjson_refuses_are_decoded_all_the_same(raw: bytes, expected: dict[str, object]) -> None:
    assert wirejson.loads(raw) == expected


@pytest.mark.parametrize("raw", [b"{", b'{"a": }', b"not json", b""])
def test_invalid_json_raises_value_error(raw: bytes) -> None:
    with pytest.raises(ValueError):
        wirejson.loads(raw)
