from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.actor_json import ActorJson
    from ..models.follow_up_json import FollowUpJson
    from ..models.job_json_message import JobJsonMessage
    from ..models.job_json_segments import JobJsonSegments
    from ..models.step_json import StepJson
    from ..models.template_ref import TemplateRef
    from ..models.to_type_json import ToTypeJson
    from ..models.totals_json import TotalsJson


T = TypeVar("T", bound="JobJson")


@_attrs_define
class JobJson:
    """
    Attributes:
        audience_id (int):
        avg_rate_per_sec (float): Average since the job started (to its end, once it has ended).
        channel (str):
        created_at (str):
        followed_by (list[int]): The jobs that follow this one (its follow-up, route steps, resends to
            its unread), by id; at most 20 are listed.
        id (int):
        message (JobJsonMessage):
        priority (int):
        rate_per_sec (float): Recipients reaching a final outcome per second, over the last ~10 s;
            0 once the job has ended.
        segment_size (int):
        segments (JobJsonSegments): Segments in each state (every state present, 0 when none).
        state (str):
        totals (TotalsJson): A job's recipients by outcome; they add up to `total`.
        critical (bool | Unset):
        route (list[StepJson] | None | Unset): Its fallback route; `channel` and `to` are those of the step it is
            (a route step's follow-up job is at a later one).
        step (int | None | Unset): The step of its route this job sends (0 for the first).
        template (None | TemplateRef | Unset):
        to (None | ToTypeJson | Unset):
        topic (None | str | Unset):
        category (None | str | Unset): The business kind it serves (e.g. `coupon-reminder`).
        changed_by (ActorJson | None | Unset):
        created_by (ActorJson | None | Unset):
        deadline (None | str | Unset):
        eta_secs (int | None | Unset): Seconds until `remaining` reaches 0 at the current rate; null when the
            rate is 0 or the job has ended.
        finished_at (None | str | Unset):
        follow_up (FollowUpJson | None | Unset):
        follows (int | None | Unset): The job this one follows: the job whose follow-up (or route step) it
            sends, or whose unread recipients it resends to (`:resend-unread`);
            null for any other job.
        last_sent_at (None | str | Unset): When it last recorded an attempt's outcome (delivered, failed, to be
            retried); null if it never sent.
        name (None | str | Unset): Given when it was created; a job a rule starts takes the rule's name.
        started_at (None | str | Unset):
        task_id (int | None | Unset):
    """

    audience_id: int
    avg_rate_per_sec: float
    channel: str
    created_at: str
    followed_by: list[int]
    id: int
    message: JobJsonMessage
    priority: int
    rate_per_sec: float
    segment_size: int
    segments: JobJsonSegments
    state: str
    totals: TotalsJson
    critical: bool | Unset = UNSET
    route: list[StepJson] | None | Unset = UNSET
    step: int | None | Unset = UNSET
    template: None | TemplateRef | Unset = UNSET
    to: None | ToTypeJson | Unset = UNSET
    topic: None | str | Unset = UNSET
    category: None | str | Unset = UNSET
    changed_by: ActorJson | None | Unset = UNSET
    created_by: ActorJson | None | Unset = UNSET
    deadline: None | str | Unset = UNSET
    eta_secs: int | None | Unset = UNSET
    finished_at: None | str | Unset = UNSET
    follow_up: FollowUpJson | None | Unset = UNSET
    follows: int | None | Unset = UNSET
    last_sent_at: None | str | Unset = UNSET
    name: None | str | Unset = UNSET
    started_at: None | str | Unset = UNSET
    task_id: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.actor_json import ActorJson
        from ..models.follow_up_json import FollowUpJson
        from ..models.template_ref import TemplateRef
        from ..models.to_type_json import ToTypeJson

        audience_id = self.audience_id

        avg_rate_per_sec = self.avg_rate_per_sec

        channel = self.channel

        created_at = self.created_at

        followed_by = self.followed_by

        id = self.id

        message = self.message.to_dict()

        priority = self.priority

        rate_per_sec = self.rate_per_sec

        segment_size = self.segment_size

        segments = self.segments.to_dict()

        state = self.state

        totals = self.totals.to_dict()

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

        category: None | str | Unset
        if isinstance(self.category, Unset):
            category = UNSET
        else:
            category = self.category

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

        deadline: None | str | Unset
        if isinstance(self.deadline, Unset):
            deadline = UNSET
        else:
            deadline = self.deadline

        eta_secs: int | None | Unset
        if isinstance(self.eta_secs, Unset):
            eta_secs = UNSET
        else:
            eta_secs = self.eta_secs

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        else:
            finished_at = self.finished_at

        follow_up: dict[str, Any] | None | Unset
        if isinstance(self.follow_up, Unset):
            follow_up = UNSET
        elif isinstance(self.follow_up, FollowUpJson):
            follow_up = self.follow_up.to_dict()
        else:
            follow_up = self.follow_up

        follows: int | None | Unset
        if isinstance(self.follows, Unset):
            follows = UNSET
        else:
            follows = self.follows

        last_sent_at: None | str | Unset
        if isinstance(self.last_sent_at, Unset):
            last_sent_at = UNSET
        else:
            last_sent_at = self.last_sent_at

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        started_at: None | str | Unset
        if isinstance(self.started_at, Unset):
            started_at = UNSET
        else:
            started_at = self.started_at

        task_id: int | None | Unset
        if isinstance(self.task_id, Unset):
            task_id = UNSET
        else:
            task_id = self.task_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "audience_id": audience_id,
                "avg_rate_per_sec": avg_rate_per_sec,
                "channel": channel,
                "created_at": created_at,
                "followed_by": followed_by,
                "id": id,
                "message": message,
                "priority": priority,
                "rate_per_sec": rate_per_sec,
                "segment_size": segment_size,
                "segments": segments,
                "state": state,
                "totals": totals,
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
        if category is not UNSET:
            field_dict["category"] = category
        if changed_by is not UNSET:
            field_dict["changed_by"] = changed_by
        if created_by is not UNSET:
            field_dict["created_by"] = created_by
        if deadline is not UNSET:
            field_dict["deadline"] = deadline
        if eta_secs is not UNSET:
            field_dict["eta_secs"] = eta_secs
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if follow_up is not UNSET:
            field_dict["follow_up"] = follow_up
        if follows is not UNSET:
            field_dict["follows"] = follows
        if last_sent_at is not UNSET:
            field_dict["last_sent_at"] = last_sent_at
        if name is not UNSET:
            field_dict["name"] = name
        if started_at is not UNSET:
            field_dict["started_at"] = started_at
        if task_id is not UNSET:
            field_dict["task_id"] = task_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.actor_json import ActorJson
        from ..models.follow_up_json import FollowUpJson
        from ..models.job_json_message import JobJsonMessage
        from ..models.job_json_segments import JobJsonSegments
        from ..models.step_json import StepJson
        from ..models.template_ref import TemplateRef
        from ..models.to_type_json import ToTypeJson
        from ..models.totals_json import TotalsJson

        d = dict(src_dict)
        audience_id = d.pop("audience_id")

        avg_rate_per_sec = d.pop("avg_rate_per_sec")

        channel = d.pop("channel")

        created_at = d.pop("created_at")

        followed_by = cast(list[int], d.pop("followed_by"))

        id = d.pop("id")

        message = JobJsonMessage.from_dict(d.pop("message"))

        priority = d.pop("priority")

        rate_per_sec = d.pop("rate_per_sec")

        segment_size = d.pop("segment_size")

        segments = JobJsonSegments.from_dict(d.pop("segments"))

        state = d.pop("state")

        totals = TotalsJson.from_dict(d.pop("totals"))

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

        def _parse_category(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        category = _parse_category(d.pop("category", UNSET))

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

        def _parse_deadline(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        deadline = _parse_deadline(d.pop("deadline", UNSET))

        def _parse_eta_secs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        eta_secs = _parse_eta_secs(d.pop("eta_secs", UNSET))

        def _parse_finished_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))

        def _parse_follow_up(data: object) -> FollowUpJson | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                follow_up_type_1 = FollowUpJson.from_dict(data)

                return follow_up_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(FollowUpJson | None | Unset, data)

        follow_up = _parse_follow_up(d.pop("follow_up", UNSET))

        def _parse_follows(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        follows = _parse_follows(d.pop("follows", UNSET))

        def _parse_last_sent_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_sent_at = _parse_last_sent_at(d.pop("last_sent_at", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_started_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        started_at = _parse_started_at(d.pop("started_at", UNSET))

        def _parse_task_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        task_id = _parse_task_id(d.pop("task_id", UNSET))

        job_json = cls(
            audience_id=audience_id,
            avg_rate_per_sec=avg_rate_per_sec,
            channel=channel,
            created_at=created_at,
            followed_by=followed_by,
            id=id,
            message=message,
            priority=priority,
            rate_per_sec=rate_per_sec,
            segment_size=segment_size,
            segments=segments,
            state=state,
            totals=totals,
            critical=critical,
            route=route,
            step=step,
            template=template,
            to=to,
            topic=topic,
            category=category,
            changed_by=changed_by,
            created_by=created_by,
            deadline=deadline,
            eta_secs=eta_secs,
            finished_at=finished_at,
            follow_up=follow_up,
            follows=follows,
            last_sent_at=last_sent_at,
            name=name,
            started_at=started_at,
            task_id=task_id,
        )

        job_json.additional_properties = d
        return job_json

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
