"""FieldError renders exactly like apimachinery's field errors, because users compare them."""

import pytest

from pykueue.api.validation import FieldError, aggregate_message, path_of


@pytest.mark.parametrize(
    ("err", "text"),
    [
        (FieldError.duplicate("spec.x[1].name", "spot"), 'spec.x[1].name: Duplicate value: "spot"'),
        (FieldError.required("spec.cohort"), "spec.cohort: Required value"),
        (FieldError.invalid("spec.q", -1, "must be greater than or equal to 0"),
         "spec.q: Invalid value: -1: must be greater than or equal to 0"),
        (FieldError.not_supported("spec.p", "Foo", ["A", "B"]),
         'spec.p: Unsupported value: "Foo": supported values: "A", "B"'),
        (FieldError.forbidden("spec.c", "not allowed with StrictFIFO"), "spec.c: Forbidden: not allowed with StrictFIFO"),
        (FieldError.too_many("spec.l", 17, 16), "spec.l: Too many: 17: must have at most 16 items"),
        (FieldError.too_long("metadata.name", 63), "metadata.name: Too long: may not be more than 63 bytes"),
        (FieldError.invalid("spec.o", {"a": 1}, "bad"), 'spec.o: Invalid value: "object": bad'),
    ],
)
def test_rendering(err: FieldError, text: str) -> None:
    assert str(err) == text


def test_path_of_mixes_names_and_indexes() -> None:
    assert path_of(["spec", "resourceGroups", 0, "flavors", 2, "name"]) == "spec.resourceGroups[0].flavors[2].name"


def test_aggregate_message_single_repeated_and_many() -> None:
    # apimachinery's aggregate Error(): one error bare, repeats dropped, several in brackets.
    a, b = FieldError.required("spec.a"), FieldError.required("spec.b")
    assert aggregate_message([a]) == "spec.a: Required value"
    assert aggregate_message([a, a]) == "spec.a: Required value"
    assert aggregate_message([a, b, a]) == "[spec.a: Required value, spec.b: Required value]"
