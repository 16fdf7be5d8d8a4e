from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.forecast_behind import ForecastBehind


T = TypeVar("T", bound="ForecastChannel")


@_attrs_define
class ForecastChannel:
    """One channel's share of the forecast.

    Attributes:
        channel (str):
        configured (bool): Whether the node has a channel of that name (a timer may name one
            removed since).
        reminders (list[int]): Reminders per bucket.
        timers (list[int]): Timers (every kind but reminders) per bucket.
        total (int): Everything counted on it in the window.
        behind (ForecastBehind | None | Unset):
        rate_per_sec (float | None | Unset): The channel's cluster-wide rate; `null` when it has none.
    """

    channel: str
    configured: bool
    reminders: list[int]
    timers: list[int]
    total: int
    behind: ForecastBehind | None | Unset = UNSET
    rate_per_sec: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.forecast_behind import ForecastBehind

        channel = self.channel

        configured = self.configured

        reminders = self.reminders

        timers = self.timers

        total = self.total

        behind: dict[str, Any] | None | Unset
        if isinstance(self.behind, Unset):
            behind = UNSET
        elif isinstance(self.behind, ForecastBehind):
            behind = self.behind.to_dict()
        else:
            behind = self.behind

        rate_per_sec: float | None | Unset
        if isinstance(self.rate_per_sec, Unset):
            rate_per_sec = UNSET
        else:
            rate_per_sec = self.rate_per_sec

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "channel": channel,
                "configured": configured,
                "reminders": reminders,
                "timers": timers,
                "total": total,
            }
        )
        if behind is not UNSET:
            field_dict["behind"] = behind
        if rate_per_sec is not UNSET:
            field_dict["rate_per_sec"] = rate_per_sec

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.forecast_behind import ForecastBehind

        d = dict(src_dict)
        channel = d.pop("channel")

        configured = d.pop("configured")

        reminders = cast(list[int], d.pop("reminders"))

        timers = cast(list[int], d.pop("timers"))

        total = d.pop("total")

        def _parse_behind(data: object) -> ForecastBehind | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                behind_type_1 = ForecastBehind.from_dict(data)

                return behind_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ForecastBehind | None | Unset, data)

        behind = _parse_behind(d.pop("behind", UNSET))

        def _parse_rate_per_sec(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        rate_per_sec = _parse_rate_per_sec(d.pop("rate_per_sec", UNSET))

        forecast_channel = cls(
            channel=channel,
            configured=configured,
            reminders=reminders,
            timers=timers,
            total=total,
            behind=behind,
            rate_per_sec=rate_per_sec,
        )

        forecast_channel.additional_properties = d
        return forecast_channel

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
