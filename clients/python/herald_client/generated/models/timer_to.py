from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="TimerTo")


@_attrs_define
class TimerTo:
    """`to` of `POST /v1/timers`: a subscriber, whose address is read from the
    directory when the timer fires.

        Attributes:
            user_id (str):
            channel_type (None | str | Unset): Which of the subscriber's addresses: `app`, `email`, `sms`, `wechat`
                or `wecom`; defaults to the channel's own (required for webhook and
                log channels).
    """

    user_id: str
    channel_type: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        user_id = self.user_id

        channel_type: None | str | Unset
        if isinstance(self.channel_type, Unset):
            channel_type = UNSET
        else:
            channel_type = self.channel_type

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "user_id": user_id,
            }
        )
        if channel_type is not UNSET:
            field_dict["channel_type"] = channel_type

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        user_id = d.pop("user_id")

        def _parse_channel_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        channel_type = _parse_channel_type(d.pop("channel_type", UNSET))

        timer_to = cls(
            user_id=user_id,
            channel_type=channel_type,
        )

        return timer_to
