from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="GrantEntry")


@_attrs_define
class GrantEntry:
    """One template the user allowed.

    Attributes:
        template_id (str):
        count (int | None | Unset): One-time grants (1 per tap); 1 when left out, none with `long_term`.
        long_term (bool | Unset): A long-term subscription (industries WeChat allows): every send goes.
    """

    template_id: str
    count: int | None | Unset = UNSET
    long_term: bool | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        template_id = self.template_id

        count: int | None | Unset
        if isinstance(self.count, Unset):
            count = UNSET
        else:
            count = self.count

        long_term = self.long_term

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "template_id": template_id,
            }
        )
        if count is not UNSET:
            field_dict["count"] = count
        if long_term is not UNSET:
            field_dict["long_term"] = long_term

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        template_id = d.pop("template_id")

        def _parse_count(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        count = _parse_count(d.pop("count", UNSET))

        long_term = d.pop("long_term", UNSET)

        grant_entry = cls(
            template_id=template_id,
            count=count,
            long_term=long_term,
        )

        return grant_entry
