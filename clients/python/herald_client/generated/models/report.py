from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.report_row_json import ReportRowJson


T = TypeVar("T", bound="Report")


@_attrs_define
class Report:
    """`GET /v1/reports`.

    Attributes:
        group_by (list[str]):
        rows (list[ReportRowJson]): One per group, in group order.
        total (int): The sum of the rows' counts.
        truncated (bool): More groups matched than `limit`.
        from_ (None | str | Unset): The first day counted, if the query named one.
        to (None | str | Unset): The last day counted, if the query named one.
    """

    group_by: list[str]
    rows: list[ReportRowJson]
    total: int
    truncated: bool
    from_: None | str | Unset = UNSET
    to: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        group_by = self.group_by

        rows = []
        for rows_item_data in self.rows:
            rows_item = rows_item_data.to_dict()
            rows.append(rows_item)

        total = self.total

        truncated = self.truncated

        from_: None | str | Unset
        if isinstance(self.from_, Unset):
            from_ = UNSET
        else:
            from_ = self.from_

        to: None | str | Unset
        if isinstance(self.to, Unset):
            to = UNSET
        else:
            to = self.to

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "group_by": group_by,
                "rows": rows,
                "total": total,
                "truncated": truncated,
            }
        )
        if from_ is not UNSET:
            field_dict["from"] = from_
        if to is not UNSET:
            field_dict["to"] = to

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.report_row_json import ReportRowJson

        d = dict(src_dict)
        group_by = cast(list[str], d.pop("group_by"))

        rows = []
        _rows = d.pop("rows")
        for rows_item_data in _rows:
            rows_item = ReportRowJson.from_dict(rows_item_data)

            rows.append(rows_item)

        total = d.pop("total")

        truncated = d.pop("truncated")

        def _parse_from_(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        from_ = _parse_from_(d.pop("from", UNSET))

        def _parse_to(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        to = _parse_to(d.pop("to", UNSET))

        report = cls(
            group_by=group_by,
            rows=rows,
            total=total,
            truncated=truncated,
            from_=from_,
            to=to,
        )

        report.additional_properties = d
        return report

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
