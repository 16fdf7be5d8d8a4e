from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.dead_letter_group import DeadLetterGroup


T = TypeVar("T", bound="DeadLetters")


@_attrs_define
class DeadLetters:
    """`GET /v1/dead-letters`'s answer.

    Attributes:
        groups (list[DeadLetterGroup]):
        scanned (int):
        truncated (bool):
    """

    groups: list[DeadLetterGroup]
    scanned: int
    truncated: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        groups = []
        for groups_item_data in self.groups:
            groups_item = groups_item_data.to_dict()
            groups.append(groups_item)

        scanned = self.scanned

        truncated = self.truncated

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "groups": groups,
                "scanned": scanned,
                "truncated": truncated,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.dead_letter_group import DeadLetterGroup

        d = dict(src_dict)
        groups = []
        _groups = d.pop("groups")
        for groups_item_data in _groups:
            groups_item = DeadLetterGroup.from_dict(groups_item_data)

            groups.append(groups_item)

        scanned = d.pop("scanned")

        truncated = d.pop("truncated")

        dead_letters = cls(
            groups=groups,
            scanned=scanned,
            truncated=truncated,
        )

        dead_letters.additional_properties = d
        return dead_letters

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
