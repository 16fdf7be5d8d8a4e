from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.subscriber_addresses import SubscriberAddresses
    from ..models.subscriber_preferences import SubscriberPreferences
    from ..models.subscriber_quiet_hours import SubscriberQuietHours


T = TypeVar("T", bound="SubscriberBody")


@_attrs_define
class SubscriberBody:
    """A subscriber's profile (`PUT /v1/subscribers/{user_id}`, and a line of
    `POST /v1/subscribers:bulk` with its `user_id`). Every field is
    optional; unknown fields are refused.

        Attributes:
            addresses (SubscriberAddresses | Unset): Where a user is reached, per channel type.
            locale (None | str | Unset):
            preferences (SubscriberPreferences | Unset): Opt-outs (`false`); a missing entry is opted in.
            quiet_hours (None | SubscriberQuietHours | Unset):
            timezone (None | str | Unset): IANA time zone; the user's quiet hours follow it.
    """

    addresses: SubscriberAddresses | Unset = UNSET
    locale: None | str | Unset = UNSET
    preferences: SubscriberPreferences | Unset = UNSET
    quiet_hours: None | SubscriberQuietHours | Unset = UNSET
    timezone: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.subscriber_quiet_hours import SubscriberQuietHours

        addresses: dict[str, Any] | Unset = UNSET
        if not isinstance(self.addresses, Unset):
            addresses = self.addresses.to_dict()

        locale: None | str | Unset
        if isinstance(self.locale, Unset):
            locale = UNSET
        else:
            locale = self.locale

        preferences: dict[str, Any] | Unset = UNSET
        if not isinstance(self.preferences, Unset):
            preferences = self.preferences.to_dict()

        quiet_hours: dict[str, Any] | None | Unset
        if isinstance(self.quiet_hours, Unset):
            quiet_hours = UNSET
        elif isinstance(self.quiet_hours, SubscriberQuietHours):
            quiet_hours = self.quiet_hours.to_dict()
        else:
            quiet_hours = self.quiet_hours

        timezone: None | str | Unset
        if isinstance(self.timezone, Unset):
            timezone = UNSET
        else:
            timezone = self.timezone

        field_dict: dict[str, Any] = {}

        field_dict.update({})
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
        _addresses = d.pop("addresses", UNSET)
        addresses: SubscriberAddresses | Unset
        if isinstance(_addresses, Unset):
            addresses = UNSET
        else:
            addresses = SubscriberAddresses.from_dict(_addresses)

        def _parse_locale(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        locale = _parse_locale(d.pop("locale", UNSET))

        _preferences = d.pop("preferences", UNSET)
        preferences: SubscriberPreferences | Unset
        if isinstance(_preferences, Unset):
            preferences = UNSET
        else:
            preferences = SubscriberPreferences.from_dict(_preferences)

        def _parse_quiet_hours(data: object) -> None | SubscriberQuietHours | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                quiet_hours_type_1 = SubscriberQuietHours.from_dict(data)

                return quiet_hours_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubscriberQuietHours | Unset, data)

        quiet_hours = _parse_quiet_hours(d.pop("quiet_hours", UNSET))

        def _parse_timezone(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        timezone = _parse_timezone(d.pop("timezone", UNSET))

        subscriber_body = cls(
            addresses=addresses,
            locale=locale,
            preferences=preferences,
            quiet_hours=quiet_hours,
            timezone=timezone,
        )

        return subscriber_body
