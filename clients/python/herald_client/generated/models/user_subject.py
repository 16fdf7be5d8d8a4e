from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.user_reminder import UserReminder


T = TypeVar("T", bound="UserSubject")


@_attrs_define
class UserSubject:
    """A user's reminders of one subject, and their bitmap.

    Attributes:
        bits (int):
        reminders (list[UserReminder]):
        subject_id (str):
    """

    bits: int
    reminders: list[UserReminder]
    subject_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        bits = self.bits

        reminders = []
        for reminders_item_data in self.reminders:
            reminders_item = reminders_item_data.to_dict()
            reminders.append(reminders_item)

        subject_id = self.subject_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "bits": bits,
                "reminders": reminders,
                "subject_id": subject_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.user_reminder import UserReminder

        d = dict(src_dict)
        bits = d.pop("bits")

        reminders = []
        _reminders = d.pop("reminders")
        for reminders_item_data in _reminders:
            reminders_item = UserReminder.from_dict(reminders_item_data)

            reminders.append(reminders_item)

        subject_id = d.pop("subject_id")

        user_subject = cls(
            bits=bits,
            reminders=reminders,
            subject_id=subject_id,
        )

        user_subject.additional_properties = d
        return user_subject

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
