from typing import Literal

Getv1TimersKind = Literal["job", "reminder", "timer"]

GETV_1_TIMERS_KIND_VALUES: set[Getv1TimersKind] = {
    "job",
    "reminder",
    "timer",
}


def check_getv_1_timers_kind(value: str) -> Getv1TimersKind:
    if value in GETV_1_TIMERS_KIND_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {GETV_1_TIMERS_KIND_VALUES!r}"
    )
