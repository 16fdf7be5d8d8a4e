from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ReminderJson")


@_attrs_define
class ReminderJson:
    """One reminder as the API shows it.

    Attributes:
        channel (str):
        channel_type (str):
        fire_at (str):
        lead_minutes (int):
        priority (int): 0 to 9: higher goes first on the channel.
        send_late (bool): Sent even after its subject started (never `expired`).
        state (str):
        subject_id (str):
        timer_id (int):
        user_id (str):
    """

    channel: str
    channel_type: str
    fire_at: str
    lead_minutes: int
    priority: int
    send_late: bool
    state: str
    subject_id: str
    timer_id: int
    user_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        channel = self.channel

        channel_type = self.channel_type

        fire_at = self.fire_at

        lead_minutes = self.lead_minutes

        priority = self.priority

        send_late = self.send_late

        state = self.state

        subject_id = self.subject_id

        timer_id = self.timer_id

        user_id = self.user_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "channel": channel,
                "channel_type": channel_type,
                "fire_at": fire_at,
                "lead_minutes": lead_minutes,
                "priority": priority,
                "send_late": send_late,
                "state": state,
                "subject_id": subject_id,
                "timer_id": timer_id,
                "user_id": user_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        channel = d.pop("channel")

        channel_type = d.pop("channel_type")

        fire_at = d.pop("fire_at")

        lead_minutes = d.pop("lead_minutes")

        priority = d.pop("priority")

        send_late = d.pop("send_late")

        state = d.pop("state")

        subject_id = d.pop("subject_id")

        timer_id = d.pop("timer_id")

        user_id = d.pop("user_id")

        reminder_json = cls(
            channel=channel,
            channel_type=channel_type,
            fire_at=fire_at,
            lead_minutes=lead_minutes,
            priority=priority,
            send_late=send_late,
            state=state,
            subject_id=subject_id,
            timer_id=timer_id,
            user_id=user_id,
        )

        reminder_json.additional_properties = d
        return reminder_json

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
