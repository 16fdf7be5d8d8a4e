from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.subject_detail_json import SubjectDetailJson
from ...types import Response


def _get_kwargs(
    subject_id: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/subjects/{subject_id}".format(
            subject_id=quote(str(subject_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | SubjectDetailJson | None:
    if response.status_code == 200:
        response_200 = SubjectDetailJson.from_dict(response.json())

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
) -> Response[ErrorResponse | SubjectDetailJson]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    subject_id: str,
    *,
    client: AuthenticatedClient,
) -> Response[ErrorResponse | SubjectDetailJson]:
    """A subject with its subscriber counts and its reminders by channel type and lead

     Needs: a key with the `read` scope.

    Args:
        subject_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | SubjectDetailJson]
    """

    kwargs = _get_kwargs(
        subject_id=subject_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    subject_id: str,
    *,
    client: AuthenticatedClient,
) -> ErrorResponse | SubjectDetailJson | None:
    """A subject with its subscriber counts and its reminders by channel type and lead

     Needs: a key with the `read` scope.

    Args:
        subject_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | SubjectDetailJson
    """

    return sync_detailed(
        subject_id=subject_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    subject_id: str,
    *,
    client: AuthenticatedClient,
) -> Response[ErrorResponse | SubjectDetailJson]:
    """A subject with its subscriber counts and its reminders by channel type and lead

     Needs: a key with the `read` scope.

    Args:
        subject_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | SubjectDetailJson]
    """

    kwargs = _get_kwargs(
        subject_id=subject_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    subject_id: str,
    *,
    client: AuthenticatedClient,
) -> ErrorResponse | SubjectDetailJson | None:
    """A subject with its subscriber counts and its reminders by channel type and lead

     Needs: a key with the `read` scope.

    Args:
        subject_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | SubjectDetailJson
    """

    return (
        await asyncio_detailed(
            subject_id=subject_id,
            client=client,
        )
    ).parsed
