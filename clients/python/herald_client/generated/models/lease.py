from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Lease")


@_attrs_define
class Lease:
    """One shard's lease, as the store holds it.

    Attributes:
        epoch (int):
        incarnation (str): The owner's incarnation, a 64-bit number as a decimal string
            (JavaScript's numbers would round it); `"0"` while nobody owns the
            shard.
        lease_until (str):
        shard (int):
        owner (None | str | Unset):
    """

    epoch: int
    incarnation: str
    lease_until: str
    shard: int
    owner: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        epoch = self.epoch

        incarnation = self.incarnation

        lease_until = self.lease_until

        shard = self.shard

        owner: None | str | Unset
        if isinstance(self.owner, Unset):
            owner = UNSET
        else:
            owner = self.owner

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "epoch": epoch,
                "incarnation": incarnation,
                "lease_until": lease_until,
                "shard": shard,
            }
        )
        if owner is not UNSET:
            field_dict["owner"] = owner

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        epoch = d.pop("epoch")

        incarnation = d.pop("incarnation")

        lease_until = d.pop("lease_until")

        shard = d.pop("shard")

        def _parse_owner(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        owner = _parse_owner(d.pop("owner", UNSET))

        lease = cls(
            epoch=epoch,
            incarnation=incarnation,
            lease_until=lease_until,
            shard=shard,
            owner=owner,
        )

        lease.additional_properties = d
        return lease

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
