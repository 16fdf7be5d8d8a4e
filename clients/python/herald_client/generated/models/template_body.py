from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.template_body_locales import TemplateBodyLocales


T = TypeVar("T", bound="TemplateBody")


@_attrs_define
class TemplateBody:
    """A template version as the API takes it (`POST /v1/templates`,
    `PUT /v1/templates/{name}`).

        Attributes:
            locales (TemplateBodyLocales): Variants by locale tag (`default` is required): each maps a part
                (`app`, `email`, `sms`, `wechat`, `wecom`, `wechat_mini`, `robot`,
                `webhook`) to the provider's message shape, whose strings are Jinja
                templates.
            description (None | str | Unset):
    """

    locales: TemplateBodyLocales
    description: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        locales = self.locales.to_dict()

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "locales": locales,
            }
        )
        if description is not UNSET:
            field_dict["description"] = description

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.template_body_locales import TemplateBodyLocales

        d = dict(src_dict)
        locales = TemplateBodyLocales.from_dict(d.pop("locales"))

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        template_body = cls(
            locales=locales,
            description=description,
        )

        return template_body
