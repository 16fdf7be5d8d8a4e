from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ReloadReport")


@_attrs_define
class ReloadReport:
    """What a reload changed, and what it left for a restart.

    Attributes:
        applied (list[str]): Keys whose new values are now in use (`channels.NAME.rate_per_sec`).
        needs_restart (list[str]): Keys whose new values wait for a restart; the old ones keep running.
    """

    applied: list[str]
    needs_restart: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        applied = self.applied

        needs_restart = self.needs_restart

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "applied": applied,
                "needs_restart": needs_restart,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        applied = cast(list[str], d.pop("applied"))

        needs_restart = cast(list[str], d.pop("needs_restart"))

        reload_report = cls(
            applied=applied,
            needs_restart=needs_restart,
        )

        reload_report.additional_properties = d
        return reload_report

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
