from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="TemplateRef")


@_attrs_define
class TemplateRef:
    """A template reference as timers, reminders, jobs and rules give it.

    Attributes:
        name (str):
        version (int | None | Unset): Pinned version; unset, the latest version when the message is sent.
    """

    name: str
    version: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

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
        if version is not UNSET:
            field_dict["version"] = version

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        def _parse_version(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        version = _parse_version(d.pop("version", UNSET))

        template_ref = cls(
            name=name,
            version=version,
        )

        return template_ref
