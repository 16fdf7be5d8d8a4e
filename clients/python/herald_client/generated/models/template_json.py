from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.template_json_locales import TemplateJsonLocales


T = TypeVar("T", bound="TemplateJson")


@_attrs_define
class TemplateJson:
    """A template version as answered.

    Attributes:
        created_at (str):
        locales (TemplateJsonLocales):
        name (str):
        variables (list[str]): The variables a sender's data must give.
        version (int):
        versions (list[int]): Every stored version, oldest first.
        created_by (None | str | Unset): The API key that wrote this version.
        description (None | str | Unset):
    """

    created_at: str
    locales: TemplateJsonLocales
    name: str
    variables: list[str]
    version: int
    versions: list[int]
    created_by: None | str | Unset = UNSET
    description: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        locales = self.locales.to_dict()

        name = self.name

        variables = self.variables

        version = self.version

        versions = self.versions

        created_by: None | str | Unset
        if isinstance(self.created_by, Unset):
            created_by = UNSET
        else:
            created_by = self.created_by

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "locales": locales,
                "name": name,
                "variables": variables,
                "version": version,
                "versions": versions,
            }
        )
        if created_by is not UNSET:
            field_dict["created_by"] = created_by
        if description is not UNSET:
            field_dict["description"] = description

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.template_json_locales import TemplateJsonLocales

        d = dict(src_dict)
        created_at = d.pop("created_at")

        locales = TemplateJsonLocales.from_dict(d.pop("locales"))

        name = d.pop("name")

        variables = cast(list[str], d.pop("variables"))

        version = d.pop("version")

        versions = cast(list[int], d.pop("versions"))

        def _parse_created_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        created_by = _parse_created_by(d.pop("created_by", UNSET))

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        template_json = cls(
            created_at=created_at,
            locales=locales,
            name=name,
            variables=variables,
            version=version,
            versions=versions,
            created_by=created_by,
            description=description,
        )

        template_json.additional_properties = d
        return template_json

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
