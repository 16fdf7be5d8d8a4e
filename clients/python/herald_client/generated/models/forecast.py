from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.forecast_channel import ForecastChannel


T = TypeVar("T", bound="Forecast")


@_attrs_define
class Forecast:
    """`GET /v1/forecast`'s answer.

    Attributes:
        bucket_s (int):
        channels (list[ForecastChannel]): Busiest first.
        horizon (str):
        refreshing (bool): Whether a newer count is running.
        state (str): `counting` until the first count of this horizon has finished (ask
            again in a second); then `counted`.
        complete_until (None | str | Unset): Set when the count stopped at its limit of timers read: everything
            due before this time is counted, after it only some.
        count_took_ms (int | None | Unset):
        counted_at (None | str | Unset): When the count was made and how long it took (ms).
        from_ (None | str | Unset): The window: `[from, until)`; bucket `i` starts at `from + i * bucket_s`.
        tenant (None | str | Unset): The tenant whose timers are counted; `null` for every tenant's.
        until (None | str | Unset):
    """

    bucket_s: int
    channels: list[ForecastChannel]
    horizon: str
    refreshing: bool
    state: str
    complete_until: None | str | Unset = UNSET
    count_took_ms: int | None | Unset = UNSET
    counted_at: None | str | Unset = UNSET
    from_: None | str | Unset = UNSET
    tenant: None | str | Unset = UNSET
    until: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        bucket_s = self.bucket_s

        channels = []
        for channels_item_data in self.channels:
            channels_item = channels_item_data.to_dict()
            channels.append(channels_item)

        horizon = self.horizon

        refreshing = self.refreshing

        state = self.state

        complete_until: None | str | Unset
        if isinstance(self.complete_until, Unset):
            complete_until = UNSET
        else:
            complete_until = self.complete_until

        count_took_ms: int | None | Unset
        if isinstance(self.count_took_ms, Unset):
            count_took_ms = UNSET
        else:
            count_took_ms = self.count_took_ms

        counted_at: None | str | Unset
        if isinstance(self.counted_at, Unset):
            counted_at = UNSET
        else:
            counted_at = self.counted_at

        from_: None | str | Unset
        if isinstance(self.from_, Unset):
            from_ = UNSET
        else:
            from_ = self.from_

        tenant: None | str | Unset
        if isinstance(self.tenant, Unset):
            tenant = UNSET
        else:
            tenant = self.tenant

        until: None | str | Unset
        if isinstance(self.until, Unset):
            until = UNSET
        else:
            until = self.until

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "bucket_s": bucket_s,
                "channels": channels,
                "horizon": horizon,
                "refreshing": refreshing,
                "state": state,
            }
        )
        if complete_until is not UNSET:
            field_dict["complete_until"] = complete_until
        if count_took_ms is not UNSET:
            field_dict["count_took_ms"] = count_took_ms
        if counted_at is not UNSET:
            field_dict["counted_at"] = counted_at
        if from_ is not UNSET:
            field_dict["from"] = from_
        if tenant is not UNSET:
            field_dict["tenant"] = tenant
        if until is not UNSET:
            field_dict["until"] = until

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.forecast_channel import ForecastChannel

        d = dict(src_dict)
        bucket_s = d.pop("bucket_s")

        channels = []
        _channels = d.pop("channels")
        for channels_item_data in _channels:
            channels_item = ForecastChannel.from_dict(channels_item_data)

            channels.append(channels_item)

        horizon = d.pop("horizon")

        refreshing = d.pop("refreshing")

        state = d.pop("state")

        def _parse_complete_until(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        complete_until = _parse_complete_until(d.pop("complete_until", UNSET))

        def _parse_count_took_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        count_took_ms = _parse_count_took_ms(d.pop("count_took_ms", UNSET))

        def _parse_counted_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        counted_at = _parse_counted_at(d.pop("counted_at", UNSET))

        def _parse_from_(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        from_ = _parse_from_(d.pop("from", UNSET))

        def _parse_tenant(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tenant = _parse_tenant(d.pop("tenant", UNSET))

        def _parse_until(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        until = _parse_until(d.pop("until", UNSET))

        forecast = cls(
            bucket_s=bucket_s,
            channels=channels,
            horizon=horizon,
            refreshing=refreshing,
            state=state,
            complete_until=complete_until,
            count_took_ms=count_took_ms,
            counted_at=counted_at,
            from_=from_,
            tenant=tenant,
            until=until,
        )

        forecast.additional_properties = d
        return forecast

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
