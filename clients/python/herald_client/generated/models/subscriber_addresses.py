from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.subscriber_addresses_webhook_type_0 import (
        SubscriberAddressesWebhookType0,
    )
    from ..models.subscriber_addresses_wechat import SubscriberAddressesWechat
    from ..models.subscriber_addresses_wechat_mini import SubscriberAddressesWechatMini
    from ..models.subscriber_service_token import SubscriberServiceToken


T = TypeVar("T", bound="SubscriberAddresses")


@_attrs_define
class SubscriberAddresses:
    """Where a user is reached, per channel type.

    Attributes:
        app (list[str | SubscriberServiceToken] | Unset): Up to 10 devices: a token, or `{"service", "token"}` for a
            token of
            a named push service (`fcm`, `huawei`, `honor`, `xiaomi`, `oppo`,
            `vivo`).
        email (None | str | Unset): RFC 5321 (`+` allowed).
        sms (None | str | Unset): E.164: `+` and up to 15 digits.
        webhook (None | SubscriberAddressesWebhookType0 | Unset):
        wechat (SubscriberAddressesWechat | Unset): The user's openid per WeChat channel name.
        wechat_mini (SubscriberAddressesWechatMini | Unset): The user's openid per WeChat mini-program channel name.
        wecom (None | str | Unset): WeCom user id.
    """

    app: list[str | SubscriberServiceToken] | Unset = UNSET
    email: None | str | Unset = UNSET
    sms: None | str | Unset = UNSET
    webhook: None | SubscriberAddressesWebhookType0 | Unset = UNSET
    wechat: SubscriberAddressesWechat | Unset = UNSET
    wechat_mini: SubscriberAddressesWechatMini | Unset = UNSET
    wecom: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.subscriber_addresses_webhook_type_0 import (
            SubscriberAddressesWebhookType0,
        )
        from ..models.subscriber_service_token import SubscriberServiceToken

        app: list[dict[str, Any] | str] | Unset = UNSET
        if not isinstance(self.app, Unset):
            app = []
            for app_item_data in self.app:
                app_item: dict[str, Any] | str
                if isinstance(app_item_data, SubscriberServiceToken):
                    app_item = app_item_data.to_dict()
                else:
                    app_item = app_item_data
                app.append(app_item)

        email: None | str | Unset
        if isinstance(self.email, Unset):
            email = UNSET
        else:
            email = self.email

        sms: None | str | Unset
        if isinstance(self.sms, Unset):
            sms = UNSET
        else:
            sms = self.sms

        webhook: dict[str, Any] | None | Unset
        if isinstance(self.webhook, Unset):
            webhook = UNSET
        elif isinstance(self.webhook, SubscriberAddressesWebhookType0):
            webhook = self.webhook.to_dict()
        else:
            webhook = self.webhook

        wechat: dict[str, Any] | Unset = UNSET
        if not isinstance(self.wechat, Unset):
            wechat = self.wechat.to_dict()

        wechat_mini: dict[str, Any] | Unset = UNSET
        if not isinstance(self.wechat_mini, Unset):
            wechat_mini = self.wechat_mini.to_dict()

        wecom: None | str | Unset
        if isinstance(self.wecom, Unset):
            wecom = UNSET
        else:
            wecom = self.wecom

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if app is not UNSET:
            field_dict["app"] = app
        if email is not UNSET:
            field_dict["email"] = email
        if sms is not UNSET:
            field_dict["sms"] = sms
        if webhook is not UNSET:
            field_dict["webhook"] = webhook
        if wechat is not UNSET:
            field_dict["wechat"] = wechat
        if wechat_mini is not UNSET:
            field_dict["wechat_mini"] = wechat_mini
        if wecom is not UNSET:
            field_dict["wecom"] = wecom

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.subscriber_addresses_webhook_type_0 import (
            SubscriberAddressesWebhookType0,
        )
        from ..models.subscriber_addresses_wechat import SubscriberAddressesWechat
        from ..models.subscriber_addresses_wechat_mini import (
            SubscriberAddressesWechatMini,
        )
        from ..models.subscriber_service_token import SubscriberServiceToken

        d = dict(src_dict)
        _app = d.pop("app", UNSET)
        app: list[str | SubscriberServiceToken] | Unset = UNSET
        if _app is not UNSET:
            app = []
            for app_item_data in _app:

                def _parse_app_item(data: object) -> str | SubscriberServiceToken:
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        componentsschemas_subscriber_device_type_1 = (
                            SubscriberServiceToken.from_dict(data)
                        )

                        return componentsschemas_subscriber_device_type_1
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    return cast(str | SubscriberServiceToken, data)

                app_item = _parse_app_item(app_item_data)

                app.append(app_item)

        def _parse_email(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        email = _parse_email(d.pop("email", UNSET))

        def _parse_sms(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        sms = _parse_sms(d.pop("sms", UNSET))

        def _parse_webhook(
            data: object,
        ) -> None | SubscriberAddressesWebhookType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                webhook_type_0 = SubscriberAddressesWebhookType0.from_dict(data)

                return webhook_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubscriberAddressesWebhookType0 | Unset, data)

        webhook = _parse_webhook(d.pop("webhook", UNSET))

        _wechat = d.pop("wechat", UNSET)
        wechat: SubscriberAddressesWechat | Unset
        if isinstance(_wechat, Unset):
            wechat = UNSET
        else:
            wechat = SubscriberAddressesWechat.from_dict(_wechat)

        _wechat_mini = d.pop("wechat_mini", UNSET)
        wechat_mini: SubscriberAddressesWechatMini | Unset
        if isinstance(_wechat_mini, Unset):
            wechat_mini = UNSET
        else:
            wechat_mini = SubscriberAddressesWechatMini.from_dict(_wechat_mini)

        def _parse_wecom(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        wecom = _parse_wecom(d.pop("wecom", UNSET))

        subscriber_addresses = cls(
            app=app,
            email=email,
            sms=sms,
            webhook=webhook,
            wechat=wechat,
            wechat_mini=wechat_mini,
            wecom=wecom,
        )

        return subscriber_addresses
