from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.early_start_json import EarlyStartJson
    from ..models.outcomes_json import OutcomesJson
    from ..models.reminder_group_json import ReminderGroupJson
    from ..models.subject_json_data_type_0 import SubjectJsonDataType0
    from ..models.subject_json_templates_type_0 import SubjectJsonTemplatesType0


T = TypeVar("T", bound="SubjectDetailJson")


@_attrs_define
class SubjectDetailJson:
    """`GET /v1/subjects/{id}`: the subject, its counts, its reminders by
    channel type and lead, and when its pending reminders go out.

        Attributes:
            created_at (str):
            send_late (bool): Its reminders go out even after it started (never `expired`).
            start_at (str):
            subject_id (str):
            updated_at (str):
            counts_capped (bool): Counting stopped at the cap: both figures are lower bounds.
            reminders (int): Reminders (a user's channel type and lead), sent or still to come.
            subscribers (int): Distinct users with at least one reminder on the subject.
            early_start (list[EarlyStartJson]): The plan of its pending reminders, per channel type, lead, channel
                and due time: how many, and when they start. While they are about
                to fall due this is the plan the engine follows; before, a preview
                counted from the subject's pending reminders (see
                `early_start_counted_at`).
            early_start_counted_at (str): When `early_start`'s reminders were counted: at this request for a
                subject of up to 20,000 reminders; a bigger one's last count is kept
                (at least 15 s, or twenty times what the count took) and redone in
                the background when it goes stale.
            outcomes (OutcomesJson): How a subject's reminders turned out, read from at most `cap` of them.
            reminders_by (list[ReminderGroupJson]):
            cancelled_reminders (int | None | Unset):
            data (None | SubjectJsonDataType0 | Unset):
            early_window_ms (int | None | Unset): Its own early window (ms), `null` when it takes the configured one.
            moved_reminders (int | None | Unset):
            templates (None | SubjectJsonTemplatesType0 | Unset): Its own reminder templates by channel type, `null` when it
                has none
                (its reminders take `[reminders.templates]`).
            title (None | str | Unset):
    """

    created_at: str
    send_late: bool
    start_at: str
    subject_id: str
    updated_at: str
    counts_capped: bool
    reminders: int
    subscribers: int
    early_start: list[EarlyStartJson]
    early_start_counted_at: str
    outcomes: OutcomesJson
    reminders_by: list[ReminderGroupJson]
    cancelled_reminders: int | None | Unset = UNSET
    data: None | SubjectJsonDataType0 | Unset = UNSET
    early_window_ms: int | None | Unset = UNSET
    moved_reminders: int | None | Unset = UNSET
    templates: None | SubjectJsonTemplatesType0 | Unset = UNSET
    title: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.subject_json_data_type_0 import SubjectJsonDataType0
        from ..models.subject_json_templates_type_0 import SubjectJsonTemplatesType0

        created_at = self.created_at

        send_late = self.send_late

        start_at = self.start_at

        subject_id = self.subject_id

        updated_at = self.updated_at

        counts_capped = self.counts_capped

        reminders = self.reminders

        subscribers = self.subscribers

        early_start = []
        for early_start_item_data in self.early_start:
            early_start_item = early_start_item_data.to_dict()
            early_start.append(early_start_item)

        early_start_counted_at = self.early_start_counted_at

        outcomes = self.outcomes.to_dict()

        reminders_by = []
        for reminders_by_item_data in self.reminders_by:
            reminders_by_item = reminders_by_item_data.to_dict()
            reminders_by.append(reminders_by_item)

        cancelled_reminders: int | None | Unset
        if isinstance(self.cancelled_reminders, Unset):
            cancelled_reminders = UNSET
        else:
            cancelled_reminders = self.cancelled_reminders

        data: dict[str, Any] | None | Unset
        if isinstance(self.data, Unset):
            data = UNSET
        elif isinstance(self.data, SubjectJsonDataType0):
            data = self.data.to_dict()
        else:
            data = self.data

        early_window_ms: int | None | Unset
        if isinstance(self.early_window_ms, Unset):
            early_window_ms = UNSET
        else:
            early_window_ms = self.early_window_ms

        moved_reminders: int | None | Unset
        if isinstance(self.moved_reminders, Unset):
            moved_reminders = UNSET
        else:
            moved_reminders = self.moved_reminders

        templates: dict[str, Any] | None | Unset
        if isinstance(self.templates, Unset):
            templates = UNSET
        elif isinstance(self.templates, SubjectJsonTemplatesType0):
            templates = self.templates.to_dict()
        else:
            templates = self.templates

        title: None | str | Unset
        if isinstance(self.title, Unset):
            title = UNSET
        else:
            title = self.title

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "send_late": send_late,
                "start_at": start_at,
                "subject_id": subject_id,
                "updated_at": updated_at,
                "counts_capped": counts_capped,
                "reminders": reminders,
                "subscribers": subscribers,
                "early_start": early_start,
                "early_start_counted_at": early_start_counted_at,
                "outcomes": outcomes,
                "reminders_by": reminders_by,
            }
        )
        if cancelled_reminders is not UNSET:
            field_dict["cancelled_reminders"] = cancelled_reminders
        if data is not UNSET:
            field_dict["data"] = data
        if early_window_ms is not UNSET:
            field_dict["early_window_ms"] = early_window_ms
        if moved_reminders is not UNSET:
            field_dict["moved_reminders"] = moved_reminders
        if templates is not UNSET:
            field_dict["templates"] = templates
        if title is not UNSET:
            field_dict["title"] = title

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.early_start_json import EarlyStartJson
        from ..models.outcomes_json import OutcomesJson
        from ..models.reminder_group_json import ReminderGroupJson
        from ..models.subject_json_data_type_0 import SubjectJsonDataType0
        from ..models.subject_json_templates_type_0 import SubjectJsonTemplatesType0

        d = dict(src_dict)
        created_at = d.pop("created_at")

        send_late = d.pop("send_late")

        start_at = d.pop("start_at")

        subject_id = d.pop("subject_id")

        updated_at = d.pop("updated_at")

        counts_capped = d.pop("counts_capped")

        reminders = d.pop("reminders")

        subscribers = d.pop("subscribers")

        early_start = []
        _early_start = d.pop("early_start")
        for early_start_item_data in _early_start:
            early_start_item = EarlyStartJson.from_dict(early_start_item_data)

            early_start.append(early_start_item)

        early_start_counted_at = d.pop("early_start_counted_at")

        outcomes = OutcomesJson.from_dict(d.pop("outcomes"))

        reminders_by = []
        _reminders_by = d.pop("reminders_by")
        for reminders_by_item_data in _reminders_by:
            reminders_by_item = ReminderGroupJson.from_dict(reminders_by_item_data)

            reminders_by.append(reminders_by_item)

        def _parse_cancelled_reminders(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cancelled_reminders = _parse_cancelled_reminders(
            d.pop("cancelled_reminders", UNSET)
        )

        def _parse_data(data: object) -> None | SubjectJsonDataType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                data_type_0 = SubjectJsonDataType0.from_dict(data)

                return data_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubjectJsonDataType0 | Unset, data)

        data = _parse_data(d.pop("data", UNSET))

        def _parse_early_window_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        early_window_ms = _parse_early_window_ms(d.pop("early_window_ms", UNSET))

        def _parse_moved_reminders(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        moved_reminders = _parse_moved_reminders(d.pop("moved_reminders", UNSET))

        def _parse_templates(data: object) -> None | SubjectJsonTemplatesType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                templates_type_0 = SubjectJsonTemplatesType0.from_dict(data)

                return templates_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubjectJsonTemplatesType0 | Unset, data)

        templates = _parse_templates(d.pop("templates", UNSET))

        def _parse_title(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        title = _parse_title(d.pop("title", UNSET))

        subject_detail_json = cls(
            created_at=created_at,
            send_late=send_late,
            start_at=start_at,
            subject_id=subject_id,
            updated_at=updated_at,
            counts_capped=counts_capped,
            reminders=reminders,
            subscribers=subscribers,
            early_start=early_start,
            early_start_counted_at=early_start_counted_at,
            outcomes=outcomes,
            reminders_by=reminders_by,
            cancelled_reminders=cancelled_reminders,
            data=data,
            early_window_ms=early_window_ms,
            moved_reminders=moved_reminders,
            templates=templates,
            title=title,
        )

        subject_detail_json.additional_properties = d
        return subject_detail_json

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
