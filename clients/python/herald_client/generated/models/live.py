from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.lateness import Lateness
    from ..models.live_point import LivePoint


T = TypeVar("T", bound="Live")


@_attrs_define
class Live:
    """This node's live window: deliveries, lateness and their last minute.

    Attributes:
        deliveries_per_s (float):
        lateness_ms (Lateness): Fire lateness quantiles; `null` while the window holds no delivery.
        series (list[LivePoint]): The last 60 s, one point per second.
        window_s (int):
    """

    deliveries_per_s: float
    lateness_ms: Lateness
    series: list[LivePoint]
    window_s: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        deliveries_per_s = self.deliveries_per_s

        lateness_ms = self.lateness_ms.to_dict()

        series = []
        for series_item_data in self.series:
            series_item = series_item_data.to_dict()
            series.append(series_item)

        window_s = self.window_s

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "deliveries_per_s": deliveries_per_s,
                "lateness_ms": lateness_ms,
                "series": series,
                "window_s": window_s,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.lateness import Lateness
        from ..models.live_point import LivePoint

        d = dict(src_dict)
        deliveries_per_s = d.pop("deliveries_per_s")

        lateness_ms = Lateness.from_dict(d.pop("lateness_ms"))

        series = []
        _series = d.pop("series")
        for series_item_data in _series:
            series_item = LivePoint.from_dict(series_item_data)

            series.append(series_item)

        window_s = d.pop("window_s")

        live = cls(
            deliveries_per_s=deliveries_per_s,
            lateness_ms=lateness_ms,
            series=series,
            window_s=window_s,
        )

        live.additional_properties = d
        return live

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
