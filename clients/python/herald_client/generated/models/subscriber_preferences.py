from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.subscriber_preferences_channel_types import (
        SubscriberPreferencesChannelTypes,
    )
    from ..models.subscriber_preferences_topics import SubscriberPreferencesTopics


T = TypeVar("T", bound="SubscriberPreferences")


@_attrs_define
class SubscriberPreferences:
    """Opt-outs (`false`); a missing entry is opted in.

    Attributes:
        channel_types (SubscriberPreferencesChannelTypes | Unset):
        topics (SubscriberPreferencesTopics | Unset):
    """

    channel_types: SubscriberPreferencesChannelTypes | Unset = UNSET
    topics: SubscriberPreferencesTopics | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        channel_types: dict[str, Any] | Unset = UNSET
        if not isinstance(self.channel_types, Unset):
            channel_types = self.channel_types.to_dict()

        topics: dict[str, Any] | Unset = UNSET
        if not isinstance(self.topics, Unset):
            topics = self.topics.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if channel_types is not UNSET:
            field_dict["channel_types"] = channel_types
        if topics is not UNSET:
            field_dict["topics"] = topics

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.subscriber_preferences_channel_types import (
            SubscriberPreferencesChannelTypes,
        )
        from ..models.subscriber_preferences_topics import SubscriberPreferencesTopics

        d = dict(src_dict)
        _channel_types = d.pop("channel_types", UNSET)
        channel_types: SubscriberPreferencesChannelTypes | Unset
        if isinstance(_channel_types, Unset):
            channel_types = UNSET
        else:
            channel_types = SubscriberPreferencesChannelTypes.from_dict(_channel_types)

        _topics = d.pop("topics", UNSET)
        topics: SubscriberPreferencesTopics | Unset
        if isinstance(_topics, Unset):
            topics = UNSET
        else:
            topics = SubscriberPreferencesTopics.from_dict(_topics)

        subscriber_preferences = cls(
            channel_types=channel_types,
            topics=topics,
        )

        return subscriber_preferences
