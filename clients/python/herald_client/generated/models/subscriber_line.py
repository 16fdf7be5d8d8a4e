from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.subscriber_addresses import SubscriberAddresses
    from ..models.subscriber_preferences import SubscriberPreferences
    from ..models.subscriber_quiet_hours import SubscriberQuietHours


T = TypeVar("T", bound="SubscriberLine")


@_attrs_define
class SubscriberLine:
    """One line of `POST /v1/subscribers:bulk`: the user and their profile.

    Attributes:
        user_id (str): 1..=128 of `A-Z a-z 0-9 _ - . : @`.
        addresses (SubscriberAddresses | Unset): Where a user is reached, per channel type.
        locale (str | Unset):
        preferences (SubscriberPreferences | Unset): Opt-outs (`false`); a missing entry is opted in.
        quiet_hours (SubscriberQuietHours | Unset): `HH:MM` to `HH:MM`, in the subscriber's time zone.
        timezone (str | Unset):
    """

    user_id: str
    addresses: SubscriberAddresses | Unset = UNSET
    locale: str | Unset = UNSET
    preferences: SubscriberPreferences | Unset = UNSET
    quiet_hours: SubscriberQuietHours | Unset = UNSET
    timezone: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        user_id = self.user_id

        addresses: dict[str, Any] | Unset = UNSET
        if not isinstance(self.addresses, Unset):
            addresses = self.addresses.to_dict()

        locale = self.locale

        preferences: dict[str, Any] | Unset = UNSET
        if not isinstance(self.preferences, Unset):
            preferences = self.preferences.to_dict()

        quiet_hours: dict[str, Any] | Unset = UNSET
        if not isinstance(self.quiet_hours, Unset):
            quiet_hours = self.quiet_hours.to_dict()

        timezone = self.timezone

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "user_id": user_id,
            }
        )
        if addresses is not UNSET:
            field_dict["addresses"] = addresses
        if locale is not UNSET:
            field_dict["locale"] = locale
        if preferences is not UNSET:
            field_dict["preferences"] = preferences
        if quiet_hours is not UNSET:
            field_dict["quiet_hours"] = quiet_hours
        if timezone is not UNSET:
            field_dict["timezone"] = timezone

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.subscriber_addresses import SubscriberAddresses
        from ..models.subscriber_preferences import SubscriberPreferences
        from ..models.subscriber_quiet_hours import SubscriberQuietHours

        d = dict(src_dict)
        user_id = d.pop("user_id")

        _addresses = d.pop("addresses", UNSET)
        addresses: SubscriberAddresses | Unset
        if isinstance(_addresses, Unset):
            addresses = UNSET
        else:
            addresses = SubscriberAddresses.from_dict(_addresses)

        locale = d.pop("locale", UNSET)

        _preferences = d.pop("preferences", UNSET)
        preferences: SubscriberPreferences | Unset
        if isinstance(_preferences, Unset):
            preferences = UNSET
        else:
            preferences = SubscriberPreferences.from_dict(_preferences)

        _quiet_hours = d.pop("quiet_hours", UNSET)
        quiet_hours: SubscriberQuietHours | Unset
        if isinstance(_quiet_hours, Unset):
            quiet_hours = UNSET
        else:
            quiet_hours = SubscriberQuietHours.from_dict(_quiet_hours)

        timezone = d.pop("timezone", UNSET)

        subscriber_line = cls(
            user_id=user_id,
            addresses=addresses,
            locale=locale,
            preferences=preferences,
            quiet_hours=quiet_hours,
            timezone=timezone,
        )

        return subscriber_line
