from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.reminder_slot import ReminderSlot


T = TypeVar("T", bound="RemindersCancelled")


@_attrs_define
class RemindersCancelled:
    """`DELETE /v1/reminders`'s answer: the reminders cleared and those left.

    Attributes:
        cancelled_timers (list[int]):
        cleared (list[ReminderSlot]):
        remaining (list[ReminderSlot]):
    """

    cancelled_timers: list[int]
    cleared: list[ReminderSlot]
    remaining: list[ReminderSlot]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cancelled_timers = self.cancelled_timers

        cleared = []
        for cleared_item_data in self.cleared:
            cleared_item = cleared_item_data.to_dict()
            cleared.append(cleared_item)

        remaining = []
        for remaining_item_data in self.remaining:
            remaining_item = remaining_item_data.to_dict()
            remaining.append(remaining_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cancelled_timers": cancelled_timers,
                "cleared": cleared,
                "remaining": remaining,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.reminder_slot import ReminderSlot

        d = dict(src_dict)
        cancelled_timers = cast(list[int], d.pop("cancelled_timers"))

        cleared = []
        _cleared = d.pop("cleared")
        for cleared_item_data in _cleared:
            cleared_item = ReminderSlot.from_dict(cleared_item_data)

            cleared.append(cleared_item)

        remaining = []
        _remaining = d.pop("remaining")
        for remaining_item_data in _remaining:
            remaining_item = ReminderSlot.from_dict(remaining_item_data)

            remaining.append(remaining_item)

        reminders_cancelled = cls(
            cancelled_timers=cancelled_timers,
            cleared=cleared,
            remaining=remaining,
        )

        reminders_cancelled.additional_properties = d
        return reminders_cancelled

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
