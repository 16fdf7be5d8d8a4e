from typing import Literal

StepOnName = Literal["failed", "no_address", "opted_out", "unread"]

STEP_ON_NAME_VALUES: set[StepOnName] = {
    "failed",
    "no_address",
    "opted_out",
    "unread",
}


def check_step_on_name(value: str) -> StepOnName:
    if value in STEP_ON_NAME_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {STEP_ON_NAME_VALUES!r}"
    )
