from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.channel_outcomes import ChannelOutcomes
    from ..models.channel_pause import ChannelPause
    from ..models.channel_token import ChannelToken


T = TypeVar("T", bound="Channel")


@_attrs_define
class Channel:
    """A channel: configuration, provider state, outcomes and current rate.

    Attributes:
        concurrency (int):
        current_rate (float): Provider answers per second over the last ~10 s on this node.
        kind (str):
        name (str):
        outcomes (ChannelOutcomes): Counts by outcome.
        paused (ChannelPause | None | Unset):
        paused_until (int | None | Unset): Unix ms, while the provider has the channel paused.
        quiet_hours (None | str | Unset): `HH:MM-HH:MM Zone (policy)`, if configured.
        rate_per_s (float | None | Unset): Attempts per second over the last 10 whole seconds (the live window).
        rate_per_sec (float | None | Unset):
        token (ChannelToken | None | Unset):
        token_valid_until (int | None | Unset): Unix ms; `None` when the channel uses no token or has none yet.
    """

    concurrency: int
    current_rate: float
    kind: str
    name: str
    outcomes: ChannelOutcomes
    paused: ChannelPause | None | Unset = UNSET
    paused_until: int | None | Unset = UNSET
    quiet_hours: None | str | Unset = UNSET
    rate_per_s: float | None | Unset = UNSET
    rate_per_sec: float | None | Unset = UNSET
    token: ChannelToken | None | Unset = UNSET
    token_valid_until: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.channel_pause import ChannelPause
        from ..models.channel_token import ChannelToken

        concurrency = self.concurrency

        current_rate = self.current_rate

        kind = self.kind

        name = self.name

        outcomes = self.outcomes.to_dict()

        paused: dict[str, Any] | None | Unset
        if isinstance(self.paused, Unset):
            paused = UNSET
        elif isinstance(self.paused, ChannelPause):
            paused = self.paused.to_dict()
        else:
            paused = self.paused

        paused_until: int | None | Unset
        if isinstance(self.paused_until, Unset):
            paused_until = UNSET
        else:
            paused_until = self.paused_until

        quiet_hours: None | str | Unset
        if isinstance(self.quiet_hours, Unset):
            quiet_hours = UNSET
        else:
            quiet_hours = self.quiet_hours

        rate_per_s: float | None | Unset
        if isinstance(self.rate_per_s, Unset):
            rate_per_s = UNSET
        else:
            rate_per_s = self.rate_per_s

        rate_per_sec: float | None | Unset
        if isinstance(self.rate_per_sec, Unset):
            rate_per_sec = UNSET
        else:
            rate_per_sec = self.rate_per_sec

        token: dict[str, Any] | None | Unset
        if isinstance(self.token, Unset):
            token = UNSET
        elif isinstance(self.token, ChannelToken):
            token = self.token.to_dict()
        else:
            token = self.token

        token_valid_until: int | None | Unset
        if isinstance(self.token_valid_until, Unset):
            token_valid_until = UNSET
        else:
            token_valid_until = self.token_valid_until

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "concurrency": concurrency,
                "current_rate": current_rate,
                "kind": kind,
                "name": name,
                "outcomes": outcomes,
            }
        )
        if paused is not UNSET:
            field_dict["paused"] = paused
        if paused_until is not UNSET:
            field_dict["paused_until"] = paused_until
        if quiet_hours is not UNSET:
            field_dict["quiet_hours"] = quiet_hours
        if rate_per_s is not UNSET:
            field_dict["rate_per_s"] = rate_per_s
        if rate_per_sec is not UNSET:
            field_dict["rate_per_sec"] = rate_per_sec
        if token is not UNSET:
            field_dict["token"] = token
        if token_valid_until is not UNSET:
            field_dict["token_valid_until"] = token_valid_until

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.channel_outcomes import ChannelOutcomes
        from ..models.channel_pause import ChannelPause
        from ..models.channel_token import ChannelToken

        d = dict(src_dict)
        concurrency = d.pop("concurrency")

        current_rate = d.pop("current_rate")

        kind = d.pop("kind")

        name = d.pop("name")

        outcomes = ChannelOutcomes.from_dict(d.pop("outcomes"))

        def _parse_paused(data: object) -> ChannelPause | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                paused_type_1 = ChannelPause.from_dict(data)

                return paused_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ChannelPause | None | Unset, data)

        paused = _parse_paused(d.pop("paused", UNSET))

        def _parse_paused_until(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        paused_until = _parse_paused_until(d.pop("paused_until", UNSET))

        def _parse_quiet_hours(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        quiet_hours = _parse_quiet_hours(d.pop("quiet_hours", UNSET))

        def _parse_rate_per_s(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        rate_per_s = _parse_rate_per_s(d.pop("rate_per_s", UNSET))

        def _parse_rate_per_sec(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        rate_per_sec = _parse_rate_per_sec(d.pop("rate_per_sec", UNSET))

        def _parse_token(data: object) -> ChannelToken | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                token_type_1 = ChannelToken.from_dict(data)

                return token_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ChannelToken | None | Unset, data)

        token = _parse_token(d.pop("token", UNSET))

        def _parse_token_valid_until(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        token_valid_until = _parse_token_valid_until(d.pop("token_valid_until", UNSET))

        channel = cls(
            concurrency=concurrency,
            current_rate=current_rate,
            kind=kind,
            name=name,
            outcomes=outcomes,
            paused=paused,
            paused_until=paused_until,
            quiet_hours=quiet_hours,
            rate_per_s=rate_per_s,
            rate_per_sec=rate_per_sec,
            token=token,
            token_valid_until=token_valid_until,
        )

        channel.additional_properties = d
        return channel

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
