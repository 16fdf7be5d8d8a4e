from typing import Literal

PushService = Literal["fcm", "honor", "huawei", "oppo", "vivo", "xiaomi"]

PUSH_SERVICE_VALUES: set[PushService] = {
    "fcm",
    "honor",
    "huawei",
    "oppo",
    "vivo",
    "xiaomi",
}


def check_push_service(value: str) -> PushService:
    if value in PUSH_SERVICE_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {PUSH_SERVICE_VALUES!r}"
    )
