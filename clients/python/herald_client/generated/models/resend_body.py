from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.resend_body_message_type_0 import ResendBodyMessageType0


T = TypeVar("T", bound="ResendBody")


@_attrs_define
class ResendBody:
    """The body of `POST /v1/jobs/{id}:resend-unread`, optional.

    Attributes:
        message (None | ResendBodyMessageType0 | Unset): The message in the channel provider's shape; left out, the
            job's own
            (its template, if it used one).
    """

    message: None | ResendBodyMessageType0 | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.resend_body_message_type_0 import ResendBodyMessageType0

        message: dict[str, Any] | None | Unset
        if isinstance(self.message, Unset):
            message = UNSET
        elif isinstance(self.message, ResendBodyMessageType0):
            message = self.message.to_dict()
        else:
            message = self.message

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if message is not UNSET:
            field_dict["message"] = message

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.resend_body_message_type_0 import ResendBodyMessageType0

        d = dict(src_dict)

        def _parse_message(data: object) -> None | ResendBodyMessageType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                message_type_0 = ResendBodyMessageType0.from_dict(data)

                return message_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ResendBodyMessageType0 | Unset, data)

        message = _parse_message(d.pop("message", UNSET))

        resend_body = cls(
            message=message,
        )

        return resend_body
