from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.reminder_body_channel_type import (
    ReminderBodyChannelType,
    check_reminder_body_channel_type,
)
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.reminder_grant import ReminderGrant
    from ..models.route_step import RouteStep


T = TypeVar("T", bound="ReminderBody")


@_attrs_define
class ReminderBody:
    """
    Attributes:
        channel_type (ReminderBodyChannelType):
        lead_minutes (int): One of the node's `reminders.leads_minutes`.
        subject_id (str):
        user_id (str):
        channel (None | str | Unset): A channel configured on the node (`GET /v1/channels` lists them).
        grant (None | ReminderGrant | Unset):
        priority (int | None | Unset): 0 to 9, default 5: higher goes first among the sends due on the
            channel, timers' and campaigns' alike.
        route (list[RouteStep] | None | Unset): A fallback route: its first step is this reminder's own channel and
            type; a later step is sent when the step before ends in an outcome
            the later one lists in `on`.
        send_late (bool | None | Unset): Send this reminder even after its subject started; by default one
            still unsent at the start ends `expired`.
    """

    channel_type: ReminderBodyChannelType
    lead_minutes: int
    subject_id: str
    user_id: str
    channel: None | str | Unset = UNSET
    grant: None | ReminderGrant | Unset = UNSET
    priority: int | None | Unset = UNSET
    route: list[RouteStep] | None | Unset = UNSET
    send_late: bool | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.reminder_grant import ReminderGrant

        channel_type: str = self.channel_type

        lead_minutes = self.lead_minutes

        subject_id = self.subject_id

        user_id = self.user_id

        channel: None | str | Unset
        if isinstance(self.channel, Unset):
            channel = UNSET
        else:
            channel = self.channel

        grant: dict[str, Any] | None | Unset
        if isinstance(self.grant, Unset):
            grant = UNSET
        elif isinstance(self.grant, ReminderGrant):
            grant = self.grant.to_dict()
        else:
            grant = self.grant

        priority: int | None | Unset
        if isinstance(self.priority, Unset):
            priority = UNSET
        else:
            priority = self.priority

        route: list[dict[str, Any]] | None | Unset
        if isinstance(self.route, Unset):
            route = UNSET
        elif isinstance(self.route, list):
            route = []
            for route_type_0_item_data in self.route:
                route_type_0_item = route_type_0_item_data.to_dict()
                route.append(route_type_0_item)

        else:
            route = self.route

        send_late: bool | None | Unset
        if isinstance(self.send_late, Unset):
            send_late = UNSET
        else:
            send_late = self.send_late

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "channel_type": channel_type,
                "lead_minutes": lead_minutes,
                "subject_id": subject_id,
                "user_id": user_id,
            }
        )
        if channel is not UNSET:
            field_dict["channel"] = channel
        if grant is not UNSET:
            field_dict["grant"] = grant
        if priority is not UNSET:
            field_dict["priority"] = priority
        if route is not UNSET:
            field_dict["route"] = route
        if send_late is not UNSET:
            field_dict["send_late"] = send_late

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.reminder_grant import ReminderGrant
        from ..models.route_step import RouteStep

        d = dict(src_dict)
        channel_type = check_reminder_body_channel_type(d.pop("channel_type"))

        lead_minutes = d.pop("lead_minutes")

        subject_id = d.pop("subject_id")

        user_id = d.pop("user_id")

        def _parse_channel(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        channel = _parse_channel(d.pop("channel", UNSET))

        def _parse_grant(data: object) -> None | ReminderGrant | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                grant_type_1 = ReminderGrant.from_dict(data)

                return grant_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ReminderGrant | Unset, data)

        grant = _parse_grant(d.pop("grant", UNSET))

        def _parse_priority(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        priority = _parse_priority(d.pop("priority", UNSET))

        def _parse_route(data: object) -> list[RouteStep] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                route_type_0 = []
                _route_type_0 = data
                for route_type_0_item_data in _route_type_0:
                    route_type_0_item = RouteStep.from_dict(route_type_0_item_data)

                    route_type_0.append(route_type_0_item)

                return route_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[RouteStep] | None | Unset, data)

        route = _parse_route(d.pop("route", UNSET))

        def _parse_send_late(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        send_late = _parse_send_late(d.pop("send_late", UNSET))

        reminder_body = cls(
            channel_type=channel_type,
            lead_minutes=lead_minutes,
            subject_id=subject_id,
            user_id=user_id,
            channel=channel,
            grant=grant,
            priority=priority,
            route=route,
            send_late=send_late,
        )

        return reminder_body
