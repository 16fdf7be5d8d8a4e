from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="AudienceTarget")


@_attrs_define
class AudienceTarget:
    """Who a rule sends to. Kept as the request gave it.

    Attributes:
        audience_id (int | None | Unset):
        parties (list[str] | None | Unset):
        tags (list[str] | None | Unset):
        users (list[str] | None | Unset):
    """

    audience_id: int | None | Unset = UNSET
    parties: list[str] | None | Unset = UNSET
    tags: list[str] | None | Unset = UNSET
    users: list[str] | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        audience_id: int | None | Unset
        if isinstance(self.audience_id, Unset):
            audience_id = UNSET
        else:
            audience_id = self.audience_id

        parties: list[str] | None | Unset
        if isinstance(self.parties, Unset):
            parties = UNSET
        elif isinstance(self.parties, list):
            parties = self.parties

        else:
            parties = self.parties

        tags: list[str] | None | Unset
        if isinstance(self.tags, Unset):
            tags = UNSET
        elif isinstance(self.tags, list):
            tags = self.tags

        else:
            tags = self.tags

        users: list[str] | None | Unset
        if isinstance(self.users, Unset):
            users = UNSET
        elif isinstance(self.users, list):
            users = self.users

        else:
            users = self.users

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if audience_id is not UNSET:
            field_dict["audience_id"] = audience_id
        if parties is not UNSET:
            field_dict["parties"] = parties
        if tags is not UNSET:
            field_dict["tags"] = tags
        if users is not UNSET:
            field_dict["users"] = users

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_audience_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        audience_id = _parse_audience_id(d.pop("audience_id", UNSET))

        def _parse_parties(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                parties_type_0 = cast(list[str], data)

                return parties_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        parties = _parse_parties(d.pop("parties", UNSET))

        def _parse_tags(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                tags_type_0 = cast(list[str], data)

                return tags_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        tags = _parse_tags(d.pop("tags", UNSET))

        def _parse_users(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                users_type_0 = cast(list[str], data)

                return users_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        users = _parse_users(d.pop("users", UNSET))

        audience_target = cls(
            audience_id=audience_id,
            parties=parties,
            tags=tags,
            users=users,
        )

        return audience_target
