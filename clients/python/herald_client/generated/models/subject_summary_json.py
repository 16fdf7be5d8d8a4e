from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="SubjectSummaryJson")


@_attrs_define
class SubjectSummaryJson:
    """One line of a listing.

    Attributes:
        counts_capped (bool): Counting stopped at the cap: both figures are lower bounds.
        reminders (int): Reminders (a user's channel type and lead), sent or still to come.
        subscribers (int): Distinct users with at least one reminder on the subject.
        failed (int): Its failed and dead reminders, counted up to `failed_cap` through
            the failures index (those due within the longest configured lead of
            its start): a subject whose reminders fail stands out in a list.
        start_at (str):
        subject_id (str):
        title (None | str | Unset):
    """

    counts_capped: bool
    reminders: int
    subscribers: int
    failed: int
    start_at: str
    subject_id: str
    title: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        counts_capped = self.counts_capped

        reminders = self.reminders

        subscribers = self.subscribers

        failed = self.failed

        start_at = self.start_at

        subject_id = self.subject_id

        title: None | str | Unset
        if isinstance(self.title, Unset):
            title = UNSET
        else:
            title = self.title

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "counts_capped": counts_capped,
                "reminders": reminders,
                "subscribers": subscribers,
                "failed": failed,
                "start_at": start_at,
                "subject_id": subject_id,
            }
        )
        if title is not UNSET:
            field_dict["title"] = title

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        counts_capped = d.pop("counts_capped")

        reminders = d.pop("reminders")

        subscribers = d.pop("subscribers")

        failed = d.pop("failed")

        start_at = d.pop("start_at")

        subject_id = d.pop("subject_id")

        def _parse_title(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        title = _parse_title(d.pop("title", UNSET))

        subject_summary_json = cls(
            counts_capped=counts_capped,
            reminders=reminders,
            subscribers=subscribers,
            failed=failed,
            start_at=start_at,
            subject_id=subject_id,
            title=title,
        )

        subject_summary_json.additional_properties = d
        return subject_summary_json

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
