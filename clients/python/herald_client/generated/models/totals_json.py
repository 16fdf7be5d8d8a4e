from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="TotalsJson")


@_attrs_define
class TotalsJson:
    """A job's recipients by outcome; they add up to `total`.

    Attributes:
        cancelled (int):
        clicked (int): Recipients with a `clicked` receipt.
        delivered (int): Recipients with a `delivered` receipt (`POST /v1/receipts`, or a
            provider's `success` callback). Receipts are counted apart from the
            outcomes above and need not add up with them.
        expired (int):
        failed (int):
        in_doubt (int): Handed to the provider by a node that died before it recorded the
            answer, and not sent again (the channel's `in_doubt = "skip"`): they
            may or may not have arrived. `GET /v1/jobs/{id}/sends?outcome=in_doubt`
            lists them.
        read (int): Recipients with a `read` receipt.
        remaining (int): Without a final outcome yet.
        retrying (int): Failed retryably, waiting for another attempt (counted in `remaining`).
        sent (int): Delivered.
        total (int):
    """

    cancelled: int
    clicked: int
    delivered: int
    expired: int
    failed: int
    in_doubt: int
    read: int
    remaining: int
    retrying: int
    sent: int
    total: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cancelled = self.cancelled

        clicked = self.clicked

        delivered = self.delivered

        expired = self.expired

        failed = self.failed

        in_doubt = self.in_doubt

        read = self.read

        remaining = self.remaining

        retrying = self.retrying

        sent = self.sent

        total = self.total

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cancelled": cancelled,
                "clicked": clicked,
                "delivered": delivered,
                "expired": expired,
                "failed": failed,
                "in_doubt": in_doubt,
                "read": read,
                "remaining": remaining,
                "retrying": retrying,
                "sent": sent,
                "total": total,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        cancelled = d.pop("cancelled")

        clicked = d.pop("clicked")

        delivered = d.pop("delivered")

        expired = d.pop("expired")

        failed = d.pop("failed")

        in_doubt = d.pop("in_doubt")

        read = d.pop("read")

        remaining = d.pop("remaining")

        retrying = d.pop("retrying")

        sent = d.pop("sent")

        total = d.pop("total")

        totals_json = cls(
            cancelled=cancelled,
            clicked=clicked,
            delivered=delivered,
            expired=expired,
            failed=failed,
            in_doubt=in_doubt,
            read=read,
            remaining=remaining,
            retrying=retrying,
            sent=sent,
            total=total,
        )

        totals_json.additional_properties = d
        return totals_json

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
