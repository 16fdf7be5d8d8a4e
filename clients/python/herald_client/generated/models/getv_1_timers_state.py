from typing import Literal

Getv1TimersState = Literal["cancelled", "dead", "done", "failed", "in_doubt", "pending"]

GETV_1_TIMERS_STATE_VALUES: set[Getv1TimersState] = {
    "cancelled",
    "dead",
    "done",
    "failed",
    "in_doubt",
    "pending",
}


def check_getv_1_timers_state(value: str) -> Getv1TimersState:
    if value in GETV_1_TIMERS_STATE_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {GETV_1_TIMERS_STATE_VALUES!r}"
    )
