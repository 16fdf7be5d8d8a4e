from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="NodeLive")


@_attrs_define
class NodeLive:
    """A node of the cluster, for the admin.

    Attributes:
        alive_until (str):
        node_id (str):
        shards (int):
    """

    alive_until: str
    node_id: str
    shards: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        alive_until = self.alive_until

        node_id = self.node_id

        shards = self.shards

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "alive_until": alive_until,
                "node_id": node_id,
                "shards": shards,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        alive_until = d.pop("alive_until")

        node_id = d.pop("node_id")

        shards = d.pop("shards")

        node_live = cls(
            alive_until=alive_until,
            node_id=node_id,
            shards=shards,
        )

        node_live.additional_properties = d
        return node_live

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
