from typing import Literal

Getv1ReportsGroupByItem = Literal["channel", "day", "job", "outcome", "rule", "tenant"]

GETV_1_REPORTS_GROUP_BY_ITEM_VALUES: set[Getv1ReportsGroupByItem] = {
    "channel",
    "day",
    "job",
    "outcome",
    "rule",
    "tenant",
}


def check_getv_1_reports_group_by_item(value: str) -> Getv1ReportsGroupByItem:
    if value in GETV_1_REPORTS_GROUP_BY_ITEM_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {GETV_1_REPORTS_GROUP_BY_ITEM_VALUES!r}"
    )
