from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="SegmentJson")


@_attrs_define
class SegmentJson:
    """
    Attributes:
        attempt (int):
        created_at (str):
        cursor (int):
        end (int):
        epoch (int):
        id (int):
        job_id (int):
        not_before (str):
        start (int):
        state (str):
        finished_at (None | str | Unset): When it ended (`done`, `partial`, `abandoned`, `expired` or
            `cancelled`); null while pending or running.
        lease_until (None | str | Unset):
        owner (None | str | Unset):
        parent_id (int | None | Unset):
    """

    attempt: int
    created_at: str
    cursor: int
    end: int
    epoch: int
    id: int
    job_id: int
    not_before: str
    start: int
    state: str
    finished_at: None | str | Unset = UNSET
    lease_until: None | str | Unset = UNSET
    owner: None | str | Unset = UNSET
    parent_id: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        created_at = self.created_at

        cursor = self.cursor

        end = self.end

        epoch = self.epoch

        id = self.id

        job_id = self.job_id

        not_before = self.not_before

        start = self.start

        state = self.state

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        else:
            finished_at = self.finished_at

        lease_until: None | str | Unset
        if isinstance(self.lease_until, Unset):
            lease_until = UNSET
        else:
            lease_until = self.lease_until

        owner: None | str | Unset
        if isinstance(self.owner, Unset):
            owner = UNSET
        else:
            owner = self.owner

        parent_id: int | None | Unset
        if isinstance(self.parent_id, Unset):
            parent_id = UNSET
        else:
            parent_id = self.parent_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "created_at": created_at,
                "cursor": cursor,
                "end": end,
                "epoch": epoch,
                "id": id,
                "job_id": job_id,
                "not_before": not_before,
                "start": start,
                "state": state,
            }
        )
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if lease_until is not UNSET:
            field_dict["lease_until"] = lease_until
        if owner is not UNSET:
            field_dict["owner"] = owner
        if parent_id is not UNSET:
            field_dict["parent_id"] = parent_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        created_at = d.pop("created_at")

        cursor = d.pop("cursor")

        end = d.pop("end")

        epoch = d.pop("epoch")

        id = d.pop("id")

        job_id = d.pop("job_id")

        not_before = d.pop("not_before")

        start = d.pop("start")

        state = d.pop("state")

        def _parse_finished_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))

        def _parse_lease_until(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        lease_until = _parse_lease_until(d.pop("lease_until", UNSET))

        def _parse_owner(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        owner = _parse_owner(d.pop("owner", UNSET))

        def _parse_parent_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        parent_id = _parse_parent_id(d.pop("parent_id", UNSET))

        segment_json = cls(
            attempt=attempt,
            created_at=created_at,
            cursor=cursor,
            end=end,
            epoch=epoch,
            id=id,
            job_id=job_id,
            not_before=not_before,
            start=start,
            state=state,
            finished_at=finished_at,
            lease_until=lease_until,
            owner=owner,
            parent_id=parent_id,
        )

        segment_json.additional_properties = d
        return segment_json

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
