from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.job_list import JobList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    before: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    category: str | Unset = UNSET,
    name: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["before"] = before

    params["limit"] = limit

    params["category"] = category

    params["name"] = name

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/jobs",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | JobList | None:
    if response.status_code == 200:
        response_200 = JobList.from_dict(response.json())

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
) -> Response[ErrorResponse | JobList]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    before: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    category: str | Unset = UNSET,
    name: str | Unset = UNSET,
) -> Response[ErrorResponse | JobList]:
    """Jobs, newest first

     Needs: a key with the `read` scope.

    Args:
        before (int | Unset):
        limit (int | Unset):
        category (str | Unset):
        name (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | JobList]
    """

    kwargs = _get_kwargs(
        before=before,
        limit=limit,
        category=category,
        name=name,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    before: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    category: str | Unset = UNSET,
    name: str | Unset = UNSET,
) -> ErrorResponse | JobList | None:
    """Jobs, newest first

     Needs: a key with the `read` scope.

    Args:
        before (int | Unset):
        limit (int | Unset):
        category (str | Unset):
        name (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | JobList
    """

    return sync_detailed(
        client=client,
        before=before,
        limit=limit,
        category=category,
        name=name,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    before: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    category: str | Unset = UNSET,
    name: str | Unset = UNSET,
) -> Response[ErrorResponse | JobList]:
    """Jobs, newest first

     Needs: a key with the `read` scope.

    Args:
        before (int | Unset):
        limit (int | Unset):
        category (str | Unset):
        name (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | JobList]
    """

    kwargs = _get_kwargs(
        before=before,
        limit=limit,
        category=category,
        name=name,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    before: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    category: str | Unset = UNSET,
    name: str | Unset = UNSET,
) -> ErrorResponse | JobList | None:
    """Jobs, newest first

     Needs: a key with the `read` scope.

    Args:
        before (int | Unset):
        limit (int | Unset):
        category (str | Unset):
        name (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | JobList
    """

    return (
        await asyncio_detailed(
            client=client,
            before=before,
            limit=limit,
            category=category,
            name=name,
        )
    ).parsed
