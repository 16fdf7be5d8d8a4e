from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ReportRowJson")


@_attrs_define
class ReportRowJson:
    """One group of a report: only the keys grouped by appear.

    Attributes:
        count (int): Send-log rows counted: attempts for timers, recorded outcomes for
            campaign recipients.
        channel (None | str | Unset):
        day (None | str | Unset): UTC day, `YYYY-MM-DD`.
        job (int | None | Unset): `null`: not sent by a job (timers).
        outcome (None | str | Unset): `delivered`, `retry`, `failed`, `dead`, `throttled`, `deferred`,
            `no_address`, `opted_out`, `expired` (timers); `delivered`, `retry`, `failed` (campaigns).
        rule (int | None | Unset): `null`: not sent by a rule's job (timers, jobs made directly).
        tenant (None | str | Unset): The tenant's name.
    """

    count: int
    channel: None | str | Unset = UNSET
    day: None | str | Unset = UNSET
    job: int | None | Unset = UNSET
    outcome: None | str | Unset = UNSET
    rule: int | None | Unset = UNSET
    tenant: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        count = self.count

        channel: None | str | Unset
        if isinstance(self.channel, Unset):
            channel = UNSET
        else:
            channel = self.channel

        day: None | str | Unset
        if isinstance(self.day, Unset):
            day = UNSET
        else:
            day = self.day

        job: int | None | Unset
        if isinstance(self.job, Unset):
            job = UNSET
        else:
            job = self.job

        outcome: None | str | Unset
        if isinstance(self.outcome, Unset):
            outcome = UNSET
        else:
            outcome = self.outcome

        rule: int | None | Unset
        if isinstance(self.rule, Unset):
            rule = UNSET
        else:
            rule = self.rule

        tenant: None | str | Unset
        if isinstance(self.tenant, Unset):
            tenant = UNSET
        else:
            tenant = self.tenant

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "count": count,
            }
        )
        if channel is not UNSET:
            field_dict["channel"] = channel
        if day is not UNSET:
            field_dict["day"] = day
        if job is not UNSET:
            field_dict["job"] = job
        if outcome is not UNSET:
            field_dict["outcome"] = outcome
        if rule is not UNSET:
            field_dict["rule"] = rule
        if tenant is not UNSET:
            field_dict["tenant"] = tenant

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        count = d.pop("count")

        def _parse_channel(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        channel = _parse_channel(d.pop("channel", UNSET))

        def _parse_day(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        day = _parse_day(d.pop("day", UNSET))

        def _parse_job(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        job = _parse_job(d.pop("job", UNSET))

        def _parse_outcome(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        outcome = _parse_outcome(d.pop("outcome", UNSET))

        def _parse_rule(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        rule = _parse_rule(d.pop("rule", UNSET))

        def _parse_tenant(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tenant = _parse_tenant(d.pop("tenant", UNSET))

        report_row_json = cls(
            count=count,
            channel=channel,
            day=day,
            job=job,
            outcome=outcome,
            rule=rule,
            tenant=tenant,
        )

        report_row_json.additional_properties = d
        return report_row_json

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
