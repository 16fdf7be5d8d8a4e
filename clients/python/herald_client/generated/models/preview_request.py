from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.preview_request_schedule import PreviewRequestSchedule


T = TypeVar("T", bound="PreviewRequest")


@_attrs_define
class PreviewRequest:
    """
    Attributes:
        schedule (PreviewRequestSchedule): A rule's `schedule` object (`at` or `cron`).
        count (int | None | Unset): Default 10.
        from_ (datetime.datetime | None | Unset):
    """

    schedule: PreviewRequestSchedule
    count: int | None | Unset = UNSET
    from_: datetime.datetime | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        schedule = self.schedule.to_dict()

        count: int | None | Unset
        if isinstance(self.count, Unset):
            count = UNSET
        else:
            count = self.count

        from_: None | str | Unset
        if isinstance(self.from_, Unset):
            from_ = UNSET
        elif isinstance(self.from_, datetime.datetime):
            from_ = self.from_.isoformat()
        else:
            from_ = self.from_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "schedule": schedule,
            }
        )
        if count is not UNSET:
            field_dict["count"] = count
        if from_ is not UNSET:
            field_dict["from"] = from_

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.preview_request_schedule import PreviewRequestSchedule

        d = dict(src_dict)
        schedule = PreviewRequestSchedule.from_dict(d.pop("schedule"))

        def _parse_count(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        count = _parse_count(d.pop("count", UNSET))

        def _parse_from_(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                from_type_0 = datetime.datetime.fromisoformat(data)

                return from_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        from_ = _parse_from_(d.pop("from", UNSET))

        preview_request = cls(
            schedule=schedule,
            count=count,
            from_=from_,
        )

        return preview_request
