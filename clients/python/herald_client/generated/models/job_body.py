from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.campaign_to import CampaignTo
    from ..models.follow_up_body import FollowUpBody
    from ..models.job_body_message_type_0 import JobBodyMessageType0
    from ..models.route_step import RouteStep
    from ..models.template_use import TemplateUse


T = TypeVar("T", bound="JobBody")


@_attrs_define
class JobBody:
    """
    Attributes:
        audience_id (int | None | Unset):
        category (None | str | Unset): The business kind it serves, e.g. `coupon-reminder` or `marketing`:
            1..=64 of `A-Z a-z 0-9 _ - . :`. `GET /v1/jobs?category=` lists one.
        channel (None | str | Unset): A configured channel; left out, the first step of `route` (or, with
            `to` and no route, of the tenant's default route, `[routing]`). A channel configured on the node (`GET
            /v1/channels` lists them).
        critical (bool | None | Unset): Sent in quiet hours too (the channel's and subscribers'); never past
            an opt-out.
        deadline (datetime.datetime | None | Unset):
        deadline_secs (int | None | Unset):
        follow_up (FollowUpBody | None | Unset):
        message (JobBodyMessageType0 | None | Unset): The message in the channel provider's shape; give this or
            `template`.
        name (None | str | Unset): What to call it: 1..=200 characters, no control character.
        priority (int | None | Unset):
        route (list[RouteStep] | None | Unset): A fallback route (with `to`): its first step is this job; each later
            step is a follow-up job on its channel, of the recipients whose
            outcome at the step before it lists in `on`, once that job ends
            (`after` it, for `unread`).
        segment_size (int | None | Unset):
        template (None | TemplateUse | Unset):
        to (CampaignTo | None | Unset):
        topic (None | str | Unset): What the message is about, for subscribers' topic opt-outs.
        users (list[str] | None | Unset):
    """

    audience_id: int | None | Unset = UNSET
    category: None | str | Unset = UNSET
    channel: None | str | Unset = UNSET
    critical: bool | None | Unset = UNSET
    deadline: datetime.datetime | None | Unset = UNSET
    deadline_secs: int | None | Unset = UNSET
    follow_up: FollowUpBody | None | Unset = UNSET
    message: JobBodyMessageType0 | None | Unset = UNSET
    name: None | str | Unset = UNSET
    priority: int | None | Unset = UNSET
    route: list[RouteStep] | None | Unset = UNSET
    segment_size: int | None | Unset = UNSET
    template: None | TemplateUse | Unset = UNSET
    to: CampaignTo | None | Unset = UNSET
    topic: None | str | Unset = UNSET
    users: list[str] | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.campaign_to import CampaignTo
        from ..models.follow_up_body import FollowUpBody
        from ..models.job_body_message_type_0 import JobBodyMessageType0
        from ..models.template_use import TemplateUse

        audience_id: int | None | Unset
        if isinstance(self.audience_id, Unset):
            audience_id = UNSET
        else:
            audience_id = self.audience_id

        category: None | str | Unset
        if isinstance(self.category, Unset):
            category = UNSET
        else:
            category = self.category

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

        deadline: None | str | Unset
        if isinstance(self.deadline, Unset):
            deadline = UNSET
        elif isinstance(self.deadline, datetime.datetime):
            deadline = self.deadline.isoformat()
        else:
            deadline = self.deadline

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
        elif isinstance(self.message, JobBodyMessageType0):
            message = self.message.to_dict()
        else:
            message = self.message

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

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

        segment_size: int | None | Unset
        if isinstance(self.segment_size, Unset):
            segment_size = UNSET
        else:
            segment_size = self.segment_size

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

        users: list[str] | None | Unset
        if isinstance(self.users, Unset):
            users = UNSET
        elif isinstance(self.users, list):
            users = self.users

        else:
            users = self.users

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if audience_id is not UNSET:
            field_dict["audience_id"] = audience_id
        if category is not UNSET:
            field_dict["category"] = category
        if channel is not UNSET:
            field_dict["channel"] = channel
        if critical is not UNSET:
            field_dict["critical"] = critical
        if deadline is not UNSET:
            field_dict["deadline"] = deadline
        if deadline_secs is not UNSET:
            field_dict["deadline_secs"] = deadline_secs
        if follow_up is not UNSET:
            field_dict["follow_up"] = follow_up
        if message is not UNSET:
            field_dict["message"] = message
        if name is not UNSET:
            field_dict["name"] = name
        if priority is not UNSET:
            field_dict["priority"] = priority
        if route is not UNSET:
            field_dict["route"] = route
        if segment_size is not UNSET:
            field_dict["segment_size"] = segment_size
        if template is not UNSET:
            field_dict["template"] = template
        if to is not UNSET:
            field_dict["to"] = to
        if topic is not UNSET:
            field_dict["topic"] = topic
        if users is not UNSET:
            field_dict["users"] = users

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.campaign_to import CampaignTo
        from ..models.follow_up_body import FollowUpBody
        from ..models.job_body_message_type_0 import JobBodyMessageType0
        from ..models.route_step import RouteStep
        from ..models.template_use import TemplateUse

        d = dict(src_dict)

        def _parse_audience_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        audience_id = _parse_audience_id(d.pop("audience_id", UNSET))

        def _parse_category(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        category = _parse_category(d.pop("category", UNSET))

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

        def _parse_deadline(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                deadline_type_0 = datetime.datetime.fromisoformat(data)

                return deadline_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        deadline = _parse_deadline(d.pop("deadline", UNSET))

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

        def _parse_message(data: object) -> JobBodyMessageType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                message_type_0 = JobBodyMessageType0.from_dict(data)

                return message_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JobBodyMessageType0 | None | Unset, data)

        message = _parse_message(d.pop("message", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

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

        def _parse_segment_size(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        segment_size = _parse_segment_size(d.pop("segment_size", UNSET))

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

        def _parse_users(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                users_type_0 = cast(list[str], data)

                return users_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        users = _parse_users(d.pop("users", UNSET))

        job_body = cls(
            audience_id=audience_id,
            category=category,
            channel=channel,
            critical=critical,
            deadline=deadline,
            deadline_secs=deadline_secs,
            follow_up=follow_up,
            message=message,
            name=name,
            priority=priority,
            route=route,
            segment_size=segment_size,
            template=template,
            to=to,
            topic=topic,
            users=users,
        )

        return job_body
