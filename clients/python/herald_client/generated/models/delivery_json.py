from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="DeliveryJson")


@_attrs_define
class DeliveryJson:
    """
    Attributes:
        attempt (int):
        channel (str):
        finished_at (str):
        id (int):
        idempotency_key (str):
        outcome (str):
        started_at (str):
        timer_id (int):
        error (None | str | Unset):
        final_at (None | str | Unset):
        final_status (None | str | Unset): What the provider reported later (a callback, or `recalled`).
        provider_msgid (None | str | Unset):
        status (int | None | Unset):
        step (int | None | Unset): The step of the timer's fallback route this attempt was.
    """

    attempt: int
    channel: str
    finished_at: str
    id: int
    idempotency_key: str
    outcome: str
    started_at: str
    timer_id: int
    error: None | str | Unset = UNSET
    final_at: None | str | Unset = UNSET
    final_status: None | str | Unset = UNSET
    provider_msgid: None | str | Unset = UNSET
    status: int | None | Unset = UNSET
    step: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        channel = self.channel

        finished_at = self.finished_at

        id = self.id

        idempotency_key = self.idempotency_key

        outcome = self.outcome

        started_at = self.started_at

        timer_id = self.timer_id

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        final_at: None | str | Unset
        if isinstance(self.final_at, Unset):
            final_at = UNSET
        else:
            final_at = self.final_at

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

        status: int | None | Unset
        if isinstance(self.status, Unset):
            status = UNSET
        else:
            status = self.status

        step: int | None | Unset
        if isinstance(self.step, Unset):
            step = UNSET
        else:
            step = self.step

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "channel": channel,
                "finished_at": finished_at,
                "id": id,
                "idempotency_key": idempotency_key,
                "outcome": outcome,
                "started_at": started_at,
                "timer_id": timer_id,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if final_at is not UNSET:
            field_dict["final_at"] = final_at
        if final_status is not UNSET:
            field_dict["final_status"] = final_status
        if provider_msgid is not UNSET:
            field_dict["provider_msgid"] = provider_msgid
        if status is not UNSET:
            field_dict["status"] = status
        if step is not UNSET:
            field_dict["step"] = step

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        channel = d.pop("channel")

        finished_at = d.pop("finished_at")

        id = d.pop("id")

        idempotency_key = d.pop("idempotency_key")

        outcome = d.pop("outcome")

        started_at = d.pop("started_at")

        timer_id = d.pop("timer_id")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_final_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        final_at = _parse_final_at(d.pop("final_at", UNSET))

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

        def _parse_status(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        status = _parse_status(d.pop("status", UNSET))

        def _parse_step(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        step = _parse_step(d.pop("step", UNSET))

        delivery_json = cls(
            attempt=attempt,
            channel=channel,
            finished_at=finished_at,
            id=id,
            idempotency_key=idempotency_key,
            outcome=outcome,
            started_at=started_at,
            timer_id=timer_id,
            error=error,
            final_at=final_at,
            final_status=final_status,
            provider_msgid=provider_msgid,
            status=status,
            step=step,
        )

        delivery_json.additional_properties = d
        return delivery_json

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
