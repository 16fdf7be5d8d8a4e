from typing import Literal

Deletev1RemindersUserIdSubjectIdChannelType = Literal[
    "app", "email", "sms", "wechat", "wecom"
]

DELETEV_1_REMINDERS_USER_ID_SUBJECT_ID_CHANNEL_TYPE_VALUES: set[
    Deletev1RemindersUserIdSubjectIdChannelType
] = {
    "app",
    "email",
    "sms",
    "wechat",
    "wecom",
}


def check_deletev_1_reminders_user_id_subject_id_channel_type(
    value: str,
) -> Deletev1RemindersUserIdSubjectIdChannelType:
    if value in DELETEV_1_REMINDERS_USER_ID_SUBJECT_ID_CHANNEL_TYPE_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {DELETEV_1_REMINDERS_USER_ID_SUBJECT_ID_CHANNEL_TYPE_VALUES!r}"
    )
