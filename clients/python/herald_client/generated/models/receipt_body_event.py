from typing import Literal

ReceiptBodyEvent = Literal["clicked", "delivered", "read"]

RECEIPT_BODY_EVENT_VALUES: set[ReceiptBodyEvent] = {
    "clicked",
    "delivered",
    "read",
}


def check_receipt_body_event(value: str) -> ReceiptBodyEvent:
    if value in RECEIPT_BODY_EVENT_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {RECEIPT_BODY_EVENT_VALUES!r}"
    )
