from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="AudienceJson")


@_attrs_define
class AudienceJson:
    """
    Attributes:
        created_at (str):
        id (int):
        duplicates_removed (int | None | Unset): In the upload's answer: recipients listed more than once, kept once.
        name (None | str | Unset):
        size (int | None | Unset): `null` while the upload is still going.
    """

    created_at: str
    id: int
    duplicates_removed: int | None | Unset = UNSET
    name: None | str | Unset = UNSET
    size: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        id = self.id

        duplicates_removed: int | None | Unset
        if isinstance(self.duplicates_removed, Unset):
            duplicates_removed = UNSET
        else:
            duplicates_removed = self.duplicates_removed

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        size: int | None | Unset
        if isinstance(self.size, Unset):
            size = UNSET
        else:
            size = self.size

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
            }
        )
        if duplicates_removed is not UNSET:
            field_dict["duplicates_removed"] = duplicates_removed
        if name is not UNSET:
            field_dict["name"] = name
        if size is not UNSET:
            field_dict["size"] = size

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        created_at = d.pop("created_at")

        id = d.pop("id")

        def _parse_duplicates_removed(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        duplicates_removed = _parse_duplicates_removed(
            d.pop("duplicates_removed", UNSET)
        )

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_size(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        size = _parse_size(d.pop("size", UNSET))

        audience_json = cls(
            created_at=created_at,
            id=id,
            duplicates_removed=duplicates_removed,
            name=name,
            size=size,
        )

        audience_json.additional_properties = d
        return audience_json

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
