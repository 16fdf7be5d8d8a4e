from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.create_key_scopes_item import (
    CreateKeyScopesItem,
    check_create_key_scopes_item,
)
from ..types import UNSET, Unset

T = TypeVar("T", bound="CreateKey")


@_attrs_define
class CreateKey:
    """
    Attributes:
        scopes (list[CreateKeyScopesItem]):
        tenant (str):
        expires_at (None | str | Unset):
        name (None | str | Unset):
    """

    scopes: list[CreateKeyScopesItem]
    tenant: str
    expires_at: None | str | Unset = UNSET
    name: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        scopes = []
        for scopes_item_data in self.scopes:
            scopes_item: str = scopes_item_data
            scopes.append(scopes_item)

        tenant = self.tenant

        expires_at: None | str | Unset
        if isinstance(self.expires_at, Unset):
            expires_at = UNSET
        else:
            expires_at = self.expires_at

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "scopes": scopes,
                "tenant": tenant,
            }
        )
        if expires_at is not UNSET:
            field_dict["expires_at"] = expires_at
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        scopes = []
        _scopes = d.pop("scopes")
        for scopes_item_data in _scopes:
            scopes_item = check_create_key_scopes_item(scopes_item_data)

            scopes.append(scopes_item)

        tenant = d.pop("tenant")

        def _parse_expires_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        expires_at = _parse_expires_at(d.pop("expires_at", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        create_key = cls(
            scopes=scopes,
            tenant=tenant,
            expires_at=expires_at,
            name=name,
        )

        return create_key
