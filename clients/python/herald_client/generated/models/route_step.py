from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.step_on_name import StepOnName, check_step_on_name
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.route_step_message_type_0 import RouteStepMessageType0
    from ..models.template_use import TemplateUse


T = TypeVar("T", bound="RouteStep")


@_attrs_define
class RouteStep:
    """One step of a `route`.

    Attributes:
        after (None | str | Unset): With `unread`: how long after the step before was delivered to wait
            for its `read` receipt, `1s` to `30days` (`"30m"`). Example: 30m.
        channel (None | str | Unset): A configured channel; left out, the channel `channel_type` routes to
            (as a reminder of that type).
        channel_type (None | str | Unset): Which of the subscriber's addresses: `app`, `email`, `sms`, `wechat`
            or `wecom`; left out, the channel's own (required for webhook and
            log channels).
        message (None | RouteStepMessageType0 | Unset): Jobs and rules: this step's own message (in its channel
            provider's
            shape) instead of the campaign's; not on the first step.
        on (list[StepOnName] | Unset): The outcomes of the step before that lead to this one (not on the
            first step; required on the others).
        template (None | TemplateUse | Unset):
    """

    after: None | str | Unset = UNSET
    channel: None | str | Unset = UNSET
    channel_type: None | str | Unset = UNSET
    message: None | RouteStepMessageType0 | Unset = UNSET
    on: list[StepOnName] | Unset = UNSET
    template: None | TemplateUse | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.route_step_message_type_0 import RouteStepMessageType0
        from ..models.template_use import TemplateUse

        after: None | str | Unset
        if isinstance(self.after, Unset):
            after = UNSET
        else:
            after = self.after

        channel: None | str | Unset
        if isinstance(self.channel, Unset):
            channel = UNSET
        else:
            channel = self.channel

        channel_type: None | str | Unset
        if isinstance(self.channel_type, Unset):
            channel_type = UNSET
        else:
            channel_type = self.channel_type

        message: dict[str, Any] | None | Unset
        if isinstance(self.message, Unset):
            message = UNSET
        elif isinstance(self.message, RouteStepMessageType0):
            message = self.message.to_dict()
        else:
            message = self.message

        on: list[str] | Unset = UNSET
        if not isinstance(self.on, Unset):
            on = []
            for on_item_data in self.on:
                on_item: str = on_item_data
                on.append(on_item)

        template: dict[str, Any] | None | Unset
        if isinstance(self.template, Unset):
            template = UNSET
        elif isinstance(self.template, TemplateUse):
            template = self.template.to_dict()
        else:
            template = self.template

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if after is not UNSET:
            field_dict["after"] = after
        if channel is not UNSET:
            field_dict["channel"] = channel
        if channel_type is not UNSET:
            field_dict["channel_type"] = channel_type
        if message is not UNSET:
            field_dict["message"] = message
        if on is not UNSET:
            field_dict["on"] = on
        if template is not UNSET:
            field_dict["template"] = template

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.route_step_message_type_0 import RouteStepMessageType0
        from ..models.template_use import TemplateUse

        d = dict(src_dict)

        def _parse_after(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        after = _parse_after(d.pop("after", UNSET))

        def _parse_channel(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        channel = _parse_channel(d.pop("channel", UNSET))

        def _parse_channel_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        channel_type = _parse_channel_type(d.pop("channel_type", UNSET))

        def _parse_message(data: object) -> None | RouteStepMessageType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                message_type_0 = RouteStepMessageType0.from_dict(data)

                return message_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RouteStepMessageType0 | Unset, data)

        message = _parse_message(d.pop("message", UNSET))

        _on = d.pop("on", UNSET)
        on: list[StepOnName] | Unset = UNSET
        if _on is not UNSET:
            on = []
            for on_item_data in _on:
                on_item = check_step_on_name(on_item_data)

                on.append(on_item)

        def _parse_template(data: object) -> None | TemplateUse | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                template_type_1 = TemplateUse.from_dict(data)

                return template_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TemplateUse | Unset, data)

        template = _parse_template(d.pop("template", UNSET))

        route_step = cls(
            after=after,
            channel=channel,
            channel_type=channel_type,
            message=message,
            on=on,
            template=template,
        )

        return route_step
