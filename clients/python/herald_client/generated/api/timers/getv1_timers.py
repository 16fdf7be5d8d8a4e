import datetime
from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.getv_1_timers_kind import Getv1TimersKind
from ...models.getv_1_timers_order import Getv1TimersOrder
from ...models.getv_1_timers_state import Getv1TimersState
from ...models.timer_list import TimerList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    state: Getv1TimersState | Unset = UNSET,
    channel: str | Unset = UNSET,
    recipient: str | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
    kind: Getv1TimersKind | Unset = UNSET,
    due_after: datetime.datetime | Unset = UNSET,
    due_before: datetime.datetime | Unset = UNSET,
    order: Getv1TimersOrder | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_state: str | Unset = UNSET
    if not isinstance(state, Unset):
        json_state = state

    params["state"] = json_state

    params["channel"] = channel

    params["recipient"] = recipient

    params["idempotency_key"] = idempotency_key

    json_kind: str | Unset = UNSET
    if not isinstance(kind, Unset):
        json_kind = kind

    params["kind"] = json_kind

    json_due_after: str | Unset = UNSET
    if not isinstance(due_after, Unset):
        json_due_after = due_after.isoformat()
    params["due_after"] = json_due_after

    json_due_before: str | Unset = UNSET
    if not isinstance(due_before, Unset):
        json_due_before = due_before.isoformat()
    params["due_before"] = json_due_before

    json_order: str | Unset = UNSET
    if not isinstance(order, Unset):
        json_order = order

    params["order"] = json_order

    params["cursor"] = cursor

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/timers",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | TimerList | None:
    if response.status_code == 200:
        response_200 = TimerList.from_dict(response.json())

        return response_200

    if 400 <= response.status_code <= 499:
        response_4xx = ErrorResponse.from_dict(response.json())

        return response_4xx

    if 500 <= response.status_code <= 599:
        response_5xx = ErrorResponse.from_dict(response.json())

        return response_5xx

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ErrorResponse | TimerList]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    state: Getv1TimersState | Unset = UNSET,
    channel: str | Unset = UNSET,
    recipient: str | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
    kind: Getv1TimersKind | Unset = UNSET,
    due_after: datetime.datetime | Unset = UNSET,
    due_before: datetime.datetime | Unset = UNSET,
    order: Getv1TimersOrder | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Response[ErrorResponse | TimerList]:
    """Search the tenant's timers, by due time

     Needs: a key with the `read` scope.

    Args:
        state (Getv1TimersState | Unset):
        channel (str | Unset):
        recipient (str | Unset):
        idempotency_key (str | Unset):
        kind (Getv1TimersKind | Unset):
        due_after (datetime.datetime | Unset):
        due_before (datetime.datetime | Unset):
        order (Getv1TimersOrder | Unset):
        cursor (str | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | TimerList]
    """

    kwargs = _get_kwargs(
        state=state,
        channel=channel,
        recipient=recipient,
        idempotency_key=idempotency_key,
        kind=kind,
        due_after=due_after,
        due_before=due_before,
        order=order,
        cursor=cursor,
        limit=limit,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    state: Getv1TimersState | Unset = UNSET,
    channel: str | Unset = UNSET,
    recipient: str | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
    kind: Getv1TimersKind | Unset = UNSET,
    due_after: datetime.datetime | Unset = UNSET,
    due_before: datetime.datetime | Unset = UNSET,
    order: Getv1TimersOrder | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> ErrorResponse | TimerList | None:
    """Search the tenant's timers, by due time

     Needs: a key with the `read` scope.

    Args:
        state (Getv1TimersState | Unset):
        channel (str | Unset):
        recipient (str | Unset):
        idempotency_key (str | Unset):
        kind (Getv1TimersKind | Unset):
        due_after (datetime.datetime | Unset):
        due_before (datetime.datetime | Unset):
        order (Getv1TimersOrder | Unset):
        cursor (str | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | TimerList
    """

    return sync_detailed(
        client=client,
        state=state,
        channel=channel,
        recipient=recipient,
        idempotency_key=idempotency_key,
        kind=kind,
        due_after=due_after,
        due_before=due_before,
        order=order,
        cursor=cursor,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    state: Getv1TimersState | Unset = UNSET,
    channel: str | Unset = UNSET,
    recipient: str | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
    kind: Getv1TimersKind | Unset = UNSET,
    due_after: datetime.datetime | Unset = UNSET,
    due_before: datetime.datetime | Unset = UNSET,
    order: Getv1TimersOrder | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Response[ErrorResponse | TimerList]:
    """Search the tenant's timers, by due time

     Needs: a key with the `read` scope.

    Args:
        state (Getv1TimersState | Unset):
        channel (str | Unset):
        recipient (str | Unset):
        idempotency_key (str | Unset):
        kind (Getv1TimersKind | Unset):
        due_after (datetime.datetime | Unset):
        due_before (datetime.datetime | Unset):
        order (Getv1TimersOrder | Unset):
        cursor (str | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | TimerList]
    """

    kwargs = _get_kwargs(
        state=state,
        channel=channel,
        recipient=recipient,
        idempotency_key=idempotency_key,
        kind=kind,
        due_after=due_after,
        due_before=due_before,
        order=order,
        cursor=cursor,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    state: Getv1TimersState | Unset = UNSET,
    channel: str | Unset = UNSET,
    recipient: str | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
    kind: Getv1TimersKind | Unset = UNSET,
    due_after: datetime.datetime | Unset = UNSET,
    due_before: datetime.datetime | Unset = UNSET,
    order: Getv1TimersOrder | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> ErrorResponse | TimerList | None:
    """Search the tenant's timers, by due time

     Needs: a key with the `read` scope.

    Args:
        state (Getv1TimersState | Unset):
        channel (str | Unset):
        recipient (str | Unset):
        idempotency_key (str | Unset):
        kind (Getv1TimersKind | Unset):
        due_after (datetime.datetime | Unset):
        due_before (datetime.datetime | Unset):
        order (Getv1TimersOrder | Unset):
        cursor (str | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | TimerList
    """

    return (
        await asyncio_detailed(
            client=client,
            state=state,
            channel=channel,
            recipient=recipient,
            idempotency_key=idempotency_key,
            kind=kind,
            due_after=due_after,
            due_before=due_before,
            order=order,
            cursor=cursor,
            limit=limit,
        )
    ).parsed
