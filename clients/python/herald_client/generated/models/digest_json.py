from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="DigestJson")


@_attrs_define
class DigestJson:
    """`digest` of a timer: the spec it was created with, and when the digest it
    joined opened.

        Attributes:
            key (str):
            at_local (None | str | Unset): `HH:MM` in the subscriber's time zone.
            max_delay_ms (int | None | Unset):
            since (None | str | Unset): RFC 3339: the requested due time of the digest's first timer.
            window_ms (int | None | Unset):
    """

    key: str
    at_local: None | str | Unset = UNSET
    max_delay_ms: int | None | Unset = UNSET
    since: None | str | Unset = UNSET
    window_ms: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

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

        since: None | str | Unset
        if isinstance(self.since, Unset):
            since = UNSET
        else:
            since = self.since

        window_ms: int | None | Unset
        if isinstance(self.window_ms, Unset):
            window_ms = UNSET
        else:
            window_ms = self.window_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "key": key,
            }
        )
        if at_local is not UNSET:
            field_dict["at_local"] = at_local
        if max_delay_ms is not UNSET:
            field_dict["max_delay_ms"] = max_delay_ms
        if since is not UNSET:
            field_dict["since"] = since
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

        def _parse_since(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        since = _parse_since(d.pop("since", UNSET))

        def _parse_window_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        window_ms = _parse_window_ms(d.pop("window_ms", UNSET))

        digest_json = cls(
            key=key,
            at_local=at_local,
            max_delay_ms=max_delay_ms,
            since=since,
            window_ms=window_ms,
        )

        digest_json.additional_properties = d
        return digest_json

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
