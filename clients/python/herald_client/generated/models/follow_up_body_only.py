from typing import Literal

FollowUpBodyOnly = Literal["unread"]

FOLLOW_UP_BODY_ONLY_VALUES: set[FollowUpBodyOnly] = {
    "unread",
}


def check_follow_up_body_only(value: str) -> FollowUpBodyOnly:
    if value in FOLLOW_UP_BODY_ONLY_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {FOLLOW_UP_BODY_ONLY_VALUES!r}"
    )
