from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.retried import Retried
from ...models.retry_filter import RetryFilter
from ...types import Response


def _get_kwargs(
    *,
    body: RetryFilter,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/timers:retry",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | Retried | None:
    if response.status_code == 200:
        response_200 = Retried.from_dict(response.json())

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
) -> Response[ErrorResponse | Retried]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: RetryFilter,
) -> Response[ErrorResponse | Retried]:
    """Replay the dead or failed timers matching a filter

     Needs: a key with the `campaign` scope.

    Args:
        body (RetryFilter): The body of `POST /v1/timers:retry`: which dead or failed timers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | Retried]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: RetryFilter,
) -> ErrorResponse | Retried | None:
    """Replay the dead or failed timers matching a filter

     Needs: a key with the `campaign` scope.

    Args:
        body (RetryFilter): The body of `POST /v1/timers:retry`: which dead or failed timers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | Retried
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: RetryFilter,
) -> Response[ErrorResponse | Retried]:
    """Replay the dead or failed timers matching a filter

     Needs: a key with the `campaign` scope.

    Args:
        body (RetryFilter): The body of `POST /v1/timers:retry`: which dead or failed timers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | Retried]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: RetryFilter,
) -> ErrorResponse | Retried | None:
    """Replay the dead or failed timers matching a filter

     Needs: a key with the `campaign` scope.

    Args:
        body (RetryFilter): The body of `POST /v1/timers:retry`: which dead or failed timers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | Retried
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
