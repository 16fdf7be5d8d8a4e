from typing import Literal

OnConflict = Literal["replace", "return"]

ON_CONFLICT_VALUES: set[OnConflict] = {
    "replace",
    "return",
}


def check_on_conflict(value: str) -> OnConflict:
    if value in ON_CONFLICT_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {ON_CONFLICT_VALUES!r}"
    )
