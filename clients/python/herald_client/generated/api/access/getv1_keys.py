from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.key_list import KeyList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    tenant: str | Unset = UNSET,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["tenant"] = tenant

    params["after"] = after

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/keys",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | KeyList | None:
    if response.status_code == 200:
        response_200 = KeyList.from_dict(response.json())

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
) -> Response[ErrorResponse | KeyList]:
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
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Response[ErrorResponse | KeyList]:
    """API keys by id

     Needs: a key with the `admin` scope.

    Args:
        tenant (str | Unset):
        after (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | KeyList]
    """

    kwargs = _get_kwargs(
        tenant=tenant,
        after=after,
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
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> ErrorResponse | KeyList | None:
    """API keys by id

     Needs: a key with the `admin` scope.

    Args:
        tenant (str | Unset):
        after (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | KeyList
    """

    return sync_detailed(
        client=client,
        tenant=tenant,
        after=after,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    tenant: str | Unset = UNSET,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Response[ErrorResponse | KeyList]:
    """API keys by id

     Needs: a key with the `admin` scope.

    Args:
        tenant (str | Unset):
        after (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | KeyList]
    """

    kwargs = _get_kwargs(
        tenant=tenant,
        after=after,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    tenant: str | Unset = UNSET,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> ErrorResponse | KeyList | None:
    """API keys by id

     Needs: a key with the `admin` scope.

    Args:
        tenant (str | Unset):
        after (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | KeyList
    """

    return (
        await asyncio_detailed(
            client=client,
            tenant=tenant,
            after=after,
            limit=limit,
        )
    ).parsed
