from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="FollowUpJson")


@_attrs_define
class FollowUpJson:
    """Where a job's follow-up stands.

    Attributes:
        after_secs (int):
        only (str): Who gets it: `unread`, or `route` for the next step of the job's
            route (the recipients whose outcome that step's `on` lists).
        state (str): `waiting` (until the job has ended `after_secs` ago), `sent`, or
            `skipped` (nobody left unread, or the job was cancelled).
        job_id (int | None | Unset): The job that sent it.
        step (int | None | Unset): The step of the job's route it sends.
    """

    after_secs: int
    only: str
    state: str
    job_id: int | None | Unset = UNSET
    step: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        after_secs = self.after_secs

        only = self.only

        state = self.state

        job_id: int | None | Unset
        if isinstance(self.job_id, Unset):
            job_id = UNSET
        else:
            job_id = self.job_id

        step: int | None | Unset
        if isinstance(self.step, Unset):
            step = UNSET
        else:
            step = self.step

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "after_secs": after_secs,
                "only": only,
                "state": state,
            }
        )
        if job_id is not UNSET:
            field_dict["job_id"] = job_id
        if step is not UNSET:
            field_dict["step"] = step

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        after_secs = d.pop("after_secs")

        only = d.pop("only")

        state = d.pop("state")

        def _parse_job_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        job_id = _parse_job_id(d.pop("job_id", UNSET))

        def _parse_step(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        step = _parse_step(d.pop("step", UNSET))

        follow_up_json = cls(
            after_secs=after_secs,
            only=only,
            state=state,
            job_id=job_id,
            step=step,
        )

        follow_up_json.additional_properties = d
        return follow_up_json

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
