from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.actor_json import ActorJson
    from ..models.task_job_json import TaskJobJson


T = TypeVar("T", bound="TaskJson")


@_attrs_define
class TaskJson:
    """
    Attributes:
        created_at (str):
        id (int):
        planned_at (str):
        rule_id (int):
        state (str):
        version (int):
        changed_by (ActorJson | None | Unset):
        created_by (ActorJson | None | Unset):
        detail (None | str | Unset):
        finished_at (None | str | Unset):
        job (None | TaskJobJson | Unset):
        job_id (int | None | Unset):
        recipients (int | None | Unset):
        started_at (None | str | Unset):
    """

    created_at: str
    id: int
    planned_at: str
    rule_id: int
    state: str
    version: int
    changed_by: ActorJson | None | Unset = UNSET
    created_by: ActorJson | None | Unset = UNSET
    detail: None | str | Unset = UNSET
    finished_at: None | str | Unset = UNSET
    job: None | TaskJobJson | Unset = UNSET
    job_id: int | None | Unset = UNSET
    recipients: int | None | Unset = UNSET
    started_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.actor_json import ActorJson
        from ..models.task_job_json import TaskJobJson

        created_at = self.created_at

        id = self.id

        planned_at = self.planned_at

        rule_id = self.rule_id

        state = self.state

        version = self.version

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

        detail: None | str | Unset
        if isinstance(self.detail, Unset):
            detail = UNSET
        else:
            detail = self.detail

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        else:
            finished_at = self.finished_at

        job: dict[str, Any] | None | Unset
        if isinstance(self.job, Unset):
            job = UNSET
        elif isinstance(self.job, TaskJobJson):
            job = self.job.to_dict()
        else:
            job = self.job

        job_id: int | None | Unset
        if isinstance(self.job_id, Unset):
            job_id = UNSET
        else:
            job_id = self.job_id

        recipients: int | None | Unset
        if isinstance(self.recipients, Unset):
            recipients = UNSET
        else:
            recipients = self.recipients

        started_at: None | str | Unset
        if isinstance(self.started_at, Unset):
            started_at = UNSET
        else:
            started_at = self.started_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "planned_at": planned_at,
                "rule_id": rule_id,
                "state": state,
                "version": version,
            }
        )
        if changed_by is not UNSET:
            field_dict["changed_by"] = changed_by
        if created_by is not UNSET:
            field_dict["created_by"] = created_by
        if detail is not UNSET:
            field_dict["detail"] = detail
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if job is not UNSET:
            field_dict["job"] = job
        if job_id is not UNSET:
            field_dict["job_id"] = job_id
        if recipients is not UNSET:
            field_dict["recipients"] = recipients
        if started_at is not UNSET:
            field_dict["started_at"] = started_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.actor_json import ActorJson
        from ..models.task_job_json import TaskJobJson

        d = dict(src_dict)
        created_at = d.pop("created_at")

        id = d.pop("id")

        planned_at = d.pop("planned_at")

        rule_id = d.pop("rule_id")

        state = d.pop("state")

        version = d.pop("version")

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

        def _parse_detail(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        detail = _parse_detail(d.pop("detail", UNSET))

        def _parse_finished_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))

        def _parse_job(data: object) -> None | TaskJobJson | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                job_type_1 = TaskJobJson.from_dict(data)

                return job_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TaskJobJson | Unset, data)

        job = _parse_job(d.pop("job", UNSET))

        def _parse_job_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        job_id = _parse_job_id(d.pop("job_id", UNSET))

        def _parse_recipients(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        recipients = _parse_recipients(d.pop("recipients", UNSET))

        def _parse_started_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        started_at = _parse_started_at(d.pop("started_at", UNSET))

        task_json = cls(
            created_at=created_at,
            id=id,
            planned_at=planned_at,
            rule_id=rule_id,
            state=state,
            version=version,
            changed_by=changed_by,
            created_by=created_by,
            detail=detail,
            finished_at=finished_at,
            job=job,
            job_id=job_id,
            recipients=recipients,
            started_at=started_at,
        )

        task_json.additional_properties = d
        return task_json

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
