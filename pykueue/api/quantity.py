"""Exact Kubernetes resource quantities.

Quota decisions must never be off by a rounding error: ``0.1 + 0.2`` CPUs admitted against a
quota of ``300m`` has to fit exactly. So quantities are parsed once into Python integers in the
smallest unit the engine accounts in, and all arithmetic afterwards is integer arithmetic.

The unit follows Kueue (``resources.ResourceValue``): **milli-units for ``cpu``**, whole units for
every other resource (memory in bytes, ``pods``, extended resources such as ``nvidia.com/gpu``).
A value that is not a whole number of that unit is rounded **up**, as ``resource.Quantity``'s
``Value()`` / ``MilliValue()`` do, so a request is never under-counted.

The grammar is the apiserver's (``k8s.io/apimachinery/pkg/api/resource``)::

    quantity  ::= [sign] number [suffix]
    number    ::= digits | digits "." [digits] | "." digits
    suffix    ::= binarySI | decimalSI | ("e" | "E") [sign] digits
    binarySI  ::= Ki | Mi | Gi | Ti | Pi | Ei
    decimalSI ::= n | u | m | "" | k | M | G | T | P | E

The webhook uses the same functions so that a quantity accepted at admission time is exactly the
quantity the controller accounts for.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache
from typing import Final

__all__ = [
    "MILLI_RESOURCES",
    "QuantityError",
    "format_quantity",
    "is_milli_resource",
    "parse_quantity",
    "parse_quantity_exact",
]

# Resources accounted in thousandths. Kueue counts only cpu in milli-units.
MILLI_RESOURCES: Final = frozenset({"cpu"})

_BINARY_SUFFIXES: Final = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_SUFFIXES: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_NUMBER_RE: Final = re.compile(r"^([+-]?)([0-9]+\.?[0-9]*|\.[0-9]+)(.*)$")
_EXPONENT_RE: Final = re.compile(r"^[eE]([+-]?[0-9]+)$")
# Guard against "1e999999999" making a number with a billion digits.
_MAX_EXPONENT: Final = 64
_MAX_LENGTH: Final = 128
# The apiserver's wording, so messages read the same as a kubectl error.
_K8S_PATTERN: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_FORMAT_MESSAGE: Final = f"quantities must match the regular expression '{_K8S_PATTERN}'"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity. The message quotes the offending value."""


def is_milli_resource(resource: str) -> bool:
    """Whether ``resource`` is accounted in milli-units (only ``cpu``, as in Kueue)."""
    return resource in MILLI_RESOURCES


def parse_quantity_exact(value: str | int | float) -> Fraction:
    """Parse a quantity into an exact rational number of base units (``"1500m"`` → 3/2).

    Accepts the JSON forms the apiserver can serve for an int-or-string field: a string, an
    integer, or (from hand-written YAML) a float. Raises :class:`QuantityError` for anything else.
    """
    if isinstance(value, bool):  # bool is an int subclass; "true" is never a quantity
        raise QuantityError(_FORMAT_MESSAGE)
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"quantity must be finite, got {value!r}")
        return Fraction(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"quantity must be a string or a number, got {type(value).__name__}")
    text = value.strip()
    if not text or len(text) > _MAX_LENGTH:
        raise QuantityError(_FORMAT_MESSAGE)
    match = _NUMBER_RE.match(text)
    if match is None:
        raise QuantityError(_FORMAT_MESSAGE)
    sign, number, suffix = match.groups()
    magnitude = Fraction(number if not number.endswith(".") else number[:-1])
    if suffix in _BINARY_SUFFIXES:
        magnitude *= 1024 ** _BINARY_SUFFIXES[suffix]
    elif suffix in _DECIMAL_SUFFIXES:
        magnitude *= Fraction(10) ** _DECIMAL_SUFFIXES[suffix]
    else:
        exp_match = _EXPONENT_RE.match(suffix)
        if exp_match is None:
            raise QuantityError(f"unable to parse quantity's suffix {suffix!r}")
        exponent = int(exp_match.group(1))
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError("quantity exponent out of range")
        magnitude *= Fraction(10) ** exponent
    return -magnitude if sign == "-" else magnitude


# The forms nearly every manifest uses ("2", "500m", "4Gi", "100M"): parsed with integer math,
# without building a Fraction. Anything else takes the exact general path.
_SIMPLE_RE: Final = re.compile(r"^([0-9]{1,18})(m|k|M|G|T|Ki|Mi|Gi|Ti|)$")
_SIMPLE_FACTORS: Final = {
    "": (1, 1), "m": (1, 1000), "k": (1000, 1), "M": (10**6, 1), "G": (10**9, 1), "T": (10**12, 1),
    "Ki": (1024, 1), "Mi": (1024**2, 1), "Gi": (1024**3, 1), "Ti": (1024**4, 1),
}


def parse_quantity(value: str | int | float, resource: str = "") -> int:
    """Parse a quantity into an integer of the engine's unit for ``resource``.

    ``parse_quantity("500m", resource="cpu") == 500``; ``parse_quantity("1Gi", "memory") ==
    1073741824``; ``parse_quantity("1.5", "memory") == 2`` (rounded up, never under-counted).
    """
    if isinstance(value, str):
        return _parse_text(value, resource)
    return _parse_exact(value, resource)


@lru_cache(maxsize=4096)
def _parse_text(value: str, resource: str) -> int:
    """:func:`parse_quantity` of a string, remembered: the engine parses the same few request and
    usage strings on every Workload update (a failure raises and is not remembered)."""
    simple = _SIMPLE_RE.match(value)
    if simple is not None:
        multiplier, divisor = _SIMPLE_FACTORS[simple.group(2)]
        amount = int(simple.group(1)) * multiplier * (1000 if resource in MILLI_RESOURCES else 1)
        return -(-amount // divisor)  # ceiling division: never under-count
    return _parse_exact(value, resource)


def _parse_exact(value: str | int | float, resource: str) -> int:
    exact = parse_quantity_exact(value)
    if is_milli_resource(resource):
        exact *= 1000
    return math.ceil(exact)


def format_quantity(amount: int, resource: str = "") -> str:
    """Render an engine integer back into a canonical quantity string.

    cpu: ``1500 → "1500m"``, ``2000 → "2"``. Others: the largest exact binary suffix for
    multiples of 1024 (``1073741824 → "1Gi"``), else the largest exact decimal suffix
    (``5000 → "5k"``), else the plain integer. The result parses back to the same integer.
    """
    if is_milli_resource(resource):
        if amount % 1000 == 0:
            return str(amount // 1000)
        return f"{amount}m"
    if amount == 0:
        return "0"
    sign = "-" if amount < 0 else ""
    magnitude = abs(amount)
    for suffix, power in sorted(_BINARY_SUFFIXES.items(), key=lambda item: -item[1]):
        if magnitude % (1024**power) == 0:
            return f"{sign}{magnitude // 1024**power}{suffix}"
    for suffix in ("E", "P", "T", "G", "M", "k"):
        factor = 10 ** _DECIMAL_SUFFIXES[suffix]
        if magnitude % factor == 0:
            return f"{sign}{magnitude // factor}{suffix}"
    return f"{sign}{magnitude}"
