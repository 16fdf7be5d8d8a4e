from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.subscriber_addresses import SubscriberAddresses
    from ..models.subscriber_preferences import SubscriberPreferences
    from ..models.subscriber_quiet_hours import SubscriberQuietHours


T = TypeVar("T", bound="SubscriberJson")


@_attrs_define
class SubscriberJson:
    """A directory entry: the profile with its version and times.

    Attributes:
        created_at (str):
        updated_at (str):
        user_id (str):
        version (int):
        addresses (None | SubscriberAddresses | Unset):
        locale (None | str | Unset):
        preferences (None | SubscriberPreferences | Unset):
        quiet_hours (None | SubscriberQuietHours | Unset):
        timezone (None | str | Unset):
    """

    created_at: str
    updated_at: str
    user_id: str
    version: int
    addresses: None | SubscriberAddresses | Unset = UNSET
    locale: None | str | Unset = UNSET
    preferences: None | SubscriberPreferences | Unset = UNSET
    quiet_hours: None | SubscriberQuietHours | Unset = UNSET
    timezone: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.subscriber_addresses import SubscriberAddresses
        from ..models.subscriber_preferences import SubscriberPreferences
        from ..models.subscriber_quiet_hours import SubscriberQuietHours

        created_at = self.created_at

        updated_at = self.updated_at

        user_id = self.user_id

        version = self.version

        addresses: dict[str, Any] | None | Unset
        if isinstance(self.addresses, Unset):
            addresses = UNSET
        elif isinstance(self.addresses, SubscriberAddresses):
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
        elif isinstance(self.preferences, SubscriberPreferences):
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
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "updated_at": updated_at,
                "user_id": user_id,
                "version": version,
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
        created_at = d.pop("created_at")

        updated_at = d.pop("updated_at")

        user_id = d.pop("user_id")

        version = d.pop("version")

        def _parse_addresses(data: object) -> None | SubscriberAddresses | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                addresses_type_1 = SubscriberAddresses.from_dict(data)

                return addresses_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubscriberAddresses | Unset, data)

        addresses = _parse_addresses(d.pop("addresses", UNSET))

        def _parse_locale(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        locale = _parse_locale(d.pop("locale", UNSET))

        def _parse_preferences(data: object) -> None | SubscriberPreferences | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                preferences_type_1 = SubscriberPreferences.from_dict(data)

                return preferences_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubscriberPreferences | Unset, data)

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

        subscriber_json = cls(
            created_at=created_at,
            updated_at=updated_at,
            user_id=user_id,
            version=version,
            addresses=addresses,
            locale=locale,
            preferences=preferences,
            quiet_hours=quiet_hours,
            timezone=timezone,
        )

        subscriber_json.additional_properties = d
        return subscriber_json

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
