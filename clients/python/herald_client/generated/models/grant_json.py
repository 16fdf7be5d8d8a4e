from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="GrantJson")


@_attrs_define
class GrantJson:
    """A user's grants of one template.

    Attributes:
        channel (str):
        granted (int): One-time grants recorded in all.
        long_term (bool):
        remaining (int): One-time grants left.
        spent (int): Sends that spent a grant.
        template_id (str):
        updated_at (str):
    """

    channel: str
    granted: int
    long_term: bool
    remaining: int
    spent: int
    template_id: str
    updated_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        channel = self.channel

        granted = self.granted

        long_term = self.long_term

        remaining = self.remaining

        spent = self.spent

        template_id = self.template_id

        updated_at = self.updated_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "channel": channel,
                "granted": granted,
                "long_term": long_term,
                "remaining": remaining,
                "spent": spent,
                "template_id": template_id,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        channel = d.pop("channel")

        granted = d.pop("granted")

        long_term = d.pop("long_term")

        remaining = d.pop("remaining")

        spent = d.pop("spent")

        template_id = d.pop("template_id")

        updated_at = d.pop("updated_at")

        grant_json = cls(
            channel=channel,
            granted=granted,
            long_term=long_term,
            remaining=remaining,
            spent=spent,
            template_id=template_id,
            updated_at=updated_at,
        )

        grant_json.additional_properties = d
        return grant_json

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
