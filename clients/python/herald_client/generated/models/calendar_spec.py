from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.calendar_spec_years import CalendarSpecYears


T = TypeVar("T", bound="CalendarSpec")


@_attrs_define
class CalendarSpec:
    """A calendar as the API receives it and the store keeps it.

    Attributes:
        time_zone (str): IANA zone whose dates the calendar lists: a rule asks about the date
            an occurrence falls on in this zone.
        working_weekdays (list[str]): `mon` … `sun`: the days that are working days unless listed otherwise.
        description (None | str | Unset): What the calendar is for.
        years (CalendarSpecYears | Unset): Per year (`"2026"`), its holidays and make-up working days.
    """

    time_zone: str
    working_weekdays: list[str]
    description: None | str | Unset = UNSET
    years: CalendarSpecYears | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        time_zone = self.time_zone

        working_weekdays = self.working_weekdays

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        years: dict[str, Any] | Unset = UNSET
        if not isinstance(self.years, Unset):
            years = self.years.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "time_zone": time_zone,
                "working_weekdays": working_weekdays,
            }
        )
        if description is not UNSET:
            field_dict["description"] = description
        if years is not UNSET:
            field_dict["years"] = years

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.calendar_spec_years import CalendarSpecYears

        d = dict(src_dict)
        time_zone = d.pop("time_zone")

        working_weekdays = cast(list[str], d.pop("working_weekdays"))

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        _years = d.pop("years", UNSET)
        years: CalendarSpecYears | Unset
        if isinstance(_years, Unset):
            years = UNSET
        else:
            years = CalendarSpecYears.from_dict(_years)

        calendar_spec = cls(
            time_zone=time_zone,
            working_weekdays=working_weekdays,
            description=description,
            years=years,
        )

        return calendar_spec
