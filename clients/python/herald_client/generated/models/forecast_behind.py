from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ForecastBehind")


@_attrs_define
class ForecastBehind:
    """Where a channel falls behind.

    Attributes:
        from_ (str): The start of the first minute whose sends still wait a minute after it.
        waiting (int): Sends waiting at the end of that minute.
        worst_at (str): The minute whose sends go out latest after it ends.
        worst_late_s (float): How long after that minute the last of them goes, at least (seconds).
    """

    from_: str
    waiting: int
    worst_at: str
    worst_late_s: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from_ = self.from_

        waiting = self.waiting

        worst_at = self.worst_at

        worst_late_s = self.worst_late_s

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "from": from_,
                "waiting": waiting,
                "worst_at": worst_at,
                "worst_late_s": worst_late_s,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        from_ = d.pop("from")

        waiting = d.pop("waiting")

        worst_at = d.pop("worst_at")

        worst_late_s = d.pop("worst_late_s")

        forecast_behind = cls(
            from_=from_,
            waiting=waiting,
            worst_at=worst_at,
            worst_late_s=worst_late_s,
        )

        forecast_behind.additional_properties = d
        return forecast_behind

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
