from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.template_preview_data_type_0 import TemplatePreviewDataType0


T = TypeVar("T", bound="TemplatePreview")


@_attrs_define
class TemplatePreview:
    """`POST /v1/templates/{name}:preview`.

    Attributes:
        data (None | TemplatePreviewDataType0 | Unset): The variables to render with (a reminder template reads
            `subject`,
            `subscriber`, `lead_minutes`, ...).
        locale (None | str | Unset): Render for this locale (over the subscriber's).
        part (None | str | Unset): Render only this part (`app`, `email`, `sms`, `wechat`, `wecom`,
            `webhook`); unset, every part the template has.
        timezone (None | str | Unset): Show times in this IANA zone (over the subscriber's).
        user_id (None | str | Unset): Render for this subscriber: their locale and time zone.
        version (int | None | Unset): A version to render instead of the latest.
    """

    data: None | TemplatePreviewDataType0 | Unset = UNSET
    locale: None | str | Unset = UNSET
    part: None | str | Unset = UNSET
    timezone: None | str | Unset = UNSET
    user_id: None | str | Unset = UNSET
    version: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.template_preview_data_type_0 import TemplatePreviewDataType0

        data: dict[str, Any] | None | Unset
        if isinstance(self.data, Unset):
            data = UNSET
        elif isinstance(self.data, TemplatePreviewDataType0):
            data = self.data.to_dict()
        else:
            data = self.data

        locale: None | str | Unset
        if isinstance(self.locale, Unset):
            locale = UNSET
        else:
            locale = self.locale

        part: None | str | Unset
        if isinstance(self.part, Unset):
            part = UNSET
        else:
            part = self.part

        timezone: None | str | Unset
        if isinstance(self.timezone, Unset):
            timezone = UNSET
        else:
            timezone = self.timezone

        user_id: None | str | Unset
        if isinstance(self.user_id, Unset):
            user_id = UNSET
        else:
            user_id = self.user_id

        version: int | None | Unset
        if isinstance(self.version, Unset):
            version = UNSET
        else:
            version = self.version

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if data is not UNSET:
            field_dict["data"] = data
        if locale is not UNSET:
            field_dict["locale"] = locale
        if part is not UNSET:
            field_dict["part"] = part
        if timezone is not UNSET:
            field_dict["timezone"] = timezone
        if user_id is not UNSET:
            field_dict["user_id"] = user_id
        if version is not UNSET:
            field_dict["version"] = version

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.template_preview_data_type_0 import TemplatePreviewDataType0

        d = dict(src_dict)

        def _parse_data(data: object) -> None | TemplatePreviewDataType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                data_type_0 = TemplatePreviewDataType0.from_dict(data)

                return data_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TemplatePreviewDataType0 | Unset, data)

        data = _parse_data(d.pop("data", UNSET))

        def _parse_locale(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        locale = _parse_locale(d.pop("locale", UNSET))

        def _parse_part(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        part = _parse_part(d.pop("part", UNSET))

        def _parse_timezone(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        timezone = _parse_timezone(d.pop("timezone", UNSET))

        def _parse_user_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        user_id = _parse_user_id(d.pop("user_id", UNSET))

        def _parse_version(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        version = _parse_version(d.pop("version", UNSET))

        template_preview = cls(
            data=data,
            locale=locale,
            part=part,
            timezone=timezone,
            user_id=user_id,
            version=version,
        )

        return template_preview
