import datetime
from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.audit_list import AuditList
from ...models.error_response import ErrorResponse
from ...models.getv_1_audit_order import Getv1AuditOrder
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    tenant: str | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    key: str | Unset = UNSET,
    route: str | Unset = UNSET,
    status: str | Unset = UNSET,
    order: Getv1AuditOrder | Unset = UNSET,
    cursor: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["tenant"] = tenant

    json_since: str | Unset = UNSET
    if not isinstance(since, Unset):
        json_since = since.isoformat()
    params["since"] = json_since

    params["key"] = key

    params["route"] = route

    params["status"] = status

    json_order: str | Unset = UNSET
    if not isinstance(order, Unset):
        json_order = order

    params["order"] = json_order

    params["cursor"] = cursor

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/audit",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> AuditList | ErrorResponse | None:
    if response.status_code == 200:
        response_200 = AuditList.from_dict(response.json())

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
) -> Response[AuditList | ErrorResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    tenant: str | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    key: str | Unset = UNSET,
    route: str | Unset = UNSET,
    status: str | Unset = UNSET,
    order: Getv1AuditOrder | Unset = UNSET,
    cursor: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Response[AuditList | ErrorResponse]:
    """Who did what, newest first

     Needs: a key with the `read` scope.

    Args:
        tenant (str | Unset):
        since (datetime.datetime | Unset):
        key (str | Unset):
        route (str | Unset):
        status (str | Unset):
        order (Getv1AuditOrder | Unset):
        cursor (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AuditList | ErrorResponse]
    """

    kwargs = _get_kwargs(
        tenant=tenant,
        since=since,
        key=key,
        route=route,
        status=status,
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
    tenant: str | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    key: str | Unset = UNSET,
    route: str | Unset = UNSET,
    status: str | Unset = UNSET,
    order: Getv1AuditOrder | Unset = UNSET,
    cursor: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> AuditList | ErrorResponse | None:
    """Who did what, newest first

     Needs: a key with the `read` scope.

    Args:
        tenant (str | Unset):
        since (datetime.datetime | Unset):
        key (str | Unset):
        route (str | Unset):
        status (str | Unset):
        order (Getv1AuditOrder | Unset):
        cursor (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AuditList | ErrorResponse
    """

    return sync_detailed(
        client=client,
        tenant=tenant,
        since=since,
        key=key,
        route=route,
        status=status,
        order=order,
        cursor=cursor,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    tenant: str | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    key: str | Unset = UNSET,
    route: str | Unset = UNSET,
    status: str | Unset = UNSET,
    order: Getv1AuditOrder | Unset = UNSET,
    cursor: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Response[AuditList | ErrorResponse]:
    """Who did what, newest first

     Needs: a key with the `read` scope.

    Args:
        tenant (str | Unset):
        since (datetime.datetime | Unset):
        key (str | Unset):
        route (str | Unset):
        status (str | Unset):
        order (Getv1AuditOrder | Unset):
        cursor (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AuditList | ErrorResponse]
    """

    kwargs = _get_kwargs(
        tenant=tenant,
        since=since,
        key=key,
        route=route,
        status=status,
        order=order,
        cursor=cursor,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    tenant: str | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    key: str | Unset = UNSET,
    route: str | Unset = UNSET,
    status: str | Unset = UNSET,
    order: Getv1AuditOrder | Unset = UNSET,
    cursor: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> AuditList | ErrorResponse | None:
    """Who did what, newest first

     Needs: a key with the `read` scope.

    Args:
        tenant (str | Unset):
        since (datetime.datetime | Unset):
        key (str | Unset):
        route (str | Unset):
        status (str | Unset):
        order (Getv1AuditOrder | Unset):
        cursor (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AuditList | ErrorResponse
    """

    return (
        await asyncio_detailed(
            client=client,
            tenant=tenant,
            since=since,
            key=key,
            route=route,
            status=status,
            order=order,
            cursor=cursor,
            limit=limit,
        )
    ).parsed
