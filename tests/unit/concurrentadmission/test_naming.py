"""Option names: ``<parent>-option-<suffix>``, deterministic, bounded, keeping ``-option-``."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from controller.concurrentadmission.naming import MAX_NAME_LENGTH, option_name

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def test_short_names_are_plain() -> None:
    assert option_name("job-train-3f2a1", "spot") == "job-train-3f2a1-option-spot"


def test_long_parent_is_truncated_with_a_hash_and_keeps_the_suffix() -> None:
    parent = "job-" + "x" * 300
    name = option_name(parent, "reservation")
    assert len(name) == MAX_NAME_LENGTH
    assert name.endswith("-option-reservation")
    assert name.startswith("job-xxxx")
    assert DNS1123_SUBDOMAIN.match(name)


def test_truncation_is_deterministic_and_distinguishes_parents_sharing_a_prefix() -> None:
    a, b = "p" * 300 + "a", "p" * 300 + "b"
    assert option_name(a, "spot") == option_name(a, "spot")
    assert option_name(a, "spot") != option_name(b, "spot")


def test_a_tighter_bound_still_keeps_the_option_marker() -> None:
    name = option_name("job-a-very-long-training-job-name-abcde", "on-demand", max_length=63)
    assert len(name) <= 63
    assert name.endswith("-option-on-demand")


def test_an_over_long_suffix_is_cut_and_hashed_as_a_last_resort() -> None:
    name = option_name("parent", "f" * 300)
    assert len(name) <= MAX_NAME_LENGTH
    assert "-option-" in name


def test_a_cut_that_lands_on_separators_drops_them() -> None:
    parent = "a" * 226 + "-." * 30  # the cut falls inside the run of separators
    name = option_name(parent, "spot")
    assert len(name) <= MAX_NAME_LENGTH
    assert "-." not in name and ".-" not in name and "--" not in name
    assert DNS1123_SUBDOMAIN.match(name)


@given(
    parent=st.from_regex(r"[a-z0-9]([-a-z0-9]{0,300}[a-z0-9])?", fullmatch=True),
    suffix=st.from_regex(r"[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?", fullmatch=True),
)
def test_every_name_is_a_valid_bounded_object_name(parent: str, suffix: str) -> None:
    name = option_name(parent, suffix)
    assert len(name) <= MAX_NAME_LENGTH
    assert name.endswith(f"-option-{suffix}")
    assert DNS1123_SUBDOMAIN.match(name), name
