from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.digest_json import DigestJson
    from ..models.step_json import StepJson
    from ..models.template_ref import TemplateRef
    from ..models.timer_json_message_type_0 import TimerJsonMessageType0
    from ..models.to_json import ToJson


T = TypeVar("T", bound="TimerJson")


@_attrs_define
class TimerJson:
    """A timer as the API shows it.

    Attributes:
        attempts (int):
        channel (str):
        created_at (str):
        due_at (str):
        id (int):
        kind (str):
        priority (int):
        recipient (str):
        state (str):
        updated_at (str):
        critical (bool | Unset):
        delivered_at (None | str | Unset):
        digest (DigestJson | None | Unset):
        idempotency_key (None | str | Unset):
        last_error (None | str | Unset):
        message (None | TimerJsonMessageType0 | Unset):
        route (list[StepJson] | None | Unset): Its fallback route, each step's channel resolved; `channel` and `to`
            are those of the step it is at.
        step (int | None | Unset): The step of its route it is at (0 for the first).
        template (None | TemplateRef | Unset):
        to (None | ToJson | Unset):
        topic (None | str | Unset):
        traceparent (None | str | Unset): The W3C trace context the timer was created under, when there was one.
    """

    attempts: int
    channel: str
    created_at: str
    due_at: str
    id: int
    kind: str
    priority: int
    recipient: str
    state: str
    updated_at: str
    critical: bool | Unset = UNSET
    delivered_at: None | str | Unset = UNSET
    digest: DigestJson | None | Unset = UNSET
    idempotency_key: None | str | Unset = UNSET
    last_error: None | str | Unset = UNSET
    message: None | TimerJsonMessageType0 | Unset = UNSET
    route: list[StepJson] | None | Unset = UNSET
    step: int | None | Unset = UNSET
    template: None | TemplateRef | Unset = UNSET
    to: None | ToJson | Unset = UNSET
    topic: None | str | Unset = UNSET
    traceparent: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.digest_json import DigestJson
        from ..models.template_ref import TemplateRef
        from ..models.timer_json_message_type_0 import TimerJsonMessageType0
        from ..models.to_json import ToJson

        attempts = self.attempts

        channel = self.channel

        created_at = self.created_at

        due_at = self.due_at

        id = self.id

        kind = self.kind

        priority = self.priority

        recipient = self.recipient

        state = self.state

        updated_at = self.updated_at

        critical = self.critical

        delivered_at: None | str | Unset
        if isinstance(self.delivered_at, Unset):
            delivered_at = UNSET
        else:
            delivered_at = self.delivered_at

        digest: dict[str, Any] | None | Unset
        if isinstance(self.digest, Unset):
            digest = UNSET
        elif isinstance(self.digest, DigestJson):
            digest = self.digest.to_dict()
        else:
            digest = self.digest

        idempotency_key: None | str | Unset
        if isinstance(self.idempotency_key, Unset):
            idempotency_key = UNSET
        else:
            idempotency_key = self.idempotency_key

        last_error: None | str | Unset
        if isinstance(self.last_error, Unset):
            last_error = UNSET
        else:
            last_error = self.last_error

        message: dict[str, Any] | None | Unset
        if isinstance(self.message, Unset):
            message = UNSET
        elif isinstance(self.message, TimerJsonMessageType0):
            message = self.message.to_dict()
        else:
            message = self.message

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

        step: int | None | Unset
        if isinstance(self.step, Unset):
            step = UNSET
        else:
            step = self.step

        template: dict[str, Any] | None | Unset
        if isinstance(self.template, Unset):
            template = UNSET
        elif isinstance(self.template, TemplateRef):
            template = self.template.to_dict()
        else:
            template = self.template

        to: dict[str, Any] | None | Unset
        if isinstance(self.to, Unset):
            to = UNSET
        elif isinstance(self.to, ToJson):
            to = self.to.to_dict()
        else:
            to = self.to

        topic: None | str | Unset
        if isinstance(self.topic, Unset):
            topic = UNSET
        else:
            topic = self.topic

        traceparent: None | str | Unset
        if isinstance(self.traceparent, Unset):
            traceparent = UNSET
        else:
            traceparent = self.traceparent

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempts": attempts,
                "channel": channel,
                "created_at": created_at,
                "due_at": due_at,
                "id": id,
                "kind": kind,
                "priority": priority,
                "recipient": recipient,
                "state": state,
                "updated_at": updated_at,
            }
        )
        if critical is not UNSET:
            field_dict["critical"] = critical
        if delivered_at is not UNSET:
            field_dict["delivered_at"] = delivered_at
        if digest is not UNSET:
            field_dict["digest"] = digest
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if last_error is not UNSET:
            field_dict["last_error"] = last_error
        if message is not UNSET:
            field_dict["message"] = message
        if route is not UNSET:
            field_dict["route"] = route
        if step is not UNSET:
            field_dict["step"] = step
        if template is not UNSET:
            field_dict["template"] = template
        if to is not UNSET:
            field_dict["to"] = to
        if topic is not UNSET:
            field_dict["topic"] = topic
        if traceparent is not UNSET:
            field_dict["traceparent"] = traceparent

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.digest_json import DigestJson
        from ..models.step_json import StepJson
        from ..models.template_ref import TemplateRef
        from ..models.timer_json_message_type_0 import TimerJsonMessageType0
        from ..models.to_json import ToJson

        d = dict(src_dict)
        attempts = d.pop("attempts")

        channel = d.pop("channel")

        created_at = d.pop("created_at")

        due_at = d.pop("due_at")

        id = d.pop("id")

        kind = d.pop("kind")

        priority = d.pop("priority")

        recipient = d.pop("recipient")

        state = d.pop("state")

        updated_at = d.pop("updated_at")

        critical = d.pop("critical", UNSET)

        def _parse_delivered_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        delivered_at = _parse_delivered_at(d.pop("delivered_at", UNSET))

        def _parse_digest(data: object) -> DigestJson | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                digest_type_1 = DigestJson.from_dict(data)

                return digest_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DigestJson | None | Unset, data)

        digest = _parse_digest(d.pop("digest", UNSET))

        def _parse_idempotency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key", UNSET))

        def _parse_last_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_error = _parse_last_error(d.pop("last_error", UNSET))

        def _parse_message(data: object) -> None | TimerJsonMessageType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                message_type_0 = TimerJsonMessageType0.from_dict(data)

                return message_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TimerJsonMessageType0 | Unset, data)

        message = _parse_message(d.pop("message", UNSET))

        def _parse_route(data: object) -> list[StepJson] | None | Unset:
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
                    route_type_0_item = StepJson.from_dict(route_type_0_item_data)

                    route_type_0.append(route_type_0_item)

                return route_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[StepJson] | None | Unset, data)

        route = _parse_route(d.pop("route", UNSET))

        def _parse_step(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        step = _parse_step(d.pop("step", UNSET))

        def _parse_template(data: object) -> None | TemplateRef | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                template_type_1 = TemplateRef.from_dict(data)

                return template_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TemplateRef | Unset, data)

        template = _parse_template(d.pop("template", UNSET))

        def _parse_to(data: object) -> None | ToJson | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                to_type_1 = ToJson.from_dict(data)

                return to_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ToJson | Unset, data)

        to = _parse_to(d.pop("to", UNSET))

        def _parse_topic(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        topic = _parse_topic(d.pop("topic", UNSET))

        def _parse_traceparent(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        traceparent = _parse_traceparent(d.pop("traceparent", UNSET))

        timer_json = cls(
            attempts=attempts,
            channel=channel,
            created_at=created_at,
            due_at=due_at,
            id=id,
            kind=kind,
            priority=priority,
            recipient=recipient,
            state=state,
            updated_at=updated_at,
            critical=critical,
            delivered_at=delivered_at,
            digest=digest,
            idempotency_key=idempotency_key,
            last_error=last_error,
            message=message,
            route=route,
            step=step,
            template=template,
            to=to,
            topic=topic,
            traceparent=traceparent,
        )

        timer_json.additional_properties = d
        return timer_json

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
