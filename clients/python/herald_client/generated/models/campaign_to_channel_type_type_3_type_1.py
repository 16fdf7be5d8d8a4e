from typing import Literal

CampaignToChannelTypeType3Type1 = Literal["app", "email", "sms", "wechat", "wecom"]

CAMPAIGN_TO_CHANNEL_TYPE_TYPE_3_TYPE_1_VALUES: set[CampaignToChannelTypeType3Type1] = {
    "app",
    "email",
    "sms",
    "wechat",
    "wecom",
}


def check_campaign_to_channel_type_type_3_type_1(
    value: str,
) -> CampaignToChannelTypeType3Type1:
    if value in CAMPAIGN_TO_CHANNEL_TYPE_TYPE_3_TYPE_1_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {CAMPAIGN_TO_CHANNEL_TYPE_TYPE_3_TYPE_1_VALUES!r}"
    )
