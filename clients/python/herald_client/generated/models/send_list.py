from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.send_json import SendJson


T = TypeVar("T", bound="SendList")


@_attrs_define
class SendList:
    """`GET /v1/jobs/{id}/sends`'s answer: with `outcome`, a page and its
    cursor; a range (`start`, `end`) has no cursor.

        Attributes:
            sends (list[SendJson]):
            next_after (int | None | Unset): With `outcome`: where the next page starts; null on the last one.
            recipient_index (int | None | Unset): With `recipient`: its index in the job's audience, absent when it is
                not in it. `sends` is then empty while the job has not reached it.
    """

    sends: list[SendJson]
    next_after: int | None | Unset = UNSET
    recipient_index: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        sends = []
        for sends_item_data in self.sends:
            sends_item = sends_item_data.to_dict()
            sends.append(sends_item)

        next_after: int | None | Unset
        if isinstance(self.next_after, Unset):
            next_after = UNSET
        else:
            next_after = self.next_after

        recipient_index: int | None | Unset
        if isinstance(self.recipient_index, Unset):
            recipient_index = UNSET
        else:
            recipient_index = self.recipient_index

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "sends": sends,
            }
        )
        if next_after is not UNSET:
            field_dict["next_after"] = next_after
        if recipient_index is not UNSET:
            field_dict["recipient_index"] = recipient_index

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.send_json import SendJson

        d = dict(src_dict)
        sends = []
        _sends = d.pop("sends")
        for sends_item_data in _sends:
            sends_item = SendJson.from_dict(sends_item_data)

            sends.append(sends_item)

        def _parse_next_after(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        next_after = _parse_next_after(d.pop("next_after", UNSET))

        def _parse_recipient_index(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        recipient_index = _parse_recipient_index(d.pop("recipient_index", UNSET))

        send_list = cls(
            sends=sends,
            next_after=next_after,
            recipient_index=recipient_index,
        )

        send_list.additional_properties = d
        return send_list

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
