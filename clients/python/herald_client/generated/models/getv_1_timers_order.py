from typing import Literal

Getv1TimersOrder = Literal["asc", "desc"]

GETV_1_TIMERS_ORDER_VALUES: set[Getv1TimersOrder] = {
    "asc",
    "desc",
}


def check_getv_1_timers_order(value: str) -> Getv1TimersOrder:
    if value in GETV_1_TIMERS_ORDER_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {GETV_1_TIMERS_ORDER_VALUES!r}"
    )
