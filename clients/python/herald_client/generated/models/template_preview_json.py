from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.template_preview_json_errors import TemplatePreviewJsonErrors
    from ..models.template_preview_json_parts import TemplatePreviewJsonParts


T = TypeVar("T", bound="TemplatePreviewJson")


@_attrs_define
class TemplatePreviewJson:
    """The answer of `:preview`: each part rendered, or why it could not be.

    Attributes:
        errors (TemplatePreviewJsonErrors): Parts that failed, with the error a send would end with
            (`template_error`).
        name (str):
        parts (TemplatePreviewJsonParts): Rendered messages by part, with the variant each came from.
        timezone (str):
        version (int):
        locale (None | str | Unset):
    """

    errors: TemplatePreviewJsonErrors
    name: str
    parts: TemplatePreviewJsonParts
    timezone: str
    version: int
    locale: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        errors = self.errors.to_dict()

        name = self.name

        parts = self.parts.to_dict()

        timezone = self.timezone

        version = self.version

        locale: None | str | Unset
        if isinstance(self.locale, Unset):
            locale = UNSET
        else:
            locale = self.locale

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "errors": errors,
                "name": name,
                "parts": parts,
                "timezone": timezone,
                "version": version,
            }
        )
        if locale is not UNSET:
            field_dict["locale"] = locale

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.template_preview_json_errors import TemplatePreviewJsonErrors
        from ..models.template_preview_json_parts import TemplatePreviewJsonParts

        d = dict(src_dict)
        errors = TemplatePreviewJsonErrors.from_dict(d.pop("errors"))

        name = d.pop("name")

        parts = TemplatePreviewJsonParts.from_dict(d.pop("parts"))

        timezone = d.pop("timezone")

        version = d.pop("version")

        def _parse_locale(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        locale = _parse_locale(d.pop("locale", UNSET))

        template_preview_json = cls(
            errors=errors,
            name=name,
            parts=parts,
            timezone=timezone,
            version=version,
            locale=locale,
        )

        template_preview_json.additional_properties = d
        return template_preview_json

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
