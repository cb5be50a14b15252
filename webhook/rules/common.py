"""Building blocks shared by the per-kind rules: name formats, labels, selectors, quantities.

Messages follow k8s.io/apimachinery/pkg/util/validation so users see the words they already know
from the apiserver ("a lowercase RFC 1123 label must consist of ...").

Every helper tolerates any JSON value where it expects a particular type: type errors belong to the
structural schema, and a semantic rule must never raise on a badly typed object (it would turn a
user's typo into an internal-error denial).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pykueue.api import constants as c
from pykueue.api.objects import dict_or_empty, list_or_empty
from pykueue.api.validation import FieldError, join_path

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
QUALIFIED_NAME_MAX = 63

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

DNS1123_LABEL_HELP = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
DNS1123_SUBDOMAIN_HELP = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
QUALIFIED_NAME_HELP = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character"
)
LABEL_VALUE_HELP = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)


# The rules' spelling of pykueue.api.objects' tolerant accessors.
as_dict = dict_or_empty
as_list = list_or_empty


def enumerate_dicts(value: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(index, item)`` for each object in a list, skipping items of the wrong type."""
    for index, item in enumerate(as_list(value)):
        if isinstance(item, dict):
            yield index, item


def _dns_name_errors(path: str, value: Any, max_length: int, pattern: re.Pattern[str], help_text: str) -> list[FieldError]:
    """Both DNS-1123 checks report, like the apiserver, the length and the format separately."""
    if not isinstance(value, str) or value == "":
        return [FieldError.required(path)]
    errors: list[FieldError] = []
    if len(value) > max_length:
        errors.append(FieldError.invalid(path, value, f"must be no more than {max_length} characters"))
    if not pattern.match(value):
        errors.append(FieldError.invalid(path, value, help_text))
    return errors


def dns1123_label_errors(path: str, value: Any) -> list[FieldError]:
    return _dns_name_errors(path, value, DNS1123_LABEL_MAX, _DNS1123_LABEL, DNS1123_LABEL_HELP)


def dns1123_subdomain_errors(path: str, value: Any) -> list[FieldError]:
    return _dns_name_errors(path, value, DNS1123_SUBDOMAIN_MAX, _DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_HELP)


def qualified_name_errors(path: str, value: Any) -> list[FieldError]:
    """A label key / resource name: optional DNS-subdomain prefix, ``/``, and a name part."""
    if not isinstance(value, str) or value == "":
        return [FieldError.required(path)]
    prefix, _, name = value.rpartition("/")
    if "/" in value and prefix == "":
        return [FieldError.invalid(path, value, "prefix part must be non-empty")]
    errors: list[FieldError] = []
    if prefix and (len(prefix) > DNS1123_SUBDOMAIN_MAX or not _DNS1123_SUBDOMAIN.match(prefix)):
        errors.append(FieldError.invalid(path, value, "prefix part " + DNS1123_SUBDOMAIN_HELP))
    if len(name) > QUALIFIED_NAME_MAX:
        errors.append(FieldError.invalid(path, value, f"name part must be no more than {QUALIFIED_NAME_MAX} characters"))
    if not _QUALIFIED_NAME_PART.match(name):
        errors.append(FieldError.invalid(path, value, QUALIFIED_NAME_HELP))
    return errors


def label_value_errors(path: str, value: Any) -> list[FieldError]:
    if not isinstance(value, str):
        return [FieldError.invalid(path, value, "must be a string")]
    errors: list[FieldError] = []
    if len(value) > LABEL_VALUE_MAX:
        errors.append(FieldError.invalid(path, value, f"must be no more than {LABEL_VALUE_MAX} characters"))
    if not _LABEL_VALUE.match(value):
        errors.append(FieldError.invalid(path, value, LABEL_VALUE_HELP))
    return errors


def labels_errors(path: str, labels: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    for key, value in as_dict(labels).items():
        errors += qualified_name_errors(path, key)
        errors += label_value_errors(f"{path}[{key}]", value)
    return errors


def annotations_errors(path: str, annotations: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in as_dict(annotations):
        errors += qualified_name_errors(path, key.lower() if isinstance(key, str) else key)
    return errors


_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def label_selector_errors(path: str, selector: Any) -> list[FieldError]:
    """metav1.LabelSelector syntax, as ``metav1validation.ValidateLabelSelector``."""
    selector = as_dict(selector)
    errors = labels_errors(join_path(path, "matchLabels"), selector.get("matchLabels"))
    for index, requirement in enumerate_dicts(selector.get("matchExpressions")):
        base = join_path(join_path(path, "matchExpressions"), index)
        operator = requirement.get("operator")
        values = as_list(requirement.get("values"))
        if operator in ("In", "NotIn") and not values:
            errors.append(FieldError.required(join_path(base, "values"), "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist") and values:
            errors.append(FieldError.forbidden(join_path(base, "values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        elif operator not in _SELECTOR_OPERATORS:
            errors.append(FieldError.not_supported(join_path(base, "operator"), operator, _SELECTOR_OPERATORS))
        errors += qualified_name_errors(join_path(base, "key"), requirement.get("key"))
    return errors


def duplicates(values: list[Any]) -> Iterator[int]:
    """Indexes of values already seen earlier in the list (hashable values only)."""
    seen: set[Any] = set()
    for index, value in enumerate(values):
        try:
            if value in seen:
                yield index
            seen.add(value)
        except TypeError:
            continue


ADMISSION_GATE_MAX = 63
# Where Jobs and Workloads carry their admission gates (the same annotation on both).
ADMISSION_GATED_BY_PATH = f"metadata.annotations[{c.ADMISSION_GATED_BY_ANNOTATION}]"


def admission_gates(value: Any) -> list[str]:
    return [part.strip() for part in value.split(",")] if isinstance(value, str) else []


def admission_gated_by_errors(path: str, value: Any) -> list[FieldError]:
    """``kueue.x-k8s.io/admission-gated-by``: comma-separated domain-prefixed names, no empty or repeated."""
    if not isinstance(value, str):
        return [FieldError.invalid(path, value, "must be a comma-separated list of gate names")]
    gates = admission_gates(value)
    errors: list[FieldError] = []
    seen: set[str] = set()
    for gate in gates:
        if not gate:
            errors.append(FieldError.invalid(path, value, "gate names must not be empty"))
            continue
        if gate in seen:
            errors.append(FieldError.invalid(path, value, f'gate "{gate}" is listed twice'))
        seen.add(gate)
        prefix, _, name = gate.partition("/")
        if len(gate) > ADMISSION_GATE_MAX:
            errors.append(FieldError.invalid(path, value, f'gate "{gate}" must be no more than {ADMISSION_GATE_MAX} characters'))
        elif not name or not _DNS1123_SUBDOMAIN.match(prefix) or "." not in prefix:
            errors.append(FieldError.invalid(path, value, f'gate "{gate}" must be a domain-prefixed path such as example.com/my-gate'))
    return errors


def admission_gated_by_update_errors(path: str, new: Any, old: Any) -> list[FieldError]:
    """Gates are set at creation and may only be removed afterwards (so admission cannot be re-blocked)."""
    if new is None or new == old:
        return []
    if old is None:
        return [FieldError.forbidden(path, "admission gates cannot be added after creation")]
    added = set(admission_gates(new)) - set(admission_gates(old))
    if added:
        return [FieldError.forbidden(path, f"admission gates can only be removed, not added: {', '.join(sorted(added))}")]
    return []
