from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="YearSpec")


@_attrs_define
class YearSpec:
    """One year of a calendar.

    Attributes:
        holidays (list[str] | Unset): `YYYY-MM-DD` days off, whatever their weekday.
        source (None | str | Unset): Where the dates come from (a notice, a URL).
        workdays (list[str] | Unset): `YYYY-MM-DD` make-up working days, on days otherwise off.
    """

    holidays: list[str] | Unset = UNSET
    source: None | str | Unset = UNSET
    workdays: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        holidays: list[str] | Unset = UNSET
        if not isinstance(self.holidays, Unset):
            holidays = self.holidays

        source: None | str | Unset
        if isinstance(self.source, Unset):
            source = UNSET
        else:
            source = self.source

        workdays: list[str] | Unset = UNSET
        if not isinstance(self.workdays, Unset):
            workdays = self.workdays

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if holidays is not UNSET:
            field_dict["holidays"] = holidays
        if source is not UNSET:
            field_dict["source"] = source
        if workdays is not UNSET:
            field_dict["workdays"] = workdays

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        holidays = cast(list[str], d.pop("holidays", UNSET))

        def _parse_source(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        source = _parse_source(d.pop("source", UNSET))

        workdays = cast(list[str], d.pop("workdays", UNSET))

        year_spec = cls(
            holidays=holidays,
            source=source,
            workdays=workdays,
        )

        return year_spec
