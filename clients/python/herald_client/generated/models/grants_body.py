from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.grant_entry import GrantEntry


T = TypeVar("T", bound="GrantsBody")


@_attrs_define
class GrantsBody:
    """`POST /v1/subscribers/{user_id}/grants`: what one tap on "Allow" gave.

    Attributes:
        channel (str): The mini-program's channel (of kind `wechat_mini`).
        grants (list[GrantEntry]): One entry per template the user allowed (1 to 20).
        key (str): The caller's key for this tap: the same key again changes nothing.
    """

    channel: str
    grants: list[GrantEntry]
    key: str

    def to_dict(self) -> dict[str, Any]:
        channel = self.channel

        grants = []
        for grants_item_data in self.grants:
            grants_item = grants_item_data.to_dict()
            grants.append(grants_item)

        key = self.key

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "channel": channel,
                "grants": grants,
                "key": key,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.grant_entry import GrantEntry

        d = dict(src_dict)
        channel = d.pop("channel")

        grants = []
        _grants = d.pop("grants")
        for grants_item_data in _grants:
            grants_item = GrantEntry.from_dict(grants_item_data)

            grants.append(grants_item)

        key = d.pop("key")

        grants_body = cls(
            channel=channel,
            grants=grants,
            key=key,
        )

        return grants_body
