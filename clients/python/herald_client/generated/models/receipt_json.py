from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ReceiptJson")


@_attrs_define
class ReceiptJson:
    """The answer.

    Attributes:
        event (str):
        recorded (bool): `false` when this event was already recorded for this send (the
            first report counts; a repeat changes nothing).
        delivery_id (int | None | Unset):
        index (int | None | Unset): The recipient's position in the job's audience.
        job_id (int | None | Unset):
    """

    event: str
    recorded: bool
    delivery_id: int | None | Unset = UNSET
    index: int | None | Unset = UNSET
    job_id: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        event = self.event

        recorded = self.recorded

        delivery_id: int | None | Unset
        if isinstance(self.delivery_id, Unset):
            delivery_id = UNSET
        else:
            delivery_id = self.delivery_id

        index: int | None | Unset
        if isinstance(self.index, Unset):
            index = UNSET
        else:
            index = self.index

        job_id: int | None | Unset
        if isinstance(self.job_id, Unset):
            job_id = UNSET
        else:
            job_id = self.job_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "event": event,
                "recorded": recorded,
            }
        )
        if delivery_id is not UNSET:
            field_dict["delivery_id"] = delivery_id
        if index is not UNSET:
            field_dict["index"] = index
        if job_id is not UNSET:
            field_dict["job_id"] = job_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        event = d.pop("event")

        recorded = d.pop("recorded")

        def _parse_delivery_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        delivery_id = _parse_delivery_id(d.pop("delivery_id", UNSET))

        def _parse_index(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        index = _parse_index(d.pop("index", UNSET))

        def _parse_job_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        job_id = _parse_job_id(d.pop("job_id", UNSET))

        receipt_json = cls(
            event=event,
            recorded=recorded,
            delivery_id=delivery_id,
            index=index,
            job_id=job_id,
        )

        receipt_json.additional_properties = d
        return receipt_json

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
