from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ReminderGrant")


@_attrs_define
class ReminderGrant:
    """The grant a "remind me" through a mini-program brings along
    (`POST /v1/reminders` with `grant`): the reminder's channel is the
    mini-program's.

        Attributes:
            key (str): The caller's key for the tap.
            template_id (str):
            count (int | None | Unset):
            long_term (bool | Unset):
    """

    key: str
    template_id: str
    count: int | None | Unset = UNSET
    long_term: bool | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        key = self.key

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
                "key": key,
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
        key = d.pop("key")

        template_id = d.pop("template_id")

        def _parse_count(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        count = _parse_count(d.pop("count", UNSET))

        long_term = d.pop("long_term", UNSET)

        reminder_grant = cls(
            key=key,
            template_id=template_id,
            count=count,
            long_term=long_term,
        )

        return reminder_grant
