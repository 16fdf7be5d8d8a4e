from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.channel_live_outcomes import ChannelLiveOutcomes


T = TypeVar("T", bound="ChannelLive")


@_attrs_define
class ChannelLive:
    """A channel's attempts in the live window.

    Attributes:
        name (str):
        outcomes (ChannelLiveOutcomes):
        rate_per_s (float):
    """

    name: str
    outcomes: ChannelLiveOutcomes
    rate_per_s: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        outcomes = self.outcomes.to_dict()

        rate_per_s = self.rate_per_s

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "outcomes": outcomes,
                "rate_per_s": rate_per_s,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.channel_live_outcomes import ChannelLiveOutcomes

        d = dict(src_dict)
        name = d.pop("name")

        outcomes = ChannelLiveOutcomes.from_dict(d.pop("outcomes"))

        rate_per_s = d.pop("rate_per_s")

        channel_live = cls(
            name=name,
            outcomes=outcomes,
            rate_per_s=rate_per_s,
        )

        channel_live.additional_properties = d
        return channel_live

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
