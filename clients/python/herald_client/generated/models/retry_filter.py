from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.retry_state import RetryState, check_retry_state
from ..types import UNSET, Unset

T = TypeVar("T", bound="RetryFilter")


@_attrs_define
class RetryFilter:
    """The body of `POST /v1/timers:retry`: which dead or failed timers.

    Attributes:
        channel (None | str | Unset):
        due_after (datetime.datetime | None | Unset):
        due_before (datetime.datetime | None | Unset):
        error (None | str | Unset): A prefix of `last_error`.
        limit (int | None | Unset): Default 10000.
        state (None | RetryState | Unset):
    """

    channel: None | str | Unset = UNSET
    due_after: datetime.datetime | None | Unset = UNSET
    due_before: datetime.datetime | None | Unset = UNSET
    error: None | str | Unset = UNSET
    limit: int | None | Unset = UNSET
    state: None | RetryState | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        channel: None | str | Unset
        if isinstance(self.channel, Unset):
            channel = UNSET
        else:
            channel = self.channel

        due_after: None | str | Unset
        if isinstance(self.due_after, Unset):
            due_after = UNSET
        elif isinstance(self.due_after, datetime.datetime):
            due_after = self.due_after.isoformat()
        else:
            due_after = self.due_after

        due_before: None | str | Unset
        if isinstance(self.due_before, Unset):
            due_before = UNSET
        elif isinstance(self.due_before, datetime.datetime):
            due_before = self.due_before.isoformat()
        else:
            due_before = self.due_before

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        limit: int | None | Unset
        if isinstance(self.limit, Unset):
            limit = UNSET
        else:
            limit = self.limit

        state: None | str | Unset
        if isinstance(self.state, Unset):
            state = UNSET
        elif isinstance(self.state, str):
            state = self.state
        else:
            state = self.state

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if channel is not UNSET:
            field_dict["channel"] = channel
        if due_after is not UNSET:
            field_dict["due_after"] = due_after
        if due_before is not UNSET:
            field_dict["due_before"] = due_before
        if error is not UNSET:
            field_dict["error"] = error
        if limit is not UNSET:
            field_dict["limit"] = limit
        if state is not UNSET:
            field_dict["state"] = state

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_channel(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        channel = _parse_channel(d.pop("channel", UNSET))

        def _parse_due_after(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                due_after_type_0 = datetime.datetime.fromisoformat(data)

                return due_after_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        due_after = _parse_due_after(d.pop("due_after", UNSET))

        def _parse_due_before(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                due_before_type_0 = datetime.datetime.fromisoformat(data)

                return due_before_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        due_before = _parse_due_before(d.pop("due_before", UNSET))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_limit(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        limit = _parse_limit(d.pop("limit", UNSET))

        def _parse_state(data: object) -> None | RetryState | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                state_type_1 = check_retry_state(data)

                return state_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RetryState | Unset, data)

        state = _parse_state(d.pop("state", UNSET))

        retry_filter = cls(
            channel=channel,
            due_after=due_after,
            due_before=due_before,
            error=error,
            limit=limit,
            state=state,
        )

        return retry_filter
