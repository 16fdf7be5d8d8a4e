from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.year_spec import YearSpec


T = TypeVar("T", bound="CalendarSpecYears")


@_attrs_define
class CalendarSpecYears:
    """Per year (`"2026"`), its holidays and make-up working days."""

    additional_properties: dict[str, YearSpec] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            field_dict[prop_name] = prop.to_dict()

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.year_spec import YearSpec

        d = dict(src_dict)
        calendar_spec_years = cls()

        additional_properties = {}
        for prop_name, prop_dict in d.items():
            additional_property = YearSpec.from_dict(prop_dict)

            additional_properties[prop_name] = additional_property

        calendar_spec_years.additional_properties = additional_properties
        return calendar_spec_years

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> YearSpec:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: YearSpec) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
