from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.send_json import SendJson


T = TypeVar("T", bound="UserSendJson")


@_attrs_define
class UserSendJson:
    """The user in one job.

    Attributes:
        channel (str):
        index (int): The user's index in the job's audience.
        job_created_at (str):
        job_id (int):
        job_state (str): The job's state.
        job_name (None | str | Unset):
        send (None | SendJson | Unset):
    """

    channel: str
    index: int
    job_created_at: str
    job_id: int
    job_state: str
    job_name: None | str | Unset = UNSET
    send: None | SendJson | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.send_json import SendJson

        channel = self.channel

        index = self.index

        job_created_at = self.job_created_at

        job_id = self.job_id

        job_state = self.job_state

        job_name: None | str | Unset
        if isinstance(self.job_name, Unset):
            job_name = UNSET
        else:
            job_name = self.job_name

        send: dict[str, Any] | None | Unset
        if isinstance(self.send, Unset):
            send = UNSET
        elif isinstance(self.send, SendJson):
            send = self.send.to_dict()
        else:
            send = self.send

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "channel": channel,
                "index": index,
                "job_created_at": job_created_at,
                "job_id": job_id,
                "job_state": job_state,
            }
        )
        if job_name is not UNSET:
            field_dict["job_name"] = job_name
        if send is not UNSET:
            field_dict["send"] = send

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.send_json import SendJson

        d = dict(src_dict)
        channel = d.pop("channel")

        index = d.pop("index")

        job_created_at = d.pop("job_created_at")

        job_id = d.pop("job_id")

        job_state = d.pop("job_state")

        def _parse_job_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        job_name = _parse_job_name(d.pop("job_name", UNSET))

        def _parse_send(data: object) -> None | SendJson | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                send_type_1 = SendJson.from_dict(data)

                return send_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SendJson | Unset, data)

        send = _parse_send(d.pop("send", UNSET))

        user_send_json = cls(
            channel=channel,
            index=index,
            job_created_at=job_created_at,
            job_id=job_id,
            job_state=job_state,
            job_name=job_name,
            send=send,
        )

        user_send_json.additional_properties = d
        return user_send_json

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
