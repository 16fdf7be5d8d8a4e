from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.step_on_name import StepOnName, check_step_on_name
from ..types import UNSET, Unset

T = TypeVar("T", bound="StepJson")


@_attrs_define
class StepJson:
    """A step of a stored route, as answers show it.

    Attributes:
        channel (str):
        channel_type (str):
        after_ms (int | None | Unset): The wait for a read receipt of an `unread` step, in ms.
        on (list[StepOnName] | Unset):
    """

    channel: str
    channel_type: str
    after_ms: int | None | Unset = UNSET
    on: list[StepOnName] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        channel = self.channel

        channel_type = self.channel_type

        after_ms: int | None | Unset
        if isinstance(self.after_ms, Unset):
            after_ms = UNSET
        else:
            after_ms = self.after_ms

        on: list[str] | Unset = UNSET
        if not isinstance(self.on, Unset):
            on = []
            for on_item_data in self.on:
                on_item: str = on_item_data
                on.append(on_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "channel": channel,
                "channel_type": channel_type,
            }
        )
        if after_ms is not UNSET:
            field_dict["after_ms"] = after_ms
        if on is not UNSET:
            field_dict["on"] = on

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        channel = d.pop("channel")

        channel_type = d.pop("channel_type")

        def _parse_after_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        after_ms = _parse_after_ms(d.pop("after_ms", UNSET))

        _on = d.pop("on", UNSET)
        on: list[StepOnName] | Unset = UNSET
        if _on is not UNSET:
            on = []
            for on_item_data in _on:
                on_item = check_step_on_name(on_item_data)

                on.append(on_item)

        step_json = cls(
            channel=channel,
            channel_type=channel_type,
            after_ms=after_ms,
            on=on,
        )

        step_json.additional_properties = d
        return step_json

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
