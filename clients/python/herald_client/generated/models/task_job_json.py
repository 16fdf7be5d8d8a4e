from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.totals_json import TotalsJson


T = TypeVar("T", bound="TaskJobJson")


@_attrs_define
class TaskJobJson:
    """
    Attributes:
        id (int):
        state (str):
        totals (TotalsJson): A job's recipients by outcome; they add up to `total`.
    """

    id: int
    state: str
    totals: TotalsJson
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        state = self.state

        totals = self.totals.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "state": state,
                "totals": totals,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.totals_json import TotalsJson

        d = dict(src_dict)
        id = d.pop("id")

        state = d.pop("state")

        totals = TotalsJson.from_dict(d.pop("totals"))

        task_job_json = cls(
            id=id,
            state=state,
            totals=totals,
        )

        task_job_json.additional_properties = d
        return task_job_json

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
