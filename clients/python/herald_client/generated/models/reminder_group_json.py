from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ReminderGroupJson")


@_attrs_define
class ReminderGroupJson:
    """The reminders of one channel type and lead.

    Attributes:
        bit (int): The slot's bit in a subscription word.
        channel_type (str):
        count (int):
        lead_minutes (int):
    """

    bit: int
    channel_type: str
    count: int
    lead_minutes: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        bit = self.bit

        channel_type = self.channel_type

        count = self.count

        lead_minutes = self.lead_minutes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "bit": bit,
                "channel_type": channel_type,
                "count": count,
                "lead_minutes": lead_minutes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        bit = d.pop("bit")

        channel_type = d.pop("channel_type")

        count = d.pop("count")

        lead_minutes = d.pop("lead_minutes")

        reminder_group_json = cls(
            bit=bit,
            channel_type=channel_type,
            count=count,
            lead_minutes=lead_minutes,
        )

        reminder_group_json.additional_properties = d
        return reminder_group_json

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
