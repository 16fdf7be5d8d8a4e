from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="CountsJson")


@_attrs_define
class CountsJson:
    """How many users and reminders a subject has, as far as they were counted.

    Attributes:
        counts_capped (bool): Counting stopped at the cap: both figures are lower bounds.
        reminders (int): Reminders (a user's channel type and lead), sent or still to come.
        subscribers (int): Distinct users with at least one reminder on the subject.
    """

    counts_capped: bool
    reminders: int
    subscribers: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        counts_capped = self.counts_capped

        reminders = self.reminders

        subscribers = self.subscribers

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "counts_capped": counts_capped,
                "reminders": reminders,
                "subscribers": subscribers,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        counts_capped = d.pop("counts_capped")

        reminders = d.pop("reminders")

        subscribers = d.pop("subscribers")

        counts_json = cls(
            counts_capped=counts_capped,
            reminders=reminders,
            subscribers=subscribers,
        )

        counts_json.additional_properties = d
        return counts_json

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
