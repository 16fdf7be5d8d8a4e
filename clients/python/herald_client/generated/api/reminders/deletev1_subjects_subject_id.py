from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.subject_json import SubjectJson
from ...types import Response


def _get_kwargs(
    subject_id: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v1/subjects/{subject_id}".format(
            subject_id=quote(str(subject_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | SubjectJson | None:
    if response.status_code == 200:
        response_200 = SubjectJson.from_dict(response.json())

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
) -> Response[ErrorResponse | SubjectJson]:
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
) -> Response[ErrorResponse | SubjectJson]:
    """Delete a subject and cancel its reminders

     Needs: a key with the `write` scope.

    Args:
        subject_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | SubjectJson]
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
) -> ErrorResponse | SubjectJson | None:
    """Delete a subject and cancel its reminders

     Needs: a key with the `write` scope.

    Args:
        subject_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | SubjectJson
    """

    return sync_detailed(
        subject_id=subject_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    subject_id: str,
    *,
    client: AuthenticatedClient,
) -> Response[ErrorResponse | SubjectJson]:
    """Delete a subject and cancel its reminders

     Needs: a key with the `write` scope.

    Args:
        subject_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | SubjectJson]
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
) -> ErrorResponse | SubjectJson | None:
    """Delete a subject and cancel its reminders

     Needs: a key with the `write` scope.

    Args:
        subject_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | SubjectJson
    """

    return (
        await asyncio_detailed(
            subject_id=subject_id,
            client=client,
        )
    ).parsed
