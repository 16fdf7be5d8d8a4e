from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.channel_live import ChannelLive
    from ..models.live import Live
    from ..models.node_live import NodeLive
    from ..models.overview_timers import OverviewTimers


T = TypeVar("T", bound="Overview")


@_attrs_define
class Overview:
    """`GET /v1/overview`'s answer.

    Attributes:
        channels (list[ChannelLive]):
        inflight (int):
        live (Live): This node's live window: deliveries, lateness and their last minute.
        nodes (list[NodeLive]):
        sampled_at (str): `null` until the stats sampler has run once.
        timers (OverviewTimers): Sampled counts by state.
        tenant (None | str | Unset):
    """

    channels: list[ChannelLive]
    inflight: int
    live: Live
    nodes: list[NodeLive]
    sampled_at: str
    timers: OverviewTimers
    tenant: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        channels = []
        for channels_item_data in self.channels:
            channels_item = channels_item_data.to_dict()
            channels.append(channels_item)

        inflight = self.inflight

        live = self.live.to_dict()

        nodes = []
        for nodes_item_data in self.nodes:
            nodes_item = nodes_item_data.to_dict()
            nodes.append(nodes_item)

        sampled_at = self.sampled_at

        timers = self.timers.to_dict()

        tenant: None | str | Unset
        if isinstance(self.tenant, Unset):
            tenant = UNSET
        else:
            tenant = self.tenant

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "channels": channels,
                "inflight": inflight,
                "live": live,
                "nodes": nodes,
                "sampled_at": sampled_at,
                "timers": timers,
            }
        )
        if tenant is not UNSET:
            field_dict["tenant"] = tenant

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.channel_live import ChannelLive
        from ..models.live import Live
        from ..models.node_live import NodeLive
        from ..models.overview_timers import OverviewTimers

        d = dict(src_dict)
        channels = []
        _channels = d.pop("channels")
        for channels_item_data in _channels:
            channels_item = ChannelLive.from_dict(channels_item_data)

            channels.append(channels_item)

        inflight = d.pop("inflight")

        live = Live.from_dict(d.pop("live"))

        nodes = []
        _nodes = d.pop("nodes")
        for nodes_item_data in _nodes:
            nodes_item = NodeLive.from_dict(nodes_item_data)

            nodes.append(nodes_item)

        sampled_at = d.pop("sampled_at")

        timers = OverviewTimers.from_dict(d.pop("timers"))

        def _parse_tenant(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tenant = _parse_tenant(d.pop("tenant", UNSET))

        overview = cls(
            channels=channels,
            inflight=inflight,
            live=live,
            nodes=nodes,
            sampled_at=sampled_at,
            timers=timers,
            tenant=tenant,
        )

        overview.additional_properties = d
        return overview

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
