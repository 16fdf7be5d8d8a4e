from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="JobRecalled")


@_attrs_define
class JobRecalled:
    """The answer: recipients by what happened to the message they got.

    Attributes:
        already_recalled (int): Recipients whose message was recalled before.
        failed (int): Recipients whose message the provider refused to recall.
        job_id (int):
        messages (int): Provider messages looked at.
        recalled (int): Recipients whose message this request recalled.
        too_old (int): Recipients whose message is past the provider's recall window.
        error (None | str | Unset): The first refusal's text, when there was one.
    """

    already_recalled: int
    failed: int
    job_id: int
    messages: int
    recalled: int
    too_old: int
    error: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        already_recalled = self.already_recalled

        failed = self.failed

        job_id = self.job_id

        messages = self.messages

        recalled = self.recalled

        too_old = self.too_old

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "already_recalled": already_recalled,
                "failed": failed,
                "job_id": job_id,
                "messages": messages,
                "recalled": recalled,
                "too_old": too_old,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        already_recalled = d.pop("already_recalled")

        failed = d.pop("failed")

        job_id = d.pop("job_id")

        messages = d.pop("messages")

        recalled = d.pop("recalled")

        too_old = d.pop("too_old")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        job_recalled = cls(
            already_recalled=already_recalled,
            failed=failed,
            job_id=job_id,
            messages=messages,
            recalled=recalled,
            too_old=too_old,
            error=error,
        )

        job_recalled.additional_properties = d
        return job_recalled

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
