from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.template_preview import TemplatePreview
from ...models.template_preview_json import TemplatePreviewJson
from ...types import UNSET, Response, Unset


def _get_kwargs(
    name: str,
    *,
    body: TemplatePreview | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/templates/{name}:preview".format(
            name=quote(str(name), safe=""),
        ),
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | TemplatePreviewJson | None:
    if response.status_code == 200:
        response_200 = TemplatePreviewJson.from_dict(response.json())

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
) -> Response[ErrorResponse | TemplatePreviewJson]:
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
    body: TemplatePreview | Unset = UNSET,
) -> Response[ErrorResponse | TemplatePreviewJson]:
    """Render a template for given data and a subscriber or locale, per part

     Needs: a key with the `read` scope.

    Args:
        name (str):
        body (TemplatePreview | Unset): `POST /v1/templates/{name}:preview`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | TemplatePreviewJson]
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
    body: TemplatePreview | Unset = UNSET,
) -> ErrorResponse | TemplatePreviewJson | None:
    """Render a template for given data and a subscriber or locale, per part

     Needs: a key with the `read` scope.

    Args:
        name (str):
        body (TemplatePreview | Unset): `POST /v1/templates/{name}:preview`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | TemplatePreviewJson
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
    body: TemplatePreview | Unset = UNSET,
) -> Response[ErrorResponse | TemplatePreviewJson]:
    """Render a template for given data and a subscriber or locale, per part

     Needs: a key with the `read` scope.

    Args:
        name (str):
        body (TemplatePreview | Unset): `POST /v1/templates/{name}:preview`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | TemplatePreviewJson]
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
    body: TemplatePreview | Unset = UNSET,
) -> ErrorResponse | TemplatePreviewJson | None:
    """Render a template for given data and a subscriber or locale, per part

     Needs: a key with the `read` scope.

    Args:
        name (str):
        body (TemplatePreview | Unset): `POST /v1/templates/{name}:preview`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | TemplatePreviewJson
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            body=body,
        )
    ).parsed
