from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.subject_body_data_type_0 import SubjectBodyDataType0


T = TypeVar("T", bound="SubjectBody")


@_attrs_define
class SubjectBody:
    """
    Attributes:
        start_at (datetime.datetime):
        data (None | SubjectBodyDataType0 | Unset):
        title (None | str | Unset):
    """

    start_at: datetime.datetime
    data: None | SubjectBodyDataType0 | Unset = UNSET
    title: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.subject_body_data_type_0 import SubjectBodyDataType0

        start_at = self.start_at.isoformat()

        data: dict[str, Any] | None | Unset
        if isinstance(self.data, Unset):
            data = UNSET
        elif isinstance(self.data, SubjectBodyDataType0):
            data = self.data.to_dict()
        else:
            data = self.data

        title: None | str | Unset
        if isinstance(self.title, Unset):
            title = UNSET
        else:
            title = self.title

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "start_at": start_at,
            }
        )
        if data is not UNSET:
            field_dict["data"] = data
        if title is not UNSET:
            field_dict["title"] = title

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.subject_body_data_type_0 import SubjectBodyDataType0

        d = dict(src_dict)
        start_at = datetime.datetime.fromisoformat(d.pop("start_at"))

        def _parse_data(data: object) -> None | SubjectBodyDataType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                data_type_0 = SubjectBodyDataType0.from_dict(data)

                return data_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubjectBodyDataType0 | Unset, data)

        data = _parse_data(d.pop("data", UNSET))

        def _parse_title(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        title = _parse_title(d.pop("title", UNSET))

        subject_body = cls(
            start_at=start_at,
            data=data,
            title=title,
        )

        return subject_body
