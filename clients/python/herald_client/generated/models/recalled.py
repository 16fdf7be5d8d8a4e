from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Recalled")


@_attrs_define
class Recalled:
    """`POST /v1/deliveries/{id}:recall`'s answer.

    Attributes:
        channel (str):
        final_status (str):
        id (int):
        recalled_at (int): Unix ms.
        provider_msgid (None | str | Unset):
    """

    channel: str
    final_status: str
    id: int
    recalled_at: int
    provider_msgid: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        channel = self.channel

        final_status = self.final_status

        id = self.id

        recalled_at = self.recalled_at

        provider_msgid: None | str | Unset
        if isinstance(self.provider_msgid, Unset):
            provider_msgid = UNSET
        else:
            provider_msgid = self.provider_msgid

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "channel": channel,
                "final_status": final_status,
                "id": id,
                "recalled_at": recalled_at,
            }
        )
        if provider_msgid is not UNSET:
            field_dict["provider_msgid"] = provider_msgid

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        channel = d.pop("channel")

        final_status = d.pop("final_status")

        id = d.pop("id")

        recalled_at = d.pop("recalled_at")

        def _parse_provider_msgid(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        provider_msgid = _parse_provider_msgid(d.pop("provider_msgid", UNSET))

        recalled = cls(
            channel=channel,
            final_status=final_status,
            id=id,
            recalled_at=recalled_at,
            provider_msgid=provider_msgid,
        )

        recalled.additional_properties = d
        return recalled

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
