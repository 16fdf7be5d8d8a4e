from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.audience_target import AudienceTarget
    from ..models.campaign_to import CampaignTo
    from ..models.follow_up_body import FollowUpBody
    from ..models.route_step import RouteStep
    from ..models.rule_body_message_type_0 import RuleBodyMessageType0
    from ..models.rule_body_schedule import RuleBodySchedule
    from ..models.template_use import TemplateUse


T = TypeVar("T", bound="RuleBody")


@_attrs_define
class RuleBody:
    """
    Attributes:
        audience (AudienceTarget): Who a rule sends to. Kept as the request gave it.
        name (str):
        schedule (RuleBodySchedule):
        channel (None | str | Unset): A configured channel; left out, the first step of `route` (or, with
            `to` and no route, of the tenant's default route, `[routing]`). A channel configured on the node (`GET
            /v1/channels` lists them).
        critical (bool | None | Unset): Sent in quiet hours too; never past an opt-out.
        deadline_secs (int | None | Unset):
        follow_up (FollowUpBody | None | Unset):
        message (None | RuleBodyMessageType0 | Unset): The message in the channel provider's shape; give this or
            `template`.
        priority (int | None | Unset):
        route (list[RouteStep] | None | Unset): A fallback route (with `to`): each later step is a follow-up job of
            every task's job, as a job's `route`.
        template (None | TemplateUse | Unset):
        to (CampaignTo | None | Unset):
        topic (None | str | Unset): What the message is about, for subscribers' topic opt-outs.
    """

    audience: AudienceTarget
    name: str
    schedule: RuleBodySchedule
    channel: None | str | Unset = UNSET
    critical: bool | None | Unset = UNSET
    deadline_secs: int | None | Unset = UNSET
    follow_up: FollowUpBody | None | Unset = UNSET
    message: None | RuleBodyMessageType0 | Unset = UNSET
    priority: int | None | Unset = UNSET
    route: list[RouteStep] | None | Unset = UNSET
    template: None | TemplateUse | Unset = UNSET
    to: CampaignTo | None | Unset = UNSET
    topic: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.campaign_to import CampaignTo
        from ..models.follow_up_body import FollowUpBody
        from ..models.rule_body_message_type_0 import RuleBodyMessageType0
        from ..models.template_use import TemplateUse

        audience = self.audience.to_dict()

        name = self.name

        schedule = self.schedule.to_dict()

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

        deadline_secs: int | None | Unset
        if isinstance(self.deadline_secs, Unset):
            deadline_secs = UNSET
        else:
            deadline_secs = self.deadline_secs

        follow_up: dict[str, Any] | None | Unset
        if isinstance(self.follow_up, Unset):
            follow_up = UNSET
        elif isinstance(self.follow_up, FollowUpBody):
            follow_up = self.follow_up.to_dict()
        else:
            follow_up = self.follow_up

        message: dict[str, Any] | None | Unset
        if isinstance(self.message, Unset):
            message = UNSET
        elif isinstance(self.message, RuleBodyMessageType0):
            message = self.message.to_dict()
        else:
            message = self.message

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
        elif isinstance(self.to, CampaignTo):
            to = self.to.to_dict()
        else:
            to = self.to

        topic: None | str | Unset
        if isinstance(self.topic, Unset):
            topic = UNSET
        else:
            topic = self.topic

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "audience": audience,
                "name": name,
                "schedule": schedule,
            }
        )
        if channel is not UNSET:
            field_dict["channel"] = channel
        if critical is not UNSET:
            field_dict["critical"] = critical
        if deadline_secs is not UNSET:
            field_dict["deadline_secs"] = deadline_secs
        if follow_up is not UNSET:
            field_dict["follow_up"] = follow_up
        if message is not UNSET:
            field_dict["message"] = message
        if priority is not UNSET:
            field_dict["priority"] = priority
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
        from ..models.audience_target import AudienceTarget
        from ..models.campaign_to import CampaignTo
        from ..models.follow_up_body import FollowUpBody
        from ..models.route_step import RouteStep
        from ..models.rule_body_message_type_0 import RuleBodyMessageType0
        from ..models.rule_body_schedule import RuleBodySchedule
        from ..models.template_use import TemplateUse

        d = dict(src_dict)
        audience = AudienceTarget.from_dict(d.pop("audience"))

        name = d.pop("name")

        schedule = RuleBodySchedule.from_dict(d.pop("schedule"))

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

        def _parse_deadline_secs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        deadline_secs = _parse_deadline_secs(d.pop("deadline_secs", UNSET))

        def _parse_follow_up(data: object) -> FollowUpBody | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                follow_up_type_1 = FollowUpBody.from_dict(data)

                return follow_up_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(FollowUpBody | None | Unset, data)

        follow_up = _parse_follow_up(d.pop("follow_up", UNSET))

        def _parse_message(data: object) -> None | RuleBodyMessageType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                message_type_0 = RuleBodyMessageType0.from_dict(data)

                return message_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RuleBodyMessageType0 | Unset, data)

        message = _parse_message(d.pop("message", UNSET))

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

        def _parse_to(data: object) -> CampaignTo | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                to_type_1 = CampaignTo.from_dict(data)

                return to_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CampaignTo | None | Unset, data)

        to = _parse_to(d.pop("to", UNSET))

        def _parse_topic(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        topic = _parse_topic(d.pop("topic", UNSET))

        rule_body = cls(
            audience=audience,
            name=name,
            schedule=schedule,
            channel=channel,
            critical=critical,
            deadline_secs=deadline_secs,
            follow_up=follow_up,
            message=message,
            priority=priority,
            route=route,
            template=template,
            to=to,
            topic=topic,
        )

        return rule_body
