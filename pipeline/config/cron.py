"""Validation of five-field cron expressions (minute hour day-of-month month weekday).

Prefect validates again when a deployment is created; this check runs when the config is
loaded, so a typo fails early with the field and the allowed range.
"""

from __future__ import annotations

import re

FIELDS: tuple[tuple[str, int, int], ...] = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("weekday", 0, 7),
)
NAMES: dict[str, list[str]] = {
    "month": ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
    "weekday": ["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
}
ALIASES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


def _value(text: str, name: str, lo: int, hi: int) -> int:
    names = NAMES.get(name, [])
    if text.lower() in names:
        return names.index(text.lower()) + (1 if name == "month" else 0)
    if not text.isdigit() or not lo <= int(text) <= hi:
        raise ValueError(f"{name} {text!r} is not in {lo}-{hi}")
    return int(text)


def check_cron(expression: str) -> None:
    """Raise ``ValueError`` naming the bad field unless ``expression`` is a valid cron string.

    Accepts five fields of ``*``, numbers, names (``jan``, ``mon``), ranges ``a-b``, lists
    ``a,b`` and steps ``*/n`` or ``a-b/n``, or an alias like ``@daily``.
    """
    if expression.strip() in ALIASES:
        return
    parts = expression.split()
    if len(parts) != len(FIELDS):
        raise ValueError(
            f"invalid cron expression {expression!r}: expected 5 fields "
            "(minute hour day-of-month month weekday), e.g. '0 3 * * *'"
        )
    for text, (name, lo, hi) in zip(parts, FIELDS, strict=True):
        for item in text.split(","):
            base, _, step = item.partition("/")
            try:
                if step and (not step.isdigit() or int(step) < 1):
                    raise ValueError(f"{name} step {step!r} is not a positive integer")
                if base != "*":
                    ends = base.split("-")
                    if len(ends) > 2 or not all(ends):
                        raise ValueError(f"{name} {base!r} is not a number or range")
                    values = [_value(e, name, lo, hi) for e in ends]
                    if values != sorted(values):
                        raise ValueError(f"{name} range {base!r} runs backwards")
                elif not re.fullmatch(r"\*(/\d+)?", item):
                    raise ValueError(f"{name} {item!r} is not valid")
            except ValueError as exc:
                raise ValueError(f"invalid cron expression {expression!r}: {exc}") from None
