from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="RecipientLine")


@_attrs_define
class RecipientLine:
    """One line of an NDJSON audience upload (`POST /v1/audiences`); blank
    lines are skipped.

        Attributes:
            recipient (str): 1..=256 bytes, no control characters.
    """

    recipient: str

    def to_dict(self) -> dict[str, Any]:
        recipient = self.recipient

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "recipient": recipient,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        recipient = d.pop("recipient")

        recipient_line = cls(
            recipient=recipient,
        )

        return recipient_line
