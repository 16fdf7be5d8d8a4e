from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.template_body import TemplateBody
from ...models.template_json import TemplateJson
from ...types import Response


def _get_kwargs(
    name: str,
    *,
    body: TemplateBody,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/templates/{name}".format(
            name=quote(str(name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | TemplateJson | None:
    if response.status_code == 200:
        response_200 = TemplateJson.from_dict(response.json())

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
) -> Response[ErrorResponse | TemplateJson]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
    body: TemplateBody,
) -> Response[ErrorResponse | TemplateJson]:
    """Add a version to a template (sends not pinned to a version use it from now)

     Needs: a key with the `write` scope.

    Args:
        name (str):
        body (TemplateBody): A template version as the API takes it (`POST /v1/templates`,
            `PUT /v1/templates/{name}`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | TemplateJson]
    """

    kwargs = _get_kwargs(
        name=name,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    name: str,
    *,
    client: AuthenticatedClient,
    body: TemplateBody,
) -> ErrorResponse | TemplateJson | None:
    """Add a version to a template (sends not pinned to a version use it from now)

     Needs: a key with the `write` scope.

    Args:
        name (str):
        body (TemplateBody): A template version as the API takes it (`POST /v1/templates`,
            `PUT /v1/templates/{name}`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | TemplateJson
    """

    return sync_detailed(
        name=name,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
    body: TemplateBody,
) -> Response[ErrorResponse | TemplateJson]:
    """Add a version to a template (sends not pinned to a version use it from now)

     Needs: a key with the `write` scope.

    Args:
        name (str):
        body (TemplateBody): A template version as the API takes it (`POST /v1/templates`,
            `PUT /v1/templates/{name}`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | TemplateJson]
    """

    kwargs = _get_kwargs(
        name=name,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    name: str,
    *,
    client: AuthenticatedClient,
    body: TemplateBody,
) -> ErrorResponse | TemplateJson | None:
    """Add a version to a template (sends not pinned to a version use it from now)

     Needs: a key with the `write` scope.

    Args:
        name (str):
        body (TemplateBody): A template version as the API takes it (`POST /v1/templates`,
            `PUT /v1/templates/{name}`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | TemplateJson
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            body=body,
        )
    ).parsed
