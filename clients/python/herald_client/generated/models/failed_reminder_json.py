from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="FailedReminderJson")


@_attrs_define
class FailedReminderJson:
    """A reminder that did not reach its user.

    Attributes:
        state (str):
        timer_id (int):
        updated_at (str):
        user_id (str):
        channel_type (None | str | Unset):
        error (None | str | Unset):
        lead_minutes (int | None | Unset):
    """

    state: str
    timer_id: int
    updated_at: str
    user_id: str
    channel_type: None | str | Unset = UNSET
    error: None | str | Unset = UNSET
    lead_minutes: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        state = self.state

        timer_id = self.timer_id

        updated_at = self.updated_at

        user_id = self.user_id

        channel_type: None | str | Unset
        if isinstance(self.channel_type, Unset):
            channel_type = UNSET
        else:
            channel_type = self.channel_type

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        lead_minutes: int | None | Unset
        if isinstance(self.lead_minutes, Unset):
            lead_minutes = UNSET
        else:
            lead_minutes = self.lead_minutes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "state": state,
                "timer_id": timer_id,
                "updated_at": updated_at,
                "user_id": user_id,
            }
        )
        if channel_type is not UNSET:
            field_dict["channel_type"] = channel_type
        if error is not UNSET:
            field_dict["error"] = error
        if lead_minutes is not UNSET:
            field_dict["lead_minutes"] = lead_minutes

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        state = d.pop("state")

        timer_id = d.pop("timer_id")

        updated_at = d.pop("updated_at")

        user_id = d.pop("user_id")

        def _parse_channel_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        channel_type = _parse_channel_type(d.pop("channel_type", UNSET))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_lead_minutes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        lead_minutes = _parse_lead_minutes(d.pop("lead_minutes", UNSET))

        failed_reminder_json = cls(
            state=state,
            timer_id=timer_id,
            updated_at=updated_at,
            user_id=user_id,
            channel_type=channel_type,
            error=error,
            lead_minutes=lead_minutes,
        )

        failed_reminder_json.additional_properties = d
        return failed_reminder_json

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
