from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.subject_summary_json import SubjectSummaryJson


T = TypeVar("T", bound="SubjectList")


@_attrs_define
class SubjectList:
    """`GET /v1/subjects`: each subject's counts stop at `count_cap` reminders.

    Attributes:
        count_cap (int):
        failed_cap (int): Most failed reminders counted per subject.
        subjects (list[SubjectSummaryJson]):
        next_cursor (None | str | Unset):
    """

    count_cap: int
    failed_cap: int
    subjects: list[SubjectSummaryJson]
    next_cursor: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        count_cap = self.count_cap

        failed_cap = self.failed_cap

        subjects = []
        for subjects_item_data in self.subjects:
            subjects_item = subjects_item_data.to_dict()
            subjects.append(subjects_item)

        next_cursor: None | str | Unset
        if isinstance(self.next_cursor, Unset):
            next_cursor = UNSET
        else:
            next_cursor = self.next_cursor

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "count_cap": count_cap,
                "failed_cap": failed_cap,
                "subjects": subjects,
            }
        )
        if next_cursor is not UNSET:
            field_dict["next_cursor"] = next_cursor

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.subject_summary_json import SubjectSummaryJson

        d = dict(src_dict)
        count_cap = d.pop("count_cap")

        failed_cap = d.pop("failed_cap")

        subjects = []
        _subjects = d.pop("subjects")
        for subjects_item_data in _subjects:
            subjects_item = SubjectSummaryJson.from_dict(subjects_item_data)

            subjects.append(subjects_item)

        def _parse_next_cursor(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        next_cursor = _parse_next_cursor(d.pop("next_cursor", UNSET))

        subject_list = cls(
            count_cap=count_cap,
            failed_cap=failed_cap,
            subjects=subjects,
            next_cursor=next_cursor,
        )

        subject_list.additional_properties = d
        return subject_list

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
