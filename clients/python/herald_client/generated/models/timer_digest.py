from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="TimerDigest")


@_attrs_define
class TimerDigest:
    """`digest` of `POST /v1/timers`: `window_ms` or `at_local`.

    Attributes:
        key (str): 1..=128 characters.
        at_local (None | str | Unset): `HH:MM`: collect until the next such time in the subscriber's time
            zone (UTC without one): a daily digest.
        max_delay_ms (int | None | Unset): With `window_ms`: each arrival extends the window, never past this
            long after the first timer's due time (at least `window_ms`).
        window_ms (int | None | Unset): Collect for this long after the first timer's due time (1 ms..7 days).
    """

    key: str
    at_local: None | str | Unset = UNSET
    max_delay_ms: int | None | Unset = UNSET
    window_ms: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        key = self.key

        at_local: None | str | Unset
        if isinstance(self.at_local, Unset):
            at_local = UNSET
        else:
            at_local = self.at_local

        max_delay_ms: int | None | Unset
        if isinstance(self.max_delay_ms, Unset):
            max_delay_ms = UNSET
        else:
            max_delay_ms = self.max_delay_ms

        window_ms: int | None | Unset
        if isinstance(self.window_ms, Unset):
            window_ms = UNSET
        else:
            window_ms = self.window_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "key": key,
            }
        )
        if at_local is not UNSET:
            field_dict["at_local"] = at_local
        if max_delay_ms is not UNSET:
            field_dict["max_delay_ms"] = max_delay_ms
        if window_ms is not UNSET:
            field_dict["window_ms"] = window_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        key = d.pop("key")

        def _parse_at_local(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        at_local = _parse_at_local(d.pop("at_local", UNSET))

        def _parse_max_delay_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_delay_ms = _parse_max_delay_ms(d.pop("max_delay_ms", UNSET))

        def _parse_window_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        window_ms = _parse_window_ms(d.pop("window_ms", UNSET))

        timer_digest = cls(
            key=key,
            at_local=at_local,
            max_delay_ms=max_delay_ms,
            window_ms=window_ms,
        )

        return timer_digest
