from typing import Literal

RetryState = Literal["dead", "failed", "in_doubt"]

RETRY_STATE_VALUES: set[RetryState] = {
    "dead",
    "failed",
    "in_doubt",
}


def check_retry_state(value: str) -> RetryState:
    if value in RETRY_STATE_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {RETRY_STATE_VALUES!r}"
    )
