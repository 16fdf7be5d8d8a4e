from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.create_template_locales import CreateTemplateLocales


T = TypeVar("T", bound="CreateTemplate")


@_attrs_define
class CreateTemplate:
    """`POST /v1/templates`.

    Attributes:
        locales (CreateTemplateLocales): Variants by locale tag (`default` is required), each mapping a part
            (`app`, `email`, `sms`, `wechat`, `wecom`, `webhook`) to the provider's
            message shape whose strings are Jinja templates.
        name (str): 1 to 64 letters, digits, `.`, `_`, `-`.
        description (None | str | Unset):
    """

    locales: CreateTemplateLocales
    name: str
    description: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        locales = self.locales.to_dict()

        name = self.name

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "locales": locales,
                "name": name,
            }
        )
        if description is not UNSET:
            field_dict["description"] = description

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.create_template_locales import CreateTemplateLocales

        d = dict(src_dict)
        locales = CreateTemplateLocales.from_dict(d.pop("locales"))

        name = d.pop("name")

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        create_template = cls(
            locales=locales,
            name=name,
            description=description,
        )

        return create_template
