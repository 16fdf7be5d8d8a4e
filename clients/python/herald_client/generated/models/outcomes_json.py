from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.error_count_json import ErrorCountJson
    from ..models.failed_reminder_json import FailedReminderJson
    from ..models.outcomes_json_by_state import OutcomesJsonByState


T = TypeVar("T", bound="OutcomesJson")


@_attrs_define
class OutcomesJson:
    """How a subject's reminders turned out, read from at most `cap` of them.

    Attributes:
        by_state (OutcomesJsonByState): Reminders per timer state (`pending`, `done`, `failed`, `dead`,
            `cancelled`, `in_doubt`), only the states present.
        cap (int): Most reminders read.
        capped (bool): The subject has more than `cap`: the figures cover the first read.
        counted (int): Reminders read.
        failed (list[FailedReminderJson]): The newest of them (at most 20).
        top_errors (list[ErrorCountJson]): What the failed, dead and in-doubt ones failed with, most common first.
    """

    by_state: OutcomesJsonByState
    cap: int
    capped: bool
    counted: int
    failed: list[FailedReminderJson]
    top_errors: list[ErrorCountJson]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        by_state = self.by_state.to_dict()

        cap = self.cap

        capped = self.capped

        counted = self.counted

        failed = []
        for failed_item_data in self.failed:
            failed_item = failed_item_data.to_dict()
            failed.append(failed_item)

        top_errors = []
        for top_errors_item_data in self.top_errors:
            top_errors_item = top_errors_item_data.to_dict()
            top_errors.append(top_errors_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "by_state": by_state,
                "cap": cap,
                "capped": capped,
                "counted": counted,
                "failed": failed,
                "top_errors": top_errors,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.error_count_json import ErrorCountJson
        from ..models.failed_reminder_json import FailedReminderJson
        from ..models.outcomes_json_by_state import OutcomesJsonByState

        d = dict(src_dict)
        by_state = OutcomesJsonByState.from_dict(d.pop("by_state"))

        cap = d.pop("cap")

        capped = d.pop("capped")

        counted = d.pop("counted")

        failed = []
        _failed = d.pop("failed")
        for failed_item_data in _failed:
            failed_item = FailedReminderJson.from_dict(failed_item_data)

            failed.append(failed_item)

        top_errors = []
        _top_errors = d.pop("top_errors")
        for top_errors_item_data in _top_errors:
            top_errors_item = ErrorCountJson.from_dict(top_errors_item_data)

            top_errors.append(top_errors_item)

        outcomes_json = cls(
            by_state=by_state,
            cap=cap,
            capped=capped,
            counted=counted,
            failed=failed,
            top_errors=top_errors,
        )

        outcomes_json.additional_properties = d
        return outcomes_json

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
