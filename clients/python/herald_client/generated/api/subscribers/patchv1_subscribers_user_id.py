from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.subscriber_json import SubscriberJson
from ...models.subscriber_patch import SubscriberPatch
from ...types import Response


def _get_kwargs(
    user_id: str,
    *,
    body: SubscriberPatch,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "patch",
        "url": "/v1/subscribers/{user_id}".format(
            user_id=quote(str(user_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | SubscriberJson | None:
    if response.status_code == 200:
        response_200 = SubscriberJson.from_dict(response.json())

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
) -> Response[ErrorResponse | SubscriberJson]:
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
    body: SubscriberPatch,
) -> Response[ErrorResponse | SubscriberJson]:
    """Merge a JSON merge patch (RFC 7396) into a subscriber's profile

     Needs: a key with the `write` scope.

    Args:
        user_id (str):
        body (SubscriberPatch): `PATCH /v1/subscribers/{user_id}`: a JSON merge patch (RFC 7396)
            of the
            profile: `null` removes a field, an object merges into the stored one.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | SubscriberJson]
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
    body: SubscriberPatch,
) -> ErrorResponse | SubscriberJson | None:
    """Merge a JSON merge patch (RFC 7396) into a subscriber's profile

     Needs: a key with the `write` scope.

    Args:
        user_id (str):
        body (SubscriberPatch): `PATCH /v1/subscribers/{user_id}`: a JSON merge patch (RFC 7396)
            of the
            profile: `null` removes a field, an object merges into the stored one.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | SubscriberJson
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
    body: SubscriberPatch,
) -> Response[ErrorResponse | SubscriberJson]:
    """Merge a JSON merge patch (RFC 7396) into a subscriber's profile

     Needs: a key with the `write` scope.

    Args:
        user_id (str):
        body (SubscriberPatch): `PATCH /v1/subscribers/{user_id}`: a JSON merge patch (RFC 7396)
            of the
            profile: `null` removes a field, an object merges into the stored one.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | SubscriberJson]
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
    body: SubscriberPatch,
) -> ErrorResponse | SubscriberJson | None:
    """Merge a JSON merge patch (RFC 7396) into a subscriber's profile

     Needs: a key with the `write` scope.

    Args:
        user_id (str):
        body (SubscriberPatch): `PATCH /v1/subscribers/{user_id}`: a JSON merge patch (RFC 7396)
            of the
            profile: `null` removes a field, an object merges into the stored one.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | SubscriberJson
    """

    return (
        await asyncio_detailed(
            user_id=user_id,
            client=client,
            body=body,
        )
    ).parsed
