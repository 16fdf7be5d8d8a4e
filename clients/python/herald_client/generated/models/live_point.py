from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="LivePoint")


@_attrs_define
class LivePoint:
    """One second of the live window.

    Attributes:
        deliveries (int):
        t (str):
        p50_ms (float | None | Unset): `null` in a second without deliveries.
        p99_ms (float | None | Unset):
    """

    deliveries: int
    t: str
    p50_ms: float | None | Unset = UNSET
    p99_ms: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        deliveries = self.deliveries

        t = self.t

        p50_ms: float | None | Unset
        if isinstance(self.p50_ms, Unset):
            p50_ms = UNSET
        else:
            p50_ms = self.p50_ms

        p99_ms: float | None | Unset
        if isinstance(self.p99_ms, Unset):
            p99_ms = UNSET
        else:
            p99_ms = self.p99_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "deliveries": deliveries,
                "t": t,
            }
        )
        if p50_ms is not UNSET:
            field_dict["p50_ms"] = p50_ms
        if p99_ms is not UNSET:
            field_dict["p99_ms"] = p99_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        deliveries = d.pop("deliveries")

        t = d.pop("t")

        def _parse_p50_ms(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        p50_ms = _parse_p50_ms(d.pop("p50_ms", UNSET))

        def _parse_p99_ms(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        p99_ms = _parse_p99_ms(d.pop("p99_ms", UNSET))

        live_point = cls(
            deliveries=deliveries,
            t=t,
            p50_ms=p50_ms,
            p99_ms=p99_ms,
        )

        live_point.additional_properties = d
        return live_point

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
