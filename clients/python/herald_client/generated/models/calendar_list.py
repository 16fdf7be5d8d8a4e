from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.calendar_json import CalendarJson


T = TypeVar("T", bound="CalendarList")


@_attrs_define
class CalendarList:
    """`GET /v1/calendars`.

    Attributes:
        calendars (list[CalendarJson]): By name: the tenant's own and the built-in ones it has not replaced.
    """

    calendars: list[CalendarJson]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        calendars = []
        for calendars_item_data in self.calendars:
            calendars_item = calendars_item_data.to_dict()
            calendars.append(calendars_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "calendars": calendars,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.calendar_json import CalendarJson

        d = dict(src_dict)
        calendars = []
        _calendars = d.pop("calendars")
        for calendars_item_data in _calendars:
            calendars_item = CalendarJson.from_dict(calendars_item_data)

            calendars.append(calendars_item)

        calendar_list = cls(
            calendars=calendars,
        )

        calendar_list.additional_properties = d
        return calendar_list

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
