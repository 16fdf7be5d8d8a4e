from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Preview")


@_attrs_define
class Preview:
    """`POST /v1/schedules:preview`'s answer.

    Attributes:
        instants (list[str]): In UTC.
        local (list[str]): The same instants as wall clock times with their offset in the
            schedule's `timezone` (UTC for an `at` or `immediate` one).
        warnings (list[str] | Unset): What the caller should know about them: instants in a year the
            schedule's calendar lists no holidays for follow its regular
            working weekdays only.
    """

    instants: list[str]
    local: list[str]
    warnings: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        instants = self.instants

        local = self.local

        warnings: list[str] | Unset = UNSET
        if not isinstance(self.warnings, Unset):
            warnings = self.warnings

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "instants": instants,
                "local": local,
            }
        )
        if warnings is not UNSET:
            field_dict["warnings"] = warnings

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        instants = cast(list[str], d.pop("instants"))

        local = cast(list[str], d.pop("local"))

        warnings = cast(list[str], d.pop("warnings", UNSET))

        preview = cls(
            instants=instants,
            local=local,
            warnings=warnings,
        )

        preview.additional_properties = d
        return preview

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
