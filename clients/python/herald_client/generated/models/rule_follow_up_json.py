from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.rule_follow_up_json_message import RuleFollowUpJsonMessage


T = TypeVar("T", bound="RuleFollowUpJson")


@_attrs_define
class RuleFollowUpJson:
    """A rule version's `follow_up`, as given.

    Attributes:
        after_secs (int):
        message (RuleFollowUpJsonMessage):
        only (str): `unread`.
    """

    after_secs: int
    message: RuleFollowUpJsonMessage
    only: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        after_secs = self.after_secs

        message = self.message.to_dict()

        only = self.only

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "after_secs": after_secs,
                "message": message,
                "only": only,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.rule_follow_up_json_message import RuleFollowUpJsonMessage

        d = dict(src_dict)
        after_secs = d.pop("after_secs")

        message = RuleFollowUpJsonMessage.from_dict(d.pop("message"))

        only = d.pop("only")

        rule_follow_up_json = cls(
            after_secs=after_secs,
            message=message,
            only=only,
        )

        rule_follow_up_json.additional_properties = d
        return rule_follow_up_json

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
