from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.node_figures import NodeFigures
    from ..models.stats_timers import StatsTimers


T = TypeVar("T", bound="Stats")


@_attrs_define
class Stats:
    """`GET /v1/stats`'s answer.

    Attributes:
        node (NodeFigures): This node's wheel, ready-queue and in-flight figures.
        timers (StatsTimers): Count by state over every tenant.
    """

    node: NodeFigures
    timers: StatsTimers
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        node = self.node.to_dict()

        timers = self.timers.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "node": node,
                "timers": timers,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.node_figures import NodeFigures
        from ..models.stats_timers import StatsTimers

        d = dict(src_dict)
        node = NodeFigures.from_dict(d.pop("node"))

        timers = StatsTimers.from_dict(d.pop("timers"))

        stats = cls(
            node=node,
            timers=timers,
        )

        stats.additional_properties = d
        return stats

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
