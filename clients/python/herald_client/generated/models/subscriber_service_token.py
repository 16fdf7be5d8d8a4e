from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..models.push_service import PushService, check_push_service

T = TypeVar("T", bound="SubscriberServiceToken")


@_attrs_define
class SubscriberServiceToken:
    """A device token and the push service that issued it.

    Attributes:
        service (PushService): A push service that issues device tokens.
        token (str):
    """

    service: PushService
    token: str

    def to_dict(self) -> dict[str, Any]:
        service: str = self.service

        token = self.token

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "service": service,
                "token": token,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        service = check_push_service(d.pop("service"))

        token = d.pop("token")

        subscriber_service_token = cls(
            service=service,
            token=token,
        )

        return subscriber_service_token
