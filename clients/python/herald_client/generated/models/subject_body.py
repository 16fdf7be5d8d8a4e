from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.subject_body_data_type_0 import SubjectBodyDataType0
    from ..models.subject_body_templates_type_0 import SubjectBodyTemplatesType0


T = TypeVar("T", bound="SubjectBody")


@_attrs_define
class SubjectBody:
    """
    Attributes:
        start_at (datetime.datetime):
        data (None | SubjectBodyDataType0 | Unset):
        early_window_ms (int | None | Unset): How far before their due time this subject's reminders may start
            when a burst cannot be sent in time at the channel's rate, 0 to
            3,600,000 ms; absent or `null` takes `[reminders] early_window_ms`.
        send_late (bool | None | Unset): Send its reminders even after it started; by default one still
            unsent at the start ends `expired`.
        templates (None | SubjectBodyTemplatesType0 | Unset): Its own reminder templates, by channel type (`app`,
            `email`, `sms`,
            `wechat`, `wecom`): a reminder of the type is rendered from this
            template, not the type's `[reminders.templates]`. Each must be
            stored, have the part the type's reminders are sent as in its
            default variant, and read only what a reminder has (else `422`
            naming `templates.TYPE`). Absent, `null` or `{}`: none.
        title (None | str | Unset):
    """

    start_at: datetime.datetime
    data: None | SubjectBodyDataType0 | Unset = UNSET
    early_window_ms: int | None | Unset = UNSET
    send_late: bool | None | Unset = UNSET
    templates: None | SubjectBodyTemplatesType0 | Unset = UNSET
    title: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.subject_body_data_type_0 import SubjectBodyDataType0
        from ..models.subject_body_templates_type_0 import SubjectBodyTemplatesType0

        start_at = self.start_at.isoformat()

        data: dict[str, Any] | None | Unset
        if isinstance(self.data, Unset):
            data = UNSET
        elif isinstance(self.data, SubjectBodyDataType0):
            data = self.data.to_dict()
        else:
            data = self.data

        early_window_ms: int | None | Unset
        if isinstance(self.early_window_ms, Unset):
            early_window_ms = UNSET
        else:
            early_window_ms = self.early_window_ms

        send_late: bool | None | Unset
        if isinstance(self.send_late, Unset):
            send_late = UNSET
        else:
            send_late = self.send_late

        templates: dict[str, Any] | None | Unset
        if isinstance(self.templates, Unset):
            templates = UNSET
        elif isinstance(self.templates, SubjectBodyTemplatesType0):
            templates = self.templates.to_dict()
        else:
            templates = self.templates

        title: None | str | Unset
        if isinstance(self.title, Unset):
            title = UNSET
        else:
            title = self.title

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "start_at": start_at,
            }
        )
        if data is not UNSET:
            field_dict["data"] = data
        if early_window_ms is not UNSET:
            field_dict["early_window_ms"] = early_window_ms
        if send_late is not UNSET:
            field_dict["send_late"] = send_late
        if templates is not UNSET:
            field_dict["templates"] = templates
        if title is not UNSET:
            field_dict["title"] = title

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.subject_body_data_type_0 import SubjectBodyDataType0
        from ..models.subject_body_templates_type_0 import SubjectBodyTemplatesType0

        d = dict(src_dict)
        start_at = datetime.datetime.fromisoformat(d.pop("start_at"))

        def _parse_data(data: object) -> None | SubjectBodyDataType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                data_type_0 = SubjectBodyDataType0.from_dict(data)

                return data_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubjectBodyDataType0 | Unset, data)

        data = _parse_data(d.pop("data", UNSET))

        def _parse_early_window_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        early_window_ms = _parse_early_window_ms(d.pop("early_window_ms", UNSET))

        def _parse_send_late(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        send_late = _parse_send_late(d.pop("send_late", UNSET))

        def _parse_templates(data: object) -> None | SubjectBodyTemplatesType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                templates_type_0 = SubjectBodyTemplatesType0.from_dict(data)

                return templates_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubjectBodyTemplatesType0 | Unset, data)

        templates = _parse_templates(d.pop("templates", UNSET))

        def _parse_title(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        title = _parse_title(d.pop("title", UNSET))

        subject_body = cls(
            start_at=start_at,
            data=data,
            early_window_ms=early_window_ms,
            send_late=send_late,
            templates=templates,
            title=title,
        )

        return subject_body
