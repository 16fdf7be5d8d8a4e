from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_body import ErrorBody


T = TypeVar("T", bound="BulkLineResult")


@_attrs_define
class BulkLineResult:
    """One answer line of a bulk endpoint (NDJSON), in input order.

    Attributes:
        line (int): 1-based line number of the request.
        status (int): The status the single endpoint would have answered.
        error (ErrorBody | Unset):
    """

    line: int
    status: int
    error: ErrorBody | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        line = self.line

        status = self.status

        error: dict[str, Any] | Unset = UNSET
        if not isinstance(self.error, Unset):
            error = self.error.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "line": line,
                "status": status,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.error_body import ErrorBody

        d = dict(src_dict)
        line = d.pop("line")

        status = d.pop("status")

        _error = d.pop("error", UNSET)
        error: ErrorBody | Unset
        if isinstance(_error, Unset):
            error = UNSET
        else:
            error = ErrorBody.from_dict(_error)

        bulk_line_result = cls(
            line=line,
            status=status,
            error=error,
        )

        bulk_line_result.additional_properties = d
        return bulk_line_result

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
