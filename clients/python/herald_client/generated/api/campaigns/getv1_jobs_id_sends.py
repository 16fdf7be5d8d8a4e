from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.getv_1_jobs_id_sends_outcome import (
    Getv1JobsIdSendsOutcome,
)
from ...models.send_list import SendList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: int,
    *,
    start: int | Unset = UNSET,
    end: int | Unset = UNSET,
    outcome: Getv1JobsIdSendsOutcome | Unset = UNSET,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    recipient: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["start"] = start

    params["end"] = end

    json_outcome: str | Unset = UNSET
    if not isinstance(outcome, Unset):
        json_outcome = outcome

    params["outcome"] = json_outcome

    params["after"] = after

    params["limit"] = limit

    params["recipient"] = recipient

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/jobs/{id}/sends".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | SendList | None:
    if response.status_code == 200:
        response_200 = SendList.from_dict(response.json())

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
) -> Response[ErrorResponse | SendList]:
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
    start: int | Unset = UNSET,
    end: int | Unset = UNSET,
    outcome: Getv1JobsIdSendsOutcome | Unset = UNSET,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    recipient: str | Unset = UNSET,
) -> Response[ErrorResponse | SendList]:
    """A job's sends in a range of recipient indexes, or those with one outcome

     Needs: a key with the `read` scope.

    Args:
        id (int):
        start (int | Unset):
        end (int | Unset):
        outcome (Getv1JobsIdSendsOutcome | Unset):
        after (int | Unset):
        limit (int | Unset):
        recipient (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | SendList]
    """

    kwargs = _get_kwargs(
        id=id,
        start=start,
        end=end,
        outcome=outcome,
        after=after,
        limit=limit,
        recipient=recipient,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: int,
    *,
    client: AuthenticatedClient,
    start: int | Unset = UNSET,
    end: int | Unset = UNSET,
    outcome: Getv1JobsIdSendsOutcome | Unset = UNSET,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    recipient: str | Unset = UNSET,
) -> ErrorResponse | SendList | None:
    """A job's sends in a range of recipient indexes, or those with one outcome

     Needs: a key with the `read` scope.

    Args:
        id (int):
        start (int | Unset):
        end (int | Unset):
        outcome (Getv1JobsIdSendsOutcome | Unset):
        after (int | Unset):
        limit (int | Unset):
        recipient (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | SendList
    """

    return sync_detailed(
        id=id,
        client=client,
        start=start,
        end=end,
        outcome=outcome,
        after=after,
        limit=limit,
        recipient=recipient,
    ).parsed


async def asyncio_detailed(
    id: int,
    *,
    client: AuthenticatedClient,
    start: int | Unset = UNSET,
    end: int | Unset = UNSET,
    outcome: Getv1JobsIdSendsOutcome | Unset = UNSET,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    recipient: str | Unset = UNSET,
) -> Response[ErrorResponse | SendList]:
    """A job's sends in a range of recipient indexes, or those with one outcome

     Needs: a key with the `read` scope.

    Args:
        id (int):
        start (int | Unset):
        end (int | Unset):
        outcome (Getv1JobsIdSendsOutcome | Unset):
        after (int | Unset):
        limit (int | Unset):
        recipient (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | SendList]
    """

    kwargs = _get_kwargs(
        id=id,
        start=start,
        end=end,
        outcome=outcome,
        after=after,
        limit=limit,
        recipient=recipient,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: int,
    *,
    client: AuthenticatedClient,
    start: int | Unset = UNSET,
    end: int | Unset = UNSET,
    outcome: Getv1JobsIdSendsOutcome | Unset = UNSET,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    recipient: str | Unset = UNSET,
) -> ErrorResponse | SendList | None:
    """A job's sends in a range of recipient indexes, or those with one outcome

     Needs: a key with the `read` scope.

    Args:
        id (int):
        start (int | Unset):
        end (int | Unset):
        outcome (Getv1JobsIdSendsOutcome | Unset):
        after (int | Unset):
        limit (int | Unset):
        recipient (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | SendList
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            start=start,
            end=end,
            outcome=outcome,
            after=after,
            limit=limit,
            recipient=recipient,
        )
    ).parsed
