from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.actor_json import ActorJson
    from ..models.rule_follow_up_json import RuleFollowUpJson
    from ..models.rule_json_audience import RuleJsonAudience
    from ..models.rule_json_message import RuleJsonMessage
    from ..models.rule_json_schedule import RuleJsonSchedule
    from ..models.step_json import StepJson
    from ..models.template_ref import TemplateRef
    from ..models.to_type_json import ToTypeJson


T = TypeVar("T", bound="RuleJson")


@_attrs_define
class RuleJson:
    """
    Attributes:
        audience (RuleJsonAudience):
        channel (str):
        created_at (str):
        id (int):
        message (RuleJsonMessage):
        name (str):
        priority (int):
        schedule (RuleJsonSchedule):
        status (str):
        updated_at (str):
        version (int):
        critical (bool | Unset):
        route (list[StepJson] | None | Unset): Its fallback route; `channel` and `to` are those of the step it is
            (a route step's follow-up job is at a later one).
        step (int | None | Unset): The step of its route this job sends (0 for the first).
        template (None | TemplateRef | Unset):
        to (None | ToTypeJson | Unset):
        topic (None | str | Unset):
        audience_id (int | None | Unset): The audience its jobs send to (uploaded, or built from `users`).
        changed_by (ActorJson | None | Unset):
        created_by (ActorJson | None | Unset):
        deadline_secs (int | None | Unset):
        expected_receivers (int | None | Unset): `GET /v1/rules/{id}` only: how many recipients its jobs send to (the
            size of its audience), or null when that cannot be known before a
            job sends (see `expected_receivers_unknown`).
        expected_receivers_unknown (None | str | Unset): Why `expected_receivers` is null (parties or tags, which the
            provider
            expands itself; an audience upload not finished).
        follow_up (None | RuleFollowUpJson | Unset):
        next_run_at (None | str | Unset): When the rule sends next; `null` unless enabled.
    """

    audience: RuleJsonAudience
    channel: str
    created_at: str
    id: int
    message: RuleJsonMessage
    name: str
    priority: int
    schedule: RuleJsonSchedule
    status: str
    updated_at: str
    version: int
    critical: bool | Unset = UNSET
    route: list[StepJson] | None | Unset = UNSET
    step: int | None | Unset = UNSET
    template: None | TemplateRef | Unset = UNSET
    to: None | ToTypeJson | Unset = UNSET
    topic: None | str | Unset = UNSET
    audience_id: int | None | Unset = UNSET
    changed_by: ActorJson | None | Unset = UNSET
    created_by: ActorJson | None | Unset = UNSET
    deadline_secs: int | None | Unset = UNSET
    expected_receivers: int | None | Unset = UNSET
    expected_receivers_unknown: None | str | Unset = UNSET
    follow_up: None | RuleFollowUpJson | Unset = UNSET
    next_run_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.actor_json import ActorJson
        from ..models.rule_follow_up_json import RuleFollowUpJson
        from ..models.template_ref import TemplateRef
        from ..models.to_type_json import ToTypeJson

        audience = self.audience.to_dict()

        channel = self.channel

        created_at = self.created_at

        id = self.id

        message = self.message.to_dict()

        name = self.name

        priority = self.priority

        schedule = self.schedule.to_dict()

        status = self.status

        updated_at = self.updated_at

        version = self.version

        critical = self.critical

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
        elif isinstance(self.to, ToTypeJson):
            to = self.to.to_dict()
        else:
            to = self.to

        topic: None | str | Unset
        if isinstance(self.topic, Unset):
            topic = UNSET
        else:
            topic = self.topic

        audience_id: int | None | Unset
        if isinstance(self.audience_id, Unset):
            audience_id = UNSET
        else:
            audience_id = self.audience_id

        changed_by: dict[str, Any] | None | Unset
        if isinstance(self.changed_by, Unset):
            changed_by = UNSET
        elif isinstance(self.changed_by, ActorJson):
            changed_by = self.changed_by.to_dict()
        else:
            changed_by = self.changed_by

        created_by: dict[str, Any] | None | Unset
        if isinstance(self.created_by, Unset):
            created_by = UNSET
        elif isinstance(self.created_by, ActorJson):
            created_by = self.created_by.to_dict()
        else:
            created_by = self.created_by

        deadline_secs: int | None | Unset
        if isinstance(self.deadline_secs, Unset):
            deadline_secs = UNSET
        else:
            deadline_secs = self.deadline_secs

        expected_receivers: int | None | Unset
        if isinstance(self.expected_receivers, Unset):
            expected_receivers = UNSET
        else:
            expected_receivers = self.expected_receivers

        expected_receivers_unknown: None | str | Unset
        if isinstance(self.expected_receivers_unknown, Unset):
            expected_receivers_unknown = UNSET
        else:
            expected_receivers_unknown = self.expected_receivers_unknown

        follow_up: dict[str, Any] | None | Unset
        if isinstance(self.follow_up, Unset):
            follow_up = UNSET
        elif isinstance(self.follow_up, RuleFollowUpJson):
            follow_up = self.follow_up.to_dict()
        else:
            follow_up = self.follow_up

        next_run_at: None | str | Unset
        if isinstance(self.next_run_at, Unset):
            next_run_at = UNSET
        else:
            next_run_at = self.next_run_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "audience": audience,
                "channel": channel,
                "created_at": created_at,
                "id": id,
                "message": message,
                "name": name,
                "priority": priority,
                "schedule": schedule,
                "status": status,
                "updated_at": updated_at,
                "version": version,
            }
        )
        if critical is not UNSET:
            field_dict["critical"] = critical
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
        if audience_id is not UNSET:
            field_dict["audience_id"] = audience_id
        if changed_by is not UNSET:
            field_dict["changed_by"] = changed_by
        if created_by is not UNSET:
            field_dict["created_by"] = created_by
        if deadline_secs is not UNSET:
            field_dict["deadline_secs"] = deadline_secs
        if expected_receivers is not UNSET:
            field_dict["expected_receivers"] = expected_receivers
        if expected_receivers_unknown is not UNSET:
            field_dict["expected_receivers_unknown"] = expected_receivers_unknown
        if follow_up is not UNSET:
            field_dict["follow_up"] = follow_up
        if next_run_at is not UNSET:
            field_dict["next_run_at"] = next_run_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.actor_json import ActorJson
        from ..models.rule_follow_up_json import RuleFollowUpJson
        from ..models.rule_json_audience import RuleJsonAudience
        from ..models.rule_json_message import RuleJsonMessage
        from ..models.rule_json_schedule import RuleJsonSchedule
        from ..models.step_json import StepJson
        from ..models.template_ref import TemplateRef
        from ..models.to_type_json import ToTypeJson

        d = dict(src_dict)
        audience = RuleJsonAudience.from_dict(d.pop("audience"))

        channel = d.pop("channel")

        created_at = d.pop("created_at")

        id = d.pop("id")

        message = RuleJsonMessage.from_dict(d.pop("message"))

        name = d.pop("name")

        priority = d.pop("priority")

        schedule = RuleJsonSchedule.from_dict(d.pop("schedule"))

        status = d.pop("status")

        updated_at = d.pop("updated_at")

        version = d.pop("version")

        critical = d.pop("critical", UNSET)

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

        def _parse_to(data: object) -> None | ToTypeJson | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                to_type_1 = ToTypeJson.from_dict(data)

                return to_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ToTypeJson | Unset, data)

        to = _parse_to(d.pop("to", UNSET))

        def _parse_topic(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        topic = _parse_topic(d.pop("topic", UNSET))

        def _parse_audience_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        audience_id = _parse_audience_id(d.pop("audience_id", UNSET))

        def _parse_changed_by(data: object) -> ActorJson | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                changed_by_type_1 = ActorJson.from_dict(data)

                return changed_by_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ActorJson | None | Unset, data)

        changed_by = _parse_changed_by(d.pop("changed_by", UNSET))

        def _parse_created_by(data: object) -> ActorJson | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                created_by_type_1 = ActorJson.from_dict(data)

                return created_by_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ActorJson | None | Unset, data)

        created_by = _parse_created_by(d.pop("created_by", UNSET))

        def _parse_deadline_secs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        deadline_secs = _parse_deadline_secs(d.pop("deadline_secs", UNSET))

        def _parse_expected_receivers(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        expected_receivers = _parse_expected_receivers(
            d.pop("expected_receivers", UNSET)
        )

        def _parse_expected_receivers_unknown(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        expected_receivers_unknown = _parse_expected_receivers_unknown(
            d.pop("expected_receivers_unknown", UNSET)
        )

        def _parse_follow_up(data: object) -> None | RuleFollowUpJson | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                follow_up_type_1 = RuleFollowUpJson.from_dict(data)

                return follow_up_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RuleFollowUpJson | Unset, data)

        follow_up = _parse_follow_up(d.pop("follow_up", UNSET))

        def _parse_next_run_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        next_run_at = _parse_next_run_at(d.pop("next_run_at", UNSET))

        rule_json = cls(
            audience=audience,
            channel=channel,
            created_at=created_at,
            id=id,
            message=message,
            name=name,
            priority=priority,
            schedule=schedule,
            status=status,
            updated_at=updated_at,
            version=version,
            critical=critical,
            route=route,
            step=step,
            template=template,
            to=to,
            topic=topic,
            audience_id=audience_id,
            changed_by=changed_by,
            created_by=created_by,
            deadline_secs=deadline_secs,
            expected_receivers=expected_receivers,
            expected_receivers_unknown=expected_receivers_unknown,
            follow_up=follow_up,
            next_run_at=next_run_at,
        )

        rule_json.additional_properties = d
        return rule_json

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
