from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="EntryJson")


@_attrs_define
class EntryJson:
    """
    Attributes:
        at (str):
        count (int): How many requests the entry stands for: 1, or a tally of refusals
            before any key was recognised (`at` is the first of them).
        id (int):
        method (str):
        route (str):
        status (int):
        tenant (str):
        key_id (int | None | Unset):
        key_name (None | str | Unset):
        reason (None | str | Unset): Why the tallied requests were refused (`no_key`, `invalid_key`,
            `invalid_session`, `malformed_authorization`, `misdirected_host`,
            `cross_origin`, `login_failed`, `public_route`); null for one request.
        resource_id (None | str | Unset):
    """

    at: str
    count: int
    id: int
    method: str
    route: str
    status: int
    tenant: str
    key_id: int | None | Unset = UNSET
    key_name: None | str | Unset = UNSET
    reason: None | str | Unset = UNSET
    resource_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at

        count = self.count

        id = self.id

        method = self.method

        route = self.route

        status = self.status

        tenant = self.tenant

        key_id: int | None | Unset
        if isinstance(self.key_id, Unset):
            key_id = UNSET
        else:
            key_id = self.key_id

        key_name: None | str | Unset
        if isinstance(self.key_name, Unset):
            key_name = UNSET
        else:
            key_name = self.key_name

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        resource_id: None | str | Unset
        if isinstance(self.resource_id, Unset):
            resource_id = UNSET
        else:
            resource_id = self.resource_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "count": count,
                "id": id,
                "method": method,
                "route": route,
                "status": status,
                "tenant": tenant,
            }
        )
        if key_id is not UNSET:
            field_dict["key_id"] = key_id
        if key_name is not UNSET:
            field_dict["key_name"] = key_name
        if reason is not UNSET:
            field_dict["reason"] = reason
        if resource_id is not UNSET:
            field_dict["resource_id"] = resource_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        at = d.pop("at")

        count = d.pop("count")

        id = d.pop("id")

        method = d.pop("method")

        route = d.pop("route")

        status = d.pop("status")

        tenant = d.pop("tenant")

        def _parse_key_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        key_id = _parse_key_id(d.pop("key_id", UNSET))

        def _parse_key_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        key_name = _parse_key_name(d.pop("key_name", UNSET))

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))

        def _parse_resource_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        resource_id = _parse_resource_id(d.pop("resource_id", UNSET))

        entry_json = cls(
            at=at,
            count=count,
            id=id,
            method=method,
            route=route,
            status=status,
            tenant=tenant,
            key_id=key_id,
            key_name=key_name,
            reason=reason,
            resource_id=resource_id,
        )

        entry_json.additional_properties = d
        return entry_json

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
