from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.on_conflict import OnConflict, check_on_conflict
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.create_timer_message_type_0 import CreateTimerMessageType0
    from ..models.route_step import RouteStep
    from ..models.template_use import TemplateUse
    from ..models.timer_digest import TimerDigest
    from ..models.timer_to import TimerTo


T = TypeVar("T", bound="CreateTimer")


@_attrs_define
class CreateTimer:
    """`POST /v1/timers` (and one line of `POST /v1/timers:bulk`).

    Attributes:
        channel (None | str | Unset): A configured channel; required unless `route` is given (its first
            step's channel). A channel configured on the node (`GET /v1/channels` lists them).
        critical (bool | None | Unset): Sent even in quiet hours (never past an opt-out).
        delay_ms (int | None | Unset): At most 10 years.
        digest (None | TimerDigest | Unset):
        fire_at (datetime.datetime | None | Unset): RFC 3339, at most 10 years ahead; give this or `delay_ms`.
        idempotency_key (None | str | Unset): 1..=255 visible ASCII characters.
        message (CreateTimerMessageType0 | None | Unset): The message in the channel provider's shape; give this or
            `template`.
        on_conflict (None | OnConflict | Unset):
        priority (int | None | Unset):
        recipient (None | str | Unset): The address as the provider takes it; give this or `to`.
        route (list[RouteStep] | None | Unset): A fallback route for a timer `to` a subscriber: its first step is the
            timer's own channel and address type; a later step is sent when the
            step before ends in an outcome the later one lists in `on`.
        template (None | TemplateUse | Unset):
        to (None | TimerTo | Unset):
        topic (None | str | Unset): What the message is about (subscribers may opt out of a topic).
    """

    channel: None | str | Unset = UNSET
    critical: bool | None | Unset = UNSET
    delay_ms: int | None | Unset = UNSET
    digest: None | TimerDigest | Unset = UNSET
    fire_at: datetime.datetime | None | Unset = UNSET
    idempotency_key: None | str | Unset = UNSET
    message: CreateTimerMessageType0 | None | Unset = UNSET
    on_conflict: None | OnConflict | Unset = UNSET
    priority: int | None | Unset = UNSET
    recipient: None | str | Unset = UNSET
    route: list[RouteStep] | None | Unset = UNSET
    template: None | TemplateUse | Unset = UNSET
    to: None | TimerTo | Unset = UNSET
    topic: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.create_timer_message_type_0 import CreateTimerMessageType0
        from ..models.template_use import TemplateUse
        from ..models.timer_digest import TimerDigest
        from ..models.timer_to import TimerTo

        channel: None | str | Unset
        if isinstance(self.channel, Unset):
            channel = UNSET
        else:
            channel = self.channel

        critical: bool | None | Unset
        if isinstance(self.critical, Unset):
            critical = UNSET
        else:
            critical = self.critical

        delay_ms: int | None | Unset
        if isinstance(self.delay_ms, Unset):
            delay_ms = UNSET
        else:
            delay_ms = self.delay_ms

        digest: dict[str, Any] | None | Unset
        if isinstance(self.digest, Unset):
            digest = UNSET
        elif isinstance(self.digest, TimerDigest):
            digest = self.digest.to_dict()
        else:
            digest = self.digest

        fire_at: None | str | Unset
        if isinstance(self.fire_at, Unset):
            fire_at = UNSET
        elif isinstance(self.fire_at, datetime.datetime):
            fire_at = self.fire_at.isoformat()
        else:
            fire_at = self.fire_at

        idempotency_key: None | str | Unset
        if isinstance(self.idempotency_key, Unset):
            idempotency_key = UNSET
        else:
            idempotency_key = self.idempotency_key

        message: dict[str, Any] | None | Unset
        if isinstance(self.message, Unset):
            message = UNSET
        elif isinstance(self.message, CreateTimerMessageType0):
            message = self.message.to_dict()
        else:
            message = self.message

        on_conflict: None | str | Unset
        if isinstance(self.on_conflict, Unset):
            on_conflict = UNSET
        elif isinstance(self.on_conflict, str):
            on_conflict = self.on_conflict
        else:
            on_conflict = self.on_conflict

        priority: int | None | Unset
        if isinstance(self.priority, Unset):
            priority = UNSET
        else:
            priority = self.priority

        recipient: None | str | Unset
        if isinstance(self.recipient, Unset):
            recipient = UNSET
        else:
            recipient = self.recipient

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

        template: dict[str, Any] | None | Unset
        if isinstance(self.template, Unset):
            template = UNSET
        elif isinstance(self.template, TemplateUse):
            template = self.template.to_dict()
        else:
            template = self.template

        to: dict[str, Any] | None | Unset
        if isinstance(self.to, Unset):
            to = UNSET
        elif isinstance(self.to, TimerTo):
            to = self.to.to_dict()
        else:
            to = self.to

        topic: None | str | Unset
        if isinstance(self.topic, Unset):
            topic = UNSET
        else:
            topic = self.topic

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if channel is not UNSET:
            field_dict["channel"] = channel
        if critical is not UNSET:
            field_dict["critical"] = critical
        if delay_ms is not UNSET:
            field_dict["delay_ms"] = delay_ms
        if digest is not UNSET:
            field_dict["digest"] = digest
        if fire_at is not UNSET:
            field_dict["fire_at"] = fire_at
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if message is not UNSET:
            field_dict["message"] = message
        if on_conflict is not UNSET:
            field_dict["on_conflict"] = on_conflict
        if priority is not UNSET:
            field_dict["priority"] = priority
        if recipient is not UNSET:
            field_dict["recipient"] = recipient
        if route is not UNSET:
            field_dict["route"] = route
        if template is not UNSET:
            field_dict["template"] = template
        if to is not UNSET:
            field_dict["to"] = to
        if topic is not UNSET:
            field_dict["topic"] = topic

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.create_timer_message_type_0 import CreateTimerMessageType0
        from ..models.route_step import RouteStep
        from ..models.template_use import TemplateUse
        from ..models.timer_digest import TimerDigest
        from ..models.timer_to import TimerTo

        d = dict(src_dict)

        def _parse_channel(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        channel = _parse_channel(d.pop("channel", UNSET))

        def _parse_critical(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        critical = _parse_critical(d.pop("critical", UNSET))

        def _parse_delay_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        delay_ms = _parse_delay_ms(d.pop("delay_ms", UNSET))

        def _parse_digest(data: object) -> None | TimerDigest | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                digest_type_1 = TimerDigest.from_dict(data)

                return digest_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TimerDigest | Unset, data)

        digest = _parse_digest(d.pop("digest", UNSET))

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

        def _parse_idempotency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key", UNSET))

        def _parse_message(data: object) -> CreateTimerMessageType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                message_type_0 = CreateTimerMessageType0.from_dict(data)

                return message_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CreateTimerMessageType0 | None | Unset, data)

        message = _parse_message(d.pop("message", UNSET))

        def _parse_on_conflict(data: object) -> None | OnConflict | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                on_conflict_type_1 = check_on_conflict(data)

                return on_conflict_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OnConflict | Unset, data)

        on_conflict = _parse_on_conflict(d.pop("on_conflict", UNSET))

        def _parse_priority(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        priority = _parse_priority(d.pop("priority", UNSET))

        def _parse_recipient(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        recipient = _parse_recipient(d.pop("recipient", UNSET))

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

        def _parse_template(data: object) -> None | TemplateUse | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                template_type_1 = TemplateUse.from_dict(data)

                return template_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TemplateUse | Unset, data)

        template = _parse_template(d.pop("template", UNSET))

        def _parse_to(data: object) -> None | TimerTo | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                to_type_1 = TimerTo.from_dict(data)

                return to_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TimerTo | Unset, data)

        to = _parse_to(d.pop("to", UNSET))

        def _parse_topic(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        topic = _parse_topic(d.pop("topic", UNSET))

        create_timer = cls(
            channel=channel,
            critical=critical,
            delay_ms=delay_ms,
            digest=digest,
            fire_at=fire_at,
            idempotency_key=idempotency_key,
            message=message,
            on_conflict=on_conflict,
            priority=priority,
            recipient=recipient,
            route=route,
            template=template,
            to=to,
            topic=topic,
        )

        return create_timer
