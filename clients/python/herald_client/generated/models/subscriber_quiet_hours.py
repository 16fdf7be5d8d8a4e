from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="SubscriberQuietHours")


@_attrs_define
class SubscriberQuietHours:
    """`HH:MM` to `HH:MM`, in the subscriber's time zone.

    Attributes:
        end (str):
        start (str):
    """

    end: str
    start: str

    def to_dict(self) -> dict[str, Any]:
        end = self.end

        start = self.start

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "end": end,
                "start": start,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        end = d.pop("end")

        start = d.pop("start")

        subscriber_quiet_hours = cls(
            end=end,
            start=start,
        )

        return subscriber_quiet_hours
