from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.receipt_body_event import ReceiptBodyEvent, check_receipt_body_event
from ..types import UNSET, Unset

T = TypeVar("T", bound="ReceiptBody")


@_attrs_define
class ReceiptBody:
    """The request body.

    Attributes:
        event (ReceiptBodyEvent): `delivered`, `read` or `clicked`.
        at (datetime.datetime | None | Unset): When it happened (RFC 3339); now when left out.
        delivery_id (int | None | Unset): A send-log row of a timer (`GET /v1/timers/{id}/deliveries`).
        idempotency_key (None | str | Unset): The idempotency key the message carried.
    """

    event: ReceiptBodyEvent
    at: datetime.datetime | None | Unset = UNSET
    delivery_id: int | None | Unset = UNSET
    idempotency_key: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        event: str = self.event

        at: None | str | Unset
        if isinstance(self.at, Unset):
            at = UNSET
        elif isinstance(self.at, datetime.datetime):
            at = self.at.isoformat()
        else:
            at = self.at

        delivery_id: int | None | Unset
        if isinstance(self.delivery_id, Unset):
            delivery_id = UNSET
        else:
            delivery_id = self.delivery_id

        idempotency_key: None | str | Unset
        if isinstance(self.idempotency_key, Unset):
            idempotency_key = UNSET
        else:
            idempotency_key = self.idempotency_key

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "event": event,
            }
        )
        if at is not UNSET:
            field_dict["at"] = at
        if delivery_id is not UNSET:
            field_dict["delivery_id"] = delivery_id
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        event = check_receipt_body_event(d.pop("event"))

        def _parse_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                at_type_0 = datetime.datetime.fromisoformat(data)

                return at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        at = _parse_at(d.pop("at", UNSET))

        def _parse_delivery_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        delivery_id = _parse_delivery_id(d.pop("delivery_id", UNSET))

        def _parse_idempotency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key", UNSET))

        receipt_body = cls(
            event=event,
            at=at,
            delivery_id=delivery_id,
            idempotency_key=idempotency_key,
        )

        return receipt_body
