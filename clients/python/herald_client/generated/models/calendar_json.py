from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.calendar_spec import CalendarSpec


T = TypeVar("T", bound="CalendarJson")


@_attrs_define
class CalendarJson:
    """A calendar as answered.

    Attributes:
        builtin (bool): Shipped with Herald (not stored): `false` for the tenant's own,
            including one that replaces a built-in of the same name.
        calendar (CalendarSpec): A calendar as the API receives it and the store keeps it.
        name (str):
        created_at (None | str | Unset):
        first_year (int | None | Unset): The first and last year the calendar lists holidays for; outside
            them a rule follows `working_weekdays` only.
        last_year (int | None | Unset):
        updated_at (None | str | Unset):
        updated_by (None | str | Unset): The API key that last wrote it.
    """

    builtin: bool
    calendar: CalendarSpec
    name: str
    created_at: None | str | Unset = UNSET
    first_year: int | None | Unset = UNSET
    last_year: int | None | Unset = UNSET
    updated_at: None | str | Unset = UNSET
    updated_by: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        builtin = self.builtin

        calendar = self.calendar.to_dict()

        name = self.name

        created_at: None | str | Unset
        if isinstance(self.created_at, Unset):
            created_at = UNSET
        else:
            created_at = self.created_at

        first_year: int | None | Unset
        if isinstance(self.first_year, Unset):
            first_year = UNSET
        else:
            first_year = self.first_year

        last_year: int | None | Unset
        if isinstance(self.last_year, Unset):
            last_year = UNSET
        else:
            last_year = self.last_year

        updated_at: None | str | Unset
        if isinstance(self.updated_at, Unset):
            updated_at = UNSET
        else:
            updated_at = self.updated_at

        updated_by: None | str | Unset
        if isinstance(self.updated_by, Unset):
            updated_by = UNSET
        else:
            updated_by = self.updated_by

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "builtin": builtin,
                "calendar": calendar,
                "name": name,
            }
        )
        if created_at is not UNSET:
            field_dict["created_at"] = created_at
        if first_year is not UNSET:
            field_dict["first_year"] = first_year
        if last_year is not UNSET:
            field_dict["last_year"] = last_year
        if updated_at is not UNSET:
            field_dict["updated_at"] = updated_at
        if updated_by is not UNSET:
            field_dict["updated_by"] = updated_by

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.calendar_spec import CalendarSpec

        d = dict(src_dict)
        builtin = d.pop("builtin")

        calendar = CalendarSpec.from_dict(d.pop("calendar"))

        name = d.pop("name")

        def _parse_created_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        created_at = _parse_created_at(d.pop("created_at", UNSET))

        def _parse_first_year(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        first_year = _parse_first_year(d.pop("first_year", UNSET))

        def _parse_last_year(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        last_year = _parse_last_year(d.pop("last_year", UNSET))

        def _parse_updated_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        updated_at = _parse_updated_at(d.pop("updated_at", UNSET))

        def _parse_updated_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        updated_by = _parse_updated_by(d.pop("updated_by", UNSET))

        calendar_json = cls(
            builtin=builtin,
            calendar=calendar,
            name=name,
            created_at=created_at,
            first_year=first_year,
            last_year=last_year,
            updated_at=updated_at,
            updated_by=updated_by,
        )

        calendar_json.additional_properties = d
        return calendar_json

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
