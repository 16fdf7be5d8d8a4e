from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.failure_group import FailureGroup


T = TypeVar("T", bound="JobFailures")


@_attrs_define
class JobFailures:
    """The answer to `GET /v1/jobs/{id}/failures`.

    Attributes:
        groups (list[FailureGroup]): Largest groups first.
        scanned (int): Failed sends read (at most 10,000, lowest recipient index first).
        truncated (bool): More failed sends exist than were read.
    """

    groups: list[FailureGroup]
    scanned: int
    truncated: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        groups = []
        for groups_item_data in self.groups:
            groups_item = groups_item_data.to_dict()
            groups.append(groups_item)

        scanned = self.scanned

        truncated = self.truncated

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "groups": groups,
                "scanned": scanned,
                "truncated": truncated,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.failure_group import FailureGroup

        d = dict(src_dict)
        groups = []
        _groups = d.pop("groups")
        for groups_item_data in _groups:
            groups_item = FailureGroup.from_dict(groups_item_data)

            groups.append(groups_item)

        scanned = d.pop("scanned")

        truncated = d.pop("truncated")

        job_failures = cls(
            groups=groups,
            scanned=scanned,
            truncated=truncated,
        )

        job_failures.additional_properties = d
        return job_failures

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
