from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.task_json import TaskJson
from ...types import Response


def _get_kwargs(
    id: int,
    task_id: int,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/rules/{id}/tasks/{task_id}:cancel".format(
            id=quote(str(id), safe=""),
            task_id=quote(str(task_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | TaskJson | None:
    if response.status_code == 200:
        response_200 = TaskJson.from_dict(response.json())

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
) -> Response[ErrorResponse | TaskJson]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: int,
    task_id: int,
    *,
    client: AuthenticatedClient,
) -> Response[ErrorResponse | TaskJson]:
    """Cancel one pending task of a rule (the rule plans on; 409 task_not_pending once started)

     Needs: a key with the `campaign` scope.

    Args:
        id (int):
        task_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | TaskJson]
    """

    kwargs = _get_kwargs(
        id=id,
        task_id=task_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: int,
    task_id: int,
    *,
    client: AuthenticatedClient,
) -> ErrorResponse | TaskJson | None:
    """Cancel one pending task of a rule (the rule plans on; 409 task_not_pending once started)

     Needs: a key with the `campaign` scope.

    Args:
        id (int):
        task_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | TaskJson
    """

    return sync_detailed(
        id=id,
        task_id=task_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    id: int,
    task_id: int,
    *,
    client: AuthenticatedClient,
) -> Response[ErrorResponse | TaskJson]:
    """Cancel one pending task of a rule (the rule plans on; 409 task_not_pending once started)

     Needs: a key with the `campaign` scope.

    Args:
        id (int):
        task_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | TaskJson]
    """

    kwargs = _get_kwargs(
        id=id,
        task_id=task_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: int,
    task_id: int,
    *,
    client: AuthenticatedClient,
) -> ErrorResponse | TaskJson | None:
    """Cancel one pending task of a rule (the rule plans on; 409 task_not_pending once started)

     Needs: a key with the `campaign` scope.

    Args:
        id (int):
        task_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | TaskJson
    """

    return (
        await asyncio_detailed(
            id=id,
            task_id=task_id,
            client=client,
        )
    ).parsed
