from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.campaign_to_channel_type_type_1 import (
    CampaignToChannelTypeType1,
    check_campaign_to_channel_type_type_1,
)
from ..models.campaign_to_channel_type_type_2_type_1 import (
    CampaignToChannelTypeType2Type1,
    check_campaign_to_channel_type_type_2_type_1,
)
from ..models.campaign_to_channel_type_type_3_type_1 import (
    CampaignToChannelTypeType3Type1,
    check_campaign_to_channel_type_type_3_type_1,
)
from ..types import UNSET, Unset

T = TypeVar("T", bound="CampaignTo")


@_attrs_define
class CampaignTo:
    """`"to"` of a job or rule: every audience entry is a user id; send to that
    subscriber's address of `channel_type` (default: the channel's own type).

        Attributes:
            channel_type (CampaignToChannelTypeType1 | CampaignToChannelTypeType2Type1 | CampaignToChannelTypeType3Type1 |
                None | Unset):
    """

    channel_type: (
        CampaignToChannelTypeType1
        | CampaignToChannelTypeType2Type1
        | CampaignToChannelTypeType3Type1
        | None
        | Unset
    ) = UNSET

    def to_dict(self) -> dict[str, Any]:
        channel_type: None | str | Unset
        if isinstance(self.channel_type, Unset):
            channel_type = UNSET
        elif (
            isinstance(self.channel_type, str)
            or isinstance(self.channel_type, str)
            or isinstance(self.channel_type, str)
        ):
            channel_type = self.channel_type
        else:
            channel_type = self.channel_type

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if channel_type is not UNSET:
            field_dict["channel_type"] = channel_type

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_channel_type(
            data: object,
        ) -> (
            CampaignToChannelTypeType1
            | CampaignToChannelTypeType2Type1
            | CampaignToChannelTypeType3Type1
            | None
            | Unset
        ):
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                channel_type_type_1 = check_campaign_to_channel_type_type_1(data)

                return channel_type_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                channel_type_type_2_type_1 = (
                    check_campaign_to_channel_type_type_2_type_1(data)
                )

                return channel_type_type_2_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                channel_type_type_3_type_1 = (
                    check_campaign_to_channel_type_type_3_type_1(data)
                )

                return channel_type_type_3_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(
                CampaignToChannelTypeType1
                | CampaignToChannelTypeType2Type1
                | CampaignToChannelTypeType3Type1
                | None
                | Unset,
                data,
            )

        channel_type = _parse_channel_type(d.pop("channel_type", UNSET))

        campaign_to = cls(
            channel_type=channel_type,
        )

        return campaign_to
