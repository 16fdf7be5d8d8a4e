from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.node_shards import NodeShards


T = TypeVar("T", bound="NodeFigures")


@_attrs_define
class NodeFigures:
    """This node's wheel, ready-queue and in-flight figures.

    Attributes:
        inflight (int):
        ready (int):
        shards (NodeShards): This node's shards: how many there are, and how many it holds.
        wheel (int):
    """

    inflight: int
    ready: int
    shards: NodeShards
    wheel: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        inflight = self.inflight

        ready = self.ready

        shards = self.shards.to_dict()

        wheel = self.wheel

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "inflight": inflight,
                "ready": ready,
                "shards": shards,
                "wheel": wheel,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.node_shards import NodeShards

        d = dict(src_dict)
        inflight = d.pop("inflight")

        ready = d.pop("ready")

        shards = NodeShards.from_dict(d.pop("shards"))

        wheel = d.pop("wheel")

        node_figures = cls(
            inflight=inflight,
            ready=ready,
            shards=shards,
            wheel=wheel,
        )

        node_figures.additional_properties = d
        return node_figures

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
