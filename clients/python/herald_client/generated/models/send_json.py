from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="SendJson")


@_attrs_define
class SendJson:
    """
    Attributes:
        attempts (int):
        idempotency_key (str):
        index (int):
        recipient (str):
        state (str):
        updated_at (str):
        error (None | str | Unset):
        final_status (None | str | Unset): What the provider reported later (a delivery callback).
        provider_msgid (None | str | Unset):
    """

    attempts: int
    idempotency_key: str
    index: int
    recipient: str
    state: str
    updated_at: str
    error: None | str | Unset = UNSET
    final_status: None | str | Unset = UNSET
    provider_msgid: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempts = self.attempts

        idempotency_key = self.idempotency_key

        index = self.index

        recipient = self.recipient

        state = self.state

        updated_at = self.updated_at

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        final_status: None | str | Unset
        if isinstance(self.final_status, Unset):
            final_status = UNSET
        else:
            final_status = self.final_status

        provider_msgid: None | str | Unset
        if isinstance(self.provider_msgid, Unset):
            provider_msgid = UNSET
        else:
            provider_msgid = self.provider_msgid

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempts": attempts,
                "idempotency_key": idempotency_key,
                "index": index,
                "recipient": recipient,
                "state": state,
                "updated_at": updated_at,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if final_status is not UNSET:
            field_dict["final_status"] = final_status
        if provider_msgid is not UNSET:
            field_dict["provider_msgid"] = provider_msgid

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        attempts = d.pop("attempts")

        idempotency_key = d.pop("idempotency_key")

        index = d.pop("index")

        recipient = d.pop("recipient")

        state = d.pop("state")

        updated_at = d.pop("updated_at")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_final_status(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        final_status = _parse_final_status(d.pop("final_status", UNSET))

        def _parse_provider_msgid(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        provider_msgid = _parse_provider_msgid(d.pop("provider_msgid", UNSET))

        send_json = cls(
            attempts=attempts,
            idempotency_key=idempotency_key,
            index=index,
            recipient=recipient,
            state=state,
            updated_at=updated_at,
            error=error,
            final_status=final_status,
            provider_msgid=provider_msgid,
        )

        send_json.additional_properties = d
        return send_json

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
