from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="NodeLeases")


@_attrs_define
class NodeLeases:
    """One node's current leases, summed up: what the lease table says of a
    node process (one per node id and incarnation).

        Attributes:
            epoch_max (int):
            epoch_min (int): The lowest and highest epoch of those leases.
            incarnation (str): The process's incarnation, as a decimal string.
            lease_until_max (str):
            lease_until_min (str): When the first and the last of those leases run out unless renewed.
            node_id (str):
            shards (int): Shards it holds a current lease on.
    """

    epoch_max: int
    epoch_min: int
    incarnation: str
    lease_until_max: str
    lease_until_min: str
    node_id: str
    shards: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        epoch_max = self.epoch_max

        epoch_min = self.epoch_min

        incarnation = self.incarnation

        lease_until_max = self.lease_until_max

        lease_until_min = self.lease_until_min

        node_id = self.node_id

        shards = self.shards

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "epoch_max": epoch_max,
                "epoch_min": epoch_min,
                "incarnation": incarnation,
                "lease_until_max": lease_until_max,
                "lease_until_min": lease_until_min,
                "node_id": node_id,
                "shards": shards,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        epoch_max = d.pop("epoch_max")

        epoch_min = d.pop("epoch_min")

        incarnation = d.pop("incarnation")

        lease_until_max = d.pop("lease_until_max")

        lease_until_min = d.pop("lease_until_min")

        node_id = d.pop("node_id")

        shards = d.pop("shards")

        node_leases = cls(
            epoch_max=epoch_max,
            epoch_min=epoch_min,
            incarnation=incarnation,
            lease_until_max=lease_until_max,
            lease_until_min=lease_until_min,
            node_id=node_id,
            shards=shards,
        )

        node_leases.additional_properties = d
        return node_leases

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
