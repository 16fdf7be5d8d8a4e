from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.subscriber_json import SubscriberJson
    from ..models.timer_json import TimerJson
    from ..models.user_send_json import UserSendJson
    from ..models.user_subject import UserSubject


T = TypeVar("T", bound="UserView")


@_attrs_define
class UserView:
    """`GET /v1/users/{user_id}`'s answer.

    Attributes:
        campaign_sends (list[UserSendJson]): The campaigns among the newest `jobs_searched` that include them,
            newest first; a send's `error` says why it was not sent.
        jobs_searched (int):
        reminders (list[UserSubject]): Their reminders by subject, with each timer's state.
        timers (list[TimerJson]): The newest timers addressed to them (latest due first), reminders
            included, each with its state and last error (`no_address`,
            `opted_out`, `quiet_hours`, `capped` … say why it was not sent).
        user_id (str):
        subscriber (None | SubscriberJson | Unset):
    """

    campaign_sends: list[UserSendJson]
    jobs_searched: int
    reminders: list[UserSubject]
    timers: list[TimerJson]
    user_id: str
    subscriber: None | SubscriberJson | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.subscriber_json import SubscriberJson

        campaign_sends = []
        for campaign_sends_item_data in self.campaign_sends:
            campaign_sends_item = campaign_sends_item_data.to_dict()
            campaign_sends.append(campaign_sends_item)

        jobs_searched = self.jobs_searched

        reminders = []
        for reminders_item_data in self.reminders:
            reminders_item = reminders_item_data.to_dict()
            reminders.append(reminders_item)

        timers = []
        for timers_item_data in self.timers:
            timers_item = timers_item_data.to_dict()
            timers.append(timers_item)

        user_id = self.user_id

        subscriber: dict[str, Any] | None | Unset
        if isinstance(self.subscriber, Unset):
            subscriber = UNSET
        elif isinstance(self.subscriber, SubscriberJson):
            subscriber = self.subscriber.to_dict()
        else:
            subscriber = self.subscriber

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "campaign_sends": campaign_sends,
                "jobs_searched": jobs_searched,
                "reminders": reminders,
                "timers": timers,
                "user_id": user_id,
            }
        )
        if subscriber is not UNSET:
            field_dict["subscriber"] = subscriber

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.subscriber_json import SubscriberJson
        from ..models.timer_json import TimerJson
        from ..models.user_send_json import UserSendJson
        from ..models.user_subject import UserSubject

        d = dict(src_dict)
        campaign_sends = []
        _campaign_sends = d.pop("campaign_sends")
        for campaign_sends_item_data in _campaign_sends:
            campaign_sends_item = UserSendJson.from_dict(campaign_sends_item_data)

            campaign_sends.append(campaign_sends_item)

        jobs_searched = d.pop("jobs_searched")

        reminders = []
        _reminders = d.pop("reminders")
        for reminders_item_data in _reminders:
            reminders_item = UserSubject.from_dict(reminders_item_data)

            reminders.append(reminders_item)

        timers = []
        _timers = d.pop("timers")
        for timers_item_data in _timers:
            timers_item = TimerJson.from_dict(timers_item_data)

            timers.append(timers_item)

        user_id = d.pop("user_id")

        def _parse_subscriber(data: object) -> None | SubscriberJson | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                subscriber_type_1 = SubscriberJson.from_dict(data)

                return subscriber_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubscriberJson | Unset, data)

        subscriber = _parse_subscriber(d.pop("subscriber", UNSET))

        user_view = cls(
            campaign_sends=campaign_sends,
            jobs_searched=jobs_searched,
            reminders=reminders,
            timers=timers,
            user_id=user_id,
            subscriber=subscriber,
        )

        user_view.additional_properties = d
        return user_view

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
