from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Lateness")


@_attrs_define
class Lateness:
    """Fire lateness quantiles; `null` while the window holds no delivery.

    Attributes:
        p50 (float | None | Unset):
        p99 (float | None | Unset):
    """

    p50: float | None | Unset = UNSET
    p99: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        p50: float | None | Unset
        if isinstance(self.p50, Unset):
            p50 = UNSET
        else:
            p50 = self.p50

        p99: float | None | Unset
        if isinstance(self.p99, Unset):
            p99 = UNSET
        else:
            p99 = self.p99

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if p50 is not UNSET:
            field_dict["p50"] = p50
        if p99 is not UNSET:
            field_dict["p99"] = p99

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_p50(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        p50 = _parse_p50(d.pop("p50", UNSET))

        def _parse_p99(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        p99 = _parse_p99(d.pop("p99", UNSET))

        lateness = cls(
            p50=p50,
            p99=p99,
        )

        lateness.additional_properties = d
        return lateness

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
