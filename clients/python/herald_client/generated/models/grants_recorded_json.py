from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.grant_json import GrantJson


T = TypeVar("T", bound="GrantsRecordedJson")


@_attrs_define
class GrantsRecordedJson:
    """The answer to a recording.

    Attributes:
        grants (list[GrantJson]): The user's grants on the channel now.
        recorded (bool): `false` when the key had been recorded before: nothing changed.
    """

    grants: list[GrantJson]
    recorded: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        grants = []
        for grants_item_data in self.grants:
            grants_item = grants_item_data.to_dict()
            grants.append(grants_item)

        recorded = self.recorded

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "grants": grants,
                "recorded": recorded,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.grant_json import GrantJson

        d = dict(src_dict)
        grants = []
        _grants = d.pop("grants")
        for grants_item_data in _grants:
            grants_item = GrantJson.from_dict(grants_item_data)

            grants.append(grants_item)

        recorded = d.pop("recorded")

        grants_recorded_json = cls(
            grants=grants,
            recorded=recorded,
        )

        grants_recorded_json.additional_properties = d
        return grants_recorded_json

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
