from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.job_json import JobJson


T = TypeVar("T", bound="JobRetried")


@_attrs_define
class JobRetried:
    """The answer to `POST /v1/jobs/{id}:retry-failed` and `:retry-in-doubt`.

    Attributes:
        job (JobJson):
        retried (int): Failed (or in-doubt) sends that were set to be sent again.
    """

    job: JobJson
    retried: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job = self.job.to_dict()

        retried = self.retried

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job": job,
                "retried": retried,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.job_json import JobJson

        d = dict(src_dict)
        job = JobJson.from_dict(d.pop("job"))

        retried = d.pop("retried")

        job_retried = cls(
            job=job,
            retried=retried,
        )

        job_retried.additional_properties = d
        return job_retried

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
