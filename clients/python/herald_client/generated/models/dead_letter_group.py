from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="DeadLetterGroup")


@_attrs_define
class DeadLetterGroup:
    """One group of dead or failed timers: same channel, state and error.

    Attributes:
        channel (str):
        count (int):
        first_due_at (str):
        last_due_at (str):
        state (str):
        timer_ids (list[int]): Up to 5, newest first.
        error (None | str | Unset):
    """

    channel: str
    count: int
    first_due_at: str
    last_due_at: str
    state: str
    timer_ids: list[int]
    error: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        channel = self.channel

        count = self.count

        first_due_at = self.first_due_at

        last_due_at = self.last_due_at

        state = self.state

        timer_ids = self.timer_ids

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "channel": channel,
                "count": count,
                "first_due_at": first_due_at,
                "last_due_at": last_due_at,
                "state": state,
                "timer_ids": timer_ids,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        channel = d.pop("channel")

        count = d.pop("count")

        first_due_at = d.pop("first_due_at")

        last_due_at = d.pop("last_due_at")

        state = d.pop("state")

        timer_ids = cast(list[int], d.pop("timer_ids"))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        dead_letter_group = cls(
            channel=channel,
            count=count,
            first_due_at=first_due_at,
            last_due_at=last_due_at,
            state=state,
            timer_ids=timer_ids,
            error=error,
        )

        dead_letter_group.additional_properties = d
        return dead_letter_group

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
