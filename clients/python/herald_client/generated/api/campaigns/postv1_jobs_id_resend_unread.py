from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.job_json import JobJson
from ...models.resend_body import ResendBody
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: int,
    *,
    body: ResendBody | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/jobs/{id}:resend-unread".format(
            id=quote(str(id), safe=""),
        ),
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | JobJson | None:
    if response.status_code == 201:
        response_201 = JobJson.from_dict(response.json())

        return response_201

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
) -> Response[ErrorResponse | JobJson]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: int,
    *,
    client: AuthenticatedClient,
    body: ResendBody | Unset = UNSET,
) -> Response[ErrorResponse | JobJson]:
    """Start a new job now to an ended job's unread recipients (409 not_resendable, nobody_unread,
    resend_running)

     Needs: a key with the `campaign` scope.

    Args:
        id (int):
        body (ResendBody | Unset): The body of `POST /v1/jobs/{id}:resend-unread`, optional.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | JobJson]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: int,
    *,
    client: AuthenticatedClient,
    body: ResendBody | Unset = UNSET,
) -> ErrorResponse | JobJson | None:
    """Start a new job now to an ended job's unread recipients (409 not_resendable, nobody_unread,
    resend_running)

     Needs: a key with the `campaign` scope.

    Args:
        id (int):
        body (ResendBody | Unset): The body of `POST /v1/jobs/{id}:resend-unread`, optional.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | JobJson
    """

    return sync_detailed(
        id=id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    id: int,
    *,
    client: AuthenticatedClient,
    body: ResendBody | Unset = UNSET,
) -> Response[ErrorResponse | JobJson]:
    """Start a new job now to an ended job's unread recipients (409 not_resendable, nobody_unread,
    resend_running)

     Needs: a key with the `campaign` scope.

    Args:
        id (int):
        body (ResendBody | Unset): The body of `POST /v1/jobs/{id}:resend-unread`, optional.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | JobJson]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: int,
    *,
    client: AuthenticatedClient,
    body: ResendBody | Unset = UNSET,
) -> ErrorResponse | JobJson | None:
    """Start a new job now to an ended job's unread recipients (409 not_resendable, nobody_unread,
    resend_running)

     Needs: a key with the `campaign` scope.

    Args:
        id (int):
        body (ResendBody | Unset): The body of `POST /v1/jobs/{id}:resend-unread`, optional.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | JobJson
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            body=body,
        )
    ).parsed
