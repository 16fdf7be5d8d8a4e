from typing import Literal

ReminderBodyChannelType = Literal["app", "email", "sms", "wechat", "wecom"]

REMINDER_BODY_CHANNEL_TYPE_VALUES: set[ReminderBodyChannelType] = {
    "app",
    "email",
    "sms",
    "wechat",
    "wecom",
}


def check_reminder_body_channel_type(value: str) -> ReminderBodyChannelType:
    if value in REMINDER_BODY_CHANNEL_TYPE_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {REMINDER_BODY_CHANNEL_TYPE_VALUES!r}"
    )
