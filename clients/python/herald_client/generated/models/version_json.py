from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.rule_follow_up_json import RuleFollowUpJson
    from ..models.step_json import StepJson
    from ..models.template_ref import TemplateRef
    from ..models.to_type_json import ToTypeJson
    from ..models.version_json_audience import VersionJsonAudience
    from ..models.version_json_message import VersionJsonMessage
    from ..models.version_json_schedule import VersionJsonSchedule


T = TypeVar("T", bound="VersionJson")


@_attrs_define
class VersionJson:
    """
    Attributes:
        audience (VersionJsonAudience):
        channel (str):
        created_at (str):
        message (VersionJsonMessage):
        name (str):
        priority (int):
        schedule (VersionJsonSchedule):
        version (int):
        critical (bool | Unset):
        route (list[StepJson] | None | Unset): Its fallback route; `channel` and `to` are those of the step it is
            (a route step's follow-up job is at a later one).
        step (int | None | Unset): The step of its route this job sends (0 for the first).
        template (None | TemplateRef | Unset):
        to (None | ToTypeJson | Unset):
        topic (None | str | Unset):
        audience_id (int | None | Unset):
        deadline_secs (int | None | Unset):
        follow_up (None | RuleFollowUpJson | Unset):
    """

    audience: VersionJsonAudience
    channel: str
    created_at: str
    message: VersionJsonMessage
    name: str
    priority: int
    schedule: VersionJsonSchedule
    version: int
    critical: bool | Unset = UNSET
    route: list[StepJson] | None | Unset = UNSET
    step: int | None | Unset = UNSET
    template: None | TemplateRef | Unset = UNSET
    to: None | ToTypeJson | Unset = UNSET
    topic: None | str | Unset = UNSET
    audience_id: int | None | Unset = UNSET
    deadline_secs: int | None | Unset = UNSET
    follow_up: None | RuleFollowUpJson | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.rule_follow_up_json import RuleFollowUpJson
        from ..models.template_ref import TemplateRef
        from ..models.to_type_json import ToTypeJson

        audience = self.audience.to_dict()

        channel = self.channel

        created_at = self.created_at

        message = self.message.to_dict()

        name = self.name

        priority = self.priority

        schedule = self.schedule.to_dict()

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

        deadline_secs: int | None | Unset
        if isinstance(self.deadline_secs, Unset):
            deadline_secs = UNSET
        else:
            deadline_secs = self.deadline_secs

        follow_up: dict[str, Any] | None | Unset
        if isinstance(self.follow_up, Unset):
            follow_up = UNSET
        elif isinstance(self.follow_up, RuleFollowUpJson):
            follow_up = self.follow_up.to_dict()
        else:
            follow_up = self.follow_up

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "audience": audience,
                "channel": channel,
                "created_at": created_at,
                "message": message,
                "name": name,
                "priority": priority,
                "schedule": schedule,
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
        if deadline_secs is not UNSET:
            field_dict["deadline_secs"] = deadline_secs
        if follow_up is not UNSET:
            field_dict["follow_up"] = follow_up

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.rule_follow_up_json import RuleFollowUpJson
        from ..models.step_json import StepJson
        from ..models.template_ref import TemplateRef
        from ..models.to_type_json import ToTypeJson
        from ..models.version_json_audience import VersionJsonAudience
        from ..models.version_json_message import VersionJsonMessage
        from ..models.version_json_schedule import VersionJsonSchedule

        d = dict(src_dict)
        audience = VersionJsonAudience.from_dict(d.pop("audience"))

        channel = d.pop("channel")

        created_at = d.pop("created_at")

        message = VersionJsonMessage.from_dict(d.pop("message"))

        name = d.pop("name")

        priority = d.pop("priority")

        schedule = VersionJsonSchedule.from_dict(d.pop("schedule"))

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

        def _parse_deadline_secs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        deadline_secs = _parse_deadline_secs(d.pop("deadline_secs", UNSET))

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

        version_json = cls(
            audience=audience,
            channel=channel,
            created_at=created_at,
            message=message,
            name=name,
            priority=priority,
            schedule=schedule,
            version=version,
            critical=critical,
            route=route,
            step=step,
            template=template,
            to=to,
            topic=topic,
            audience_id=audience_id,
            deadline_secs=deadline_secs,
            follow_up=follow_up,
        )

        version_json.additional_properties = d
        return version_json

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
