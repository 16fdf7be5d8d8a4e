from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..models.follow_up_body_only import FollowUpBodyOnly, check_follow_up_body_only

if TYPE_CHECKING:
    from ..models.follow_up_body_message import FollowUpBodyMessage


T = TypeVar("T", bound="FollowUpBody")


@_attrs_define
class FollowUpBody:
    """`follow_up` of a job: `after_secs` after the job ends, `message` goes
    to the recipients it delivered to that sent no `read` receipt.

        Attributes:
            after_secs (int): 1 second to 30 days after the job ends.
            message (FollowUpBodyMessage):
            only (FollowUpBodyOnly): Who gets it: `unread` (the only choice).
    """

    after_secs: int
    message: FollowUpBodyMessage
    only: FollowUpBodyOnly

    def to_dict(self) -> dict[str, Any]:
        after_secs = self.after_secs

        message = self.message.to_dict()

        only: str = self.only

        field_dict: dict[str, Any] = {}

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
        from ..models.follow_up_body_message import FollowUpBodyMessage

        d = dict(src_dict)
        after_secs = d.pop("after_secs")

        message = FollowUpBodyMessage.from_dict(d.pop("message"))

        only = check_follow_up_body_only(d.pop("only"))

        follow_up_body = cls(
            after_secs=after_secs,
            message=message,
            only=only,
        )

        return follow_up_body
