from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.grants_body import GrantsBody
from ...models.grants_recorded_json import GrantsRecordedJson
from ...types import Response


def _get_kwargs(
    user_id: str,
    *,
    body: GrantsBody,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/subscribers/{user_id}/grants".format(
            user_id=quote(str(user_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | GrantsRecordedJson | None:
    if response.status_code == 200:
        response_200 = GrantsRecordedJson.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = GrantsRecordedJson.from_dict(response.json())

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
) -> Response[ErrorResponse | GrantsRecordedJson]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    user_id: str,
    *,
    client: AuthenticatedClient,
    body: GrantsBody,
) -> Response[ErrorResponse | GrantsRecordedJson]:
    """Record the mini-program subscribe grants of one tap on "Allow"

     Needs: a key with the `write` scope.

    Args:
        user_id (str):
        body (GrantsBody): `POST /v1/subscribers/{user_id}/grants`: what one tap on "Allow" gave.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | GrantsRecordedJson]
    """

    kwargs = _get_kwargs(
        user_id=user_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    user_id: str,
    *,
    client: AuthenticatedClient,
    body: GrantsBody,
) -> ErrorResponse | GrantsRecordedJson | None:
    """Record the mini-program subscribe grants of one tap on "Allow"

     Needs: a key with the `write` scope.

    Args:
        user_id (str):
        body (GrantsBody): `POST /v1/subscribers/{user_id}/grants`: what one tap on "Allow" gave.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | GrantsRecordedJson
    """

    return sync_detailed(
        user_id=user_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    user_id: str,
    *,
    client: AuthenticatedClient,
    body: GrantsBody,
) -> Response[ErrorResponse | GrantsRecordedJson]:
    """Record the mini-program subscribe grants of one tap on "Allow"

     Needs: a key with the `write` scope.

    Args:
        user_id (str):
        body (GrantsBody): `POST /v1/subscribers/{user_id}/grants`: what one tap on "Allow" gave.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | GrantsRecordedJson]
    """

    kwargs = _get_kwargs(
        user_id=user_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    user_id: str,
    *,
    client: AuthenticatedClient,
    body: GrantsBody,
) -> ErrorResponse | GrantsRecordedJson | None:
    """Record the mini-program subscribe grants of one tap on "Allow"

     Needs: a key with the `write` scope.

    Args:
        user_id (str):
        body (GrantsBody): `POST /v1/subscribers/{user_id}/grants`: what one tap on "Allow" gave.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | GrantsRecordedJson
    """

    return (
        await asyncio_detailed(
            user_id=user_id,
            client=client,
            body=body,
        )
    ).parsed
