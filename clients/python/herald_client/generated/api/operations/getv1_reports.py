from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.getv_1_reports_group_by_item import (
    Getv1ReportsGroupByItem,
)
from ...models.report import Report
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    group_by: list[Getv1ReportsGroupByItem] | Unset = UNSET,
    from_: Any | Unset = UNSET,
    to: Any | Unset = UNSET,
    tenant: str | Unset = UNSET,
    channel: str | Unset = UNSET,
    outcome: str | Unset = UNSET,
    rule: int | Unset = UNSET,
    job: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_group_by: list[str] | Unset = UNSET
    if not isinstance(group_by, Unset):
        json_group_by = []
        for group_by_item_data in group_by:
            group_by_item: str = group_by_item_data
            json_group_by.append(group_by_item)

    params["group_by"] = json_group_by

    json_from_: Any | Unset
    if isinstance(from_, Unset):
        json_from_ = UNSET
    else:
        json_from_ = from_
    params["from"] = json_from_

    json_to: Any | Unset
    if isinstance(to, Unset):
        json_to = UNSET
    else:
        json_to = to
    params["to"] = json_to

    params["tenant"] = tenant

    params["channel"] = channel

    params["outcome"] = outcome

    params["rule"] = rule

    params["job"] = job

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/reports",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | Report | None:
    if response.status_code == 200:
        response_200 = Report.from_dict(response.json())

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
) -> Response[ErrorResponse | Report]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    group_by: list[Getv1ReportsGroupByItem] | Unset = UNSET,
    from_: Any | Unset = UNSET,
    to: Any | Unset = UNSET,
    tenant: str | Unset = UNSET,
    channel: str | Unset = UNSET,
    outcome: str | Unset = UNSET,
    rule: int | Unset = UNSET,
    job: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Response[ErrorResponse | Report]:
    """Stored delivery counts per day, tenant, channel, outcome, rule and job

     Needs: a key with the `read` scope.

    Args:
        group_by (list[Getv1ReportsGroupByItem] | Unset):
        from_ (Any | Unset):
        to (Any | Unset):
        tenant (str | Unset):
        channel (str | Unset):
        outcome (str | Unset):
        rule (int | Unset):
        job (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | Report]
    """

    kwargs = _get_kwargs(
        group_by=group_by,
        from_=from_,
        to=to,
        tenant=tenant,
        channel=channel,
        outcome=outcome,
        rule=rule,
        job=job,
        limit=limit,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    group_by: list[Getv1ReportsGroupByItem] | Unset = UNSET,
    from_: Any | Unset = UNSET,
    to: Any | Unset = UNSET,
    tenant: str | Unset = UNSET,
    channel: str | Unset = UNSET,
    outcome: str | Unset = UNSET,
    rule: int | Unset = UNSET,
    job: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> ErrorResponse | Report | None:
    """Stored delivery counts per day, tenant, channel, outcome, rule and job

     Needs: a key with the `read` scope.

    Args:
        group_by (list[Getv1ReportsGroupByItem] | Unset):
        from_ (Any | Unset):
        to (Any | Unset):
        tenant (str | Unset):
        channel (str | Unset):
        outcome (str | Unset):
        rule (int | Unset):
        job (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | Report
    """

    return sync_detailed(
        client=client,
        group_by=group_by,
        from_=from_,
        to=to,
        tenant=tenant,
        channel=channel,
        outcome=outcome,
        rule=rule,
        job=job,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    group_by: list[Getv1ReportsGroupByItem] | Unset = UNSET,
    from_: Any | Unset = UNSET,
    to: Any | Unset = UNSET,
    tenant: str | Unset = UNSET,
    channel: str | Unset = UNSET,
    outcome: str | Unset = UNSET,
    rule: int | Unset = UNSET,
    job: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Response[ErrorResponse | Report]:
    """Stored delivery counts per day, tenant, channel, outcome, rule and job

     Needs: a key with the `read` scope.

    Args:
        group_by (list[Getv1ReportsGroupByItem] | Unset):
        from_ (Any | Unset):
        to (Any | Unset):
        tenant (str | Unset):
        channel (str | Unset):
        outcome (str | Unset):
        rule (int | Unset):
        job (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | Report]
    """

    kwargs = _get_kwargs(
        group_by=group_by,
        from_=from_,
        to=to,
        tenant=tenant,
        channel=channel,
        outcome=outcome,
        rule=rule,
        job=job,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    group_by: list[Getv1ReportsGroupByItem] | Unset = UNSET,
    from_: Any | Unset = UNSET,
    to: Any | Unset = UNSET,
    tenant: str | Unset = UNSET,
    channel: str | Unset = UNSET,
    outcome: str | Unset = UNSET,
    rule: int | Unset = UNSET,
    job: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> ErrorResponse | Report | None:
    """Stored delivery counts per day, tenant, channel, outcome, rule and job

     Needs: a key with the `read` scope.

    Args:
        group_by (list[Getv1ReportsGroupByItem] | Unset):
        from_ (Any | Unset):
        to (Any | Unset):
        tenant (str | Unset):
        channel (str | Unset):
        outcome (str | Unset):
        rule (int | Unset):
        job (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | Report
    """

    return (
        await asyncio_detailed(
            client=client,
            group_by=group_by,
            from_=from_,
            to=to,
            tenant=tenant,
            channel=channel,
            outcome=outcome,
            rule=rule,
            job=job,
            limit=limit,
        )
    ).parsed
