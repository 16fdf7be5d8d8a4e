from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.subscriber_patch_addresses_type_0 import SubscriberPatchAddressesType0
    from ..models.subscriber_patch_preferences_type_0 import (
        SubscriberPatchPreferencesType0,
    )
    from ..models.subscriber_quiet_hours import SubscriberQuietHours


T = TypeVar("T", bound="SubscriberPatch")


@_attrs_define
class SubscriberPatch:
    """`PATCH /v1/subscribers/{user_id}`: a JSON merge patch (RFC 7396) of the
    profile: `null` removes a field, an object merges into the stored one.

        Attributes:
            addresses (None | SubscriberPatchAddressesType0 | Unset):
            locale (None | str | Unset):
            preferences (None | SubscriberPatchPreferencesType0 | Unset):
            quiet_hours (None | SubscriberQuietHours | Unset):
            timezone (None | str | Unset):
    """

    addresses: None | SubscriberPatchAddressesType0 | Unset = UNSET
    locale: None | str | Unset = UNSET
    preferences: None | SubscriberPatchPreferencesType0 | Unset = UNSET
    quiet_hours: None | SubscriberQuietHours | Unset = UNSET
    timezone: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.subscriber_patch_addresses_type_0 import (
            SubscriberPatchAddressesType0,
        )
        from ..models.subscriber_patch_preferences_type_0 import (
            SubscriberPatchPreferencesType0,
        )
        from ..models.subscriber_quiet_hours import SubscriberQuietHours

        addresses: dict[str, Any] | None | Unset
        if isinstance(self.addresses, Unset):
            addresses = UNSET
        elif isinstance(self.addresses, SubscriberPatchAddressesType0):
            addresses = self.addresses.to_dict()
        else:
            addresses = self.addresses

        locale: None | str | Unset
        if isinstance(self.locale, Unset):
            locale = UNSET
        else:
            locale = self.locale

        preferences: dict[str, Any] | None | Unset
        if isinstance(self.preferences, Unset):
            preferences = UNSET
        elif isinstance(self.preferences, SubscriberPatchPreferencesType0):
            preferences = self.preferences.to_dict()
        else:
            preferences = self.preferences

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
        from ..models.subscriber_patch_addresses_type_0 import (
            SubscriberPatchAddressesType0,
        )
        from ..models.subscriber_patch_preferences_type_0 import (
            SubscriberPatchPreferencesType0,
        )
        from ..models.subscriber_quiet_hours import SubscriberQuietHours

        d = dict(src_dict)

        def _parse_addresses(
            data: object,
        ) -> None | SubscriberPatchAddressesType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                addresses_type_0 = SubscriberPatchAddressesType0.from_dict(data)

                return addresses_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubscriberPatchAddressesType0 | Unset, data)

        addresses = _parse_addresses(d.pop("addresses", UNSET))

        def _parse_locale(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        locale = _parse_locale(d.pop("locale", UNSET))

        def _parse_preferences(
            data: object,
        ) -> None | SubscriberPatchPreferencesType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                preferences_type_0 = SubscriberPatchPreferencesType0.from_dict(data)

                return preferences_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubscriberPatchPreferencesType0 | Unset, data)

        preferences = _parse_preferences(d.pop("preferences", UNSET))

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

        subscriber_patch = cls(
            addresses=addresses,
            locale=locale,
            preferences=preferences,
            quiet_hours=quiet_hours,
            timezone=timezone,
        )

        return subscriber_patch
