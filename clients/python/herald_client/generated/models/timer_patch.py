from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.timer_patch_message_type_0 import TimerPatchMessageType0


T = TypeVar("T", bound="TimerPatch")


@_attrs_define
class TimerPatch:
    """At least one field; `fire_at` or `delay_ms`, not both.

    Attributes:
        delay_ms (int | None | Unset):
        fire_at (datetime.datetime | None | Unset):
        message (None | TimerPatchMessageType0 | Unset):
        priority (int | None | Unset):
    """

    delay_ms: int | None | Unset = UNSET
    fire_at: datetime.datetime | None | Unset = UNSET
    message: None | TimerPatchMessageType0 | Unset = UNSET
    priority: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.timer_patch_message_type_0 import TimerPatchMessageType0

        delay_ms: int | None | Unset
        if isinstance(self.delay_ms, Unset):
            delay_ms = UNSET
        else:
            delay_ms = self.delay_ms

        fire_at: None | str | Unset
        if isinstance(self.fire_at, Unset):
            fire_at = UNSET
        elif isinstance(self.fire_at, datetime.datetime):
            fire_at = self.fire_at.isoformat()
        else:
            fire_at = self.fire_at

        message: dict[str, Any] | None | Unset
        if isinstance(self.message, Unset):
            message = UNSET
        elif isinstance(self.message, TimerPatchMessageType0):
            message = self.message.to_dict()
        else:
            message = self.message

        priority: int | None | Unset
        if isinstance(self.priority, Unset):
            priority = UNSET
        else:
            priority = self.priority

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if delay_ms is not UNSET:
            field_dict["delay_ms"] = delay_ms
        if fire_at is not UNSET:
            field_dict["fire_at"] = fire_at
        if message is not UNSET:
            field_dict["message"] = message
        if priority is not UNSET:
            field_dict["priority"] = priority

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.timer_patch_message_type_0 import TimerPatchMessageType0

        d = dict(src_dict)

        def _parse_delay_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        delay_ms = _parse_delay_ms(d.pop("delay_ms", UNSET))

        def _parse_fire_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                fire_at_type_0 = datetime.datetime.fromisoformat(data)

                return fire_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        fire_at = _parse_fire_at(d.pop("fire_at", UNSET))

        def _parse_message(data: object) -> None | TimerPatchMessageType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                message_type_0 = TimerPatchMessageType0.from_dict(data)

                return message_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TimerPatchMessageType0 | Unset, data)

        message = _parse_message(d.pop("message", UNSET))

        def _parse_priority(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        priority = _parse_priority(d.pop("priority", UNSET))

        timer_patch = cls(
            delay_ms=delay_ms,
            fire_at=fire_at,
            message=message,
            priority=priority,
        )

        return timer_patch
