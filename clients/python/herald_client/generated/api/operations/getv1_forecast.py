from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.forecast import Forecast
from ...models.getv_1_forecast_horizon import (
    Getv1ForecastHorizon,
)
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    horizon: Getv1ForecastHorizon | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_horizon: str | Unset = UNSET
    if not isinstance(horizon, Unset):
        json_horizon = horizon

    params["horizon"] = json_horizon

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/forecast",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | Forecast | None:
    if response.status_code == 200:
        response_200 = Forecast.from_dict(response.json())

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
) -> Response[ErrorResponse | Forecast]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    horizon: Getv1ForecastHorizon | Unset = UNSET,
) -> Response[ErrorResponse | Forecast]:
    """What falls due in the next hour or day, per channel, against each channel's rate

     Needs: a key with the `read` scope.

    Args:
        horizon (Getv1ForecastHorizon | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | Forecast]
    """

    kwargs = _get_kwargs(
        horizon=horizon,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    horizon: Getv1ForecastHorizon | Unset = UNSET,
) -> ErrorResponse | Forecast | None:
    """What falls due in the next hour or day, per channel, against each channel's rate

     Needs: a key with the `read` scope.

    Args:
        horizon (Getv1ForecastHorizon | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | Forecast
    """

    return sync_detailed(
        client=client,
        horizon=horizon,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    horizon: Getv1ForecastHorizon | Unset = UNSET,
) -> Response[ErrorResponse | Forecast]:
    """What falls due in the next hour or day, per channel, against each channel's rate

     Needs: a key with the `read` scope.

    Args:
        horizon (Getv1ForecastHorizon | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | Forecast]
    """

    kwargs = _get_kwargs(
        horizon=horizon,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    horizon: Getv1ForecastHorizon | Unset = UNSET,
) -> ErrorResponse | Forecast | None:
    """What falls due in the next hour or day, per channel, against each channel's rate

     Needs: a key with the `read` scope.

    Args:
        horizon (Getv1ForecastHorizon | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | Forecast
    """

    return (
        await asyncio_detailed(
            client=client,
            horizon=horizon,
        )
    ).parsed
