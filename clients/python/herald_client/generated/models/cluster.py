from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.cluster_owners import ClusterOwners
    from ..models.lease import Lease
    from ..models.node_leases import NodeLeases


T = TypeVar("T", bound="Cluster")


@_attrs_define
class Cluster:
    """`GET /v1/cluster`'s answer.

    Attributes:
        incarnation (str): This process's incarnation, a 64-bit number as a decimal string.
        leases (list[Lease]):
        node_id (str):
        nodes (list[NodeLeases]): The current leases per node process, by node id and incarnation.
        owners (ClusterOwners): Shards held per node.
        shards (int):
        unowned (int):
    """

    incarnation: str
    leases: list[Lease]
    node_id: str
    nodes: list[NodeLeases]
    owners: ClusterOwners
    shards: int
    unowned: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        incarnation = self.incarnation

        leases = []
        for leases_item_data in self.leases:
            leases_item = leases_item_data.to_dict()
            leases.append(leases_item)

        node_id = self.node_id

        nodes = []
        for nodes_item_data in self.nodes:
            nodes_item = nodes_item_data.to_dict()
            nodes.append(nodes_item)

        owners = self.owners.to_dict()

        shards = self.shards

        unowned = self.unowned

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "incarnation": incarnation,
                "leases": leases,
                "node_id": node_id,
                "nodes": nodes,
                "owners": owners,
                "shards": shards,
                "unowned": unowned,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.cluster_owners import ClusterOwners
        from ..models.lease import Lease
        from ..models.node_leases import NodeLeases

        d = dict(src_dict)
        incarnation = d.pop("incarnation")

        leases = []
        _leases = d.pop("leases")
        for leases_item_data in _leases:
            leases_item = Lease.from_dict(leases_item_data)

            leases.append(leases_item)

        node_id = d.pop("node_id")

        nodes = []
        _nodes = d.pop("nodes")
        for nodes_item_data in _nodes:
            nodes_item = NodeLeases.from_dict(nodes_item_data)

            nodes.append(nodes_item)

        owners = ClusterOwners.from_dict(d.pop("owners"))

        shards = d.pop("shards")

        unowned = d.pop("unowned")

        cluster = cls(
            incarnation=incarnation,
            leases=leases,
            node_id=node_id,
            nodes=nodes,
            owners=owners,
            shards=shards,
            unowned=unowned,
        )

        cluster.additional_properties = d
        return cluster

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
