"""Go duration strings (``time.ParseDuration``), the form metav1.Duration fields take on the wire.

Kueue's Configuration (``waitForPodsReady.timeout``, ``leaderElection.leaseDuration``, ...) and
the ClusterQueue's fallback ``timeout`` are metav1.Duration, written as ``"90s"``, ``"1h30m"`` or
``"0.5h"``. Both programs read them with this one parser so a value the webhook accepts is a value
the controller understands. Whether a negative or zero duration is allowed is the caller's rule
(the schemas' pattern, "must be greater than 0"), not the parser's.
"""

from __future__ import annotations

import re

# One ``<number><unit>`` term: "1", "1.5", "1." and ".5" are numbers, as in Go; a unit is required.
_TERM = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
# Seconds per unit; Go accepts both the micro sign (U+00B5) and the Greek mu (U+03BC).
UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: object) -> float:
    """Seconds in a Go duration string: ``"10m"``, ``"1h30m"``, ``"-1.5s"``, ``"300ms"``, ``"0"``.

    Follows ``time.ParseDuration``: an optional sign, then one or more ``<number><unit>`` terms
    (units ns, us/µs/μs, ms, s, m, h; fractions allowed); a bare ``"0"`` is the only number
    without a unit. Raises ValueError for anything else, including a non-string.
    """
    if not isinstance(text, str) or not text:
        raise ValueError(f"invalid duration {text!r}")
    sign = -1.0 if text[0] == "-" else 1.0
    body = text[1:] if text[0] in "+-" else text
    if body == "0":
        return 0.0
    position, total = 0, 0.0
    while position < len(body):
        match = _TERM.match(body, position)
        if match is None:
            raise ValueError(f"invalid duration {text!r}")
        total += float(match.group(1)) * UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position == 0:
        raise ValueError(f"invalid duration {text!r}")
    return sign * total
