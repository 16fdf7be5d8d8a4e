from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ReminderSlot")


@_attrs_define
class ReminderSlot:
    """One reminder of a (user, subject): its channel type and lead.

    Attributes:
        channel_type (str):
        lead_minutes (int):
    """

    channel_type: str
    lead_minutes: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        channel_type = self.channel_type

        lead_minutes = self.lead_minutes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "channel_type": channel_type,
                "lead_minutes": lead_minutes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        channel_type = d.pop("channel_type")

        lead_minutes = d.pop("lead_minutes")

        reminder_slot = cls(
            channel_type=channel_type,
            lead_minutes=lead_minutes,
        )

        reminder_slot.additional_properties = d
        return reminder_slot

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
