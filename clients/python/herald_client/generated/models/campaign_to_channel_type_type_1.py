from typing import Literal

CampaignToChannelTypeType1 = Literal["app", "email", "sms", "wechat", "wecom"]

CAMPAIGN_TO_CHANNEL_TYPE_TYPE_1_VALUES: set[CampaignToChannelTypeType1] = {
    "app",
    "email",
    "sms",
    "wechat",
    "wecom",
}


def check_campaign_to_channel_type_type_1(value: str) -> CampaignToChannelTypeType1:
    if value in CAMPAIGN_TO_CHANNEL_TYPE_TYPE_1_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {CAMPAIGN_TO_CHANNEL_TYPE_TYPE_1_VALUES!r}"
    )
