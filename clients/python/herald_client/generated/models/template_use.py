from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.template_use_data_type_0 import TemplateUseDataType0


T = TypeVar("T", bound="TemplateUse")


@_attrs_define
class TemplateUse:
    """`template` of a timer: which template (its latest version when the timer
    fires, unless one is pinned) and the data it renders with.

        Attributes:
            name (str):
            data (None | TemplateUseDataType0 | Unset): The variables the template reads (a JSON object).
            version (int | None | Unset):
    """

    name: str
    data: None | TemplateUseDataType0 | Unset = UNSET
    version: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.template_use_data_type_0 import TemplateUseDataType0

        name = self.name

        data: dict[str, Any] | None | Unset
        if isinstance(self.data, Unset):
            data = UNSET
        elif isinstance(self.data, TemplateUseDataType0):
            data = self.data.to_dict()
        else:
            data = self.data

        version: int | None | Unset
        if isinstance(self.version, Unset):
            version = UNSET
        else:
            version = self.version

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if data is not UNSET:
            field_dict["data"] = data
        if version is not UNSET:
            field_dict["version"] = version

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.template_use_data_type_0 import TemplateUseDataType0

        d = dict(src_dict)
        name = d.pop("name")

        def _parse_data(data: object) -> None | TemplateUseDataType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                data_type_0 = TemplateUseDataType0.from_dict(data)

                return data_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TemplateUseDataType0 | Unset, data)

        data = _parse_data(d.pop("data", UNSET))

        def _parse_version(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        version = _parse_version(d.pop("version", UNSET))

        template_use = cls(
            name=name,
            data=data,
            version=version,
        )

        return template_use
