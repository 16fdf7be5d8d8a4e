from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="EarlyStartJson")


@_attrs_define
class EarlyStartJson:
    """When one batch of the subject's pending reminders (one channel type and
    lead, on one channel, due at one instant) goes out (issue 39 §4).

        Attributes:
            bit (int):
            channel (str): The channel they are sent on.
            count (int): Reminders still pending in the batch.
            done_by (str): When the last should have gone at the channel's rate.
            due_at (str): When they fall due (the subject's start less the lead).
            early_window_ms (int): The early window the plan allowed (ms).
            fits (bool): Whether that is by `due_at`; `false` when the early window is too
                short (the rest lands late, or expires at the subject's start).
            start_at (str): When the first may go: before `due_at` when the batch cannot be
                sent by then at the channel's `rate_per_sec`.
            channel_type (None | str | Unset):
            lead_minutes (int | None | Unset):
    """

    bit: int
    channel: str
    count: int
    done_by: str
    due_at: str
    early_window_ms: int
    fits: bool
    start_at: str
    channel_type: None | str | Unset = UNSET
    lead_minutes: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        bit = self.bit

        channel = self.channel

        count = self.count

        done_by = self.done_by

        due_at = self.due_at

        early_window_ms = self.early_window_ms

        fits = self.fits

        start_at = self.start_at

        channel_type: None | str | Unset
        if isinstance(self.channel_type, Unset):
            channel_type = UNSET
        else:
            channel_type = self.channel_type

        lead_minutes: int | None | Unset
        if isinstance(self.lead_minutes, Unset):
            lead_minutes = UNSET
        else:
            lead_minutes = self.lead_minutes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "bit": bit,
                "channel": channel,
                "count": count,
                "done_by": done_by,
                "due_at": due_at,
                "early_window_ms": early_window_ms,
                "fits": fits,
                "start_at": start_at,
            }
        )
        if channel_type is not UNSET:
            field_dict["channel_type"] = channel_type
        if lead_minutes is not UNSET:
            field_dict["lead_minutes"] = lead_minutes

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        bit = d.pop("bit")

        channel = d.pop("channel")

        count = d.pop("count")

        done_by = d.pop("done_by")

        due_at = d.pop("due_at")

        early_window_ms = d.pop("early_window_ms")

        fits = d.pop("fits")

        start_at = d.pop("start_at")

        def _parse_channel_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        channel_type = _parse_channel_type(d.pop("channel_type", UNSET))

        def _parse_lead_minutes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        lead_minutes = _parse_lead_minutes(d.pop("lead_minutes", UNSET))

        early_start_json = cls(
            bit=bit,
            channel=channel,
            count=count,
            done_by=done_by,
            due_at=due_at,
            early_window_ms=early_window_ms,
            fits=fits,
            start_at=start_at,
            channel_type=channel_type,
            lead_minutes=lead_minutes,
        )

        early_start_json.additional_properties = d
        return early_start_json

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
