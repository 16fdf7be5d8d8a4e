from typing import Literal

Getv1AuditOrder = Literal["asc", "desc"]

GETV_1_AUDIT_ORDER_VALUES: set[Getv1AuditOrder] = {
    "asc",
    "desc",
}


def check_getv_1_audit_order(value: str) -> Getv1AuditOrder:
    if value in GETV_1_AUDIT_ORDER_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {GETV_1_AUDIT_ORDER_VALUES!r}"
    )
