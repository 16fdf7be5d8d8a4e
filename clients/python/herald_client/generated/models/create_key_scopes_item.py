from typing import Literal

CreateKeyScopesItem = Literal["admin", "campaign", "metrics", "read", "write"]

CREATE_KEY_SCOPES_ITEM_VALUES: set[CreateKeyScopesItem] = {
    "admin",
    "campaign",
    "metrics",
    "read",
    "write",
}


def check_create_key_scopes_item(value: str) -> CreateKeyScopesItem:
    if value in CREATE_KEY_SCOPES_ITEM_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {CREATE_KEY_SCOPES_ITEM_VALUES!r}"
    )
