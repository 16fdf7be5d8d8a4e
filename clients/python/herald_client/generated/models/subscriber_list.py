from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.subscriber_json import SubscriberJson


T = TypeVar("T", bound="SubscriberList")


@_attrs_define
class SubscriberList:
    """
    Attributes:
        subscribers (list[SubscriberJson]):
        next_cursor (None | str | Unset):
    """

    subscribers: list[SubscriberJson]
    next_cursor: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        subscribers = []
        for subscribers_item_data in self.subscribers:
            subscribers_item = subscribers_item_data.to_dict()
            subscribers.append(subscribers_item)

        next_cursor: None | str | Unset
        if isinstance(self.next_cursor, Unset):
            next_cursor = UNSET
        else:
            next_cursor = self.next_cursor

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "subscribers": subscribers,
            }
        )
        if next_cursor is not UNSET:
            field_dict["next_cursor"] = next_cursor

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.subscriber_json import SubscriberJson

        d = dict(src_dict)
        subscribers = []
        _subscribers = d.pop("subscribers")
        for subscribers_item_data in _subscribers:
            subscribers_item = SubscriberJson.from_dict(subscribers_item_data)

            subscribers.append(subscribers_item)

        def _parse_next_cursor(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        next_cursor = _parse_next_cursor(d.pop("next_cursor", UNSET))

        subscriber_list = cls(
            subscribers=subscribers,
            next_cursor=next_cursor,
        )

        subscriber_list.additional_properties = d
        return subscriber_list

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
