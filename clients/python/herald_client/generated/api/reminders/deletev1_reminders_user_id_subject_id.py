from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.deletev_1_reminders_user_id_subject_id_channel_type import (
    Deletev1RemindersUserIdSubjectIdChannelType,
)
from ...models.error_response import ErrorResponse
from ...models.reminders_cancelled import RemindersCancelled
from ...types import UNSET, Response, Unset


def _get_kwargs(
    user_id: str,
    subject_id: str,
    *,
    channel_type: Deletev1RemindersUserIdSubjectIdChannelType | Unset = UNSET,
    lead_minutes: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_channel_type: str | Unset = UNSET
    if not isinstance(channel_type, Unset):
        json_channel_type = channel_type

    params["channel_type"] = json_channel_type

    params["lead_minutes"] = lead_minutes

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v1/reminders/{user_id}/{subject_id}".format(
            user_id=quote(str(user_id), safe=""),
            subject_id=quote(str(subject_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | RemindersCancelled | None:
    if response.status_code == 200:
        response_200 = RemindersCancelled.from_dict(response.json())

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
) -> Response[ErrorResponse | RemindersCancelled]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    user_id: str,
    subject_id: str,
    *,
    client: AuthenticatedClient,
    channel_type: Deletev1RemindersUserIdSubjectIdChannelType | Unset = UNSET,
    lead_minutes: int | Unset = UNSET,
) -> Response[ErrorResponse | RemindersCancelled]:
    """Cancel a user's reminders of a subject

     Needs: a key with the `write` scope.

    Args:
        user_id (str):
        subject_id (str):
        channel_type (Deletev1RemindersUserIdSubjectIdChannelType | Unset):
        lead_minutes (int | Unset): One of the node's `reminders.leads_minutes`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | RemindersCancelled]
    """

    kwargs = _get_kwargs(
        user_id=user_id,
        subject_id=subject_id,
        channel_type=channel_type,
        lead_minutes=lead_minutes,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    user_id: str,
    subject_id: str,
    *,
    client: AuthenticatedClient,
    channel_type: Deletev1RemindersUserIdSubjectIdChannelType | Unset = UNSET,
    lead_minutes: int | Unset = UNSET,
) -> ErrorResponse | RemindersCancelled | None:
    """Cancel a user's reminders of a subject

     Needs: a key with the `write` scope.

    Args:
        user_id (str):
        subject_id (str):
        channel_type (Deletev1RemindersUserIdSubjectIdChannelType | Unset):
        lead_minutes (int | Unset): One of the node's `reminders.leads_minutes`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | RemindersCancelled
    """

    return sync_detailed(
        user_id=user_id,
        subject_id=subject_id,
        client=client,
        channel_type=channel_type,
        lead_minutes=lead_minutes,
    ).parsed


async def asyncio_detailed(
    user_id: str,
    subject_id: str,
    *,
    client: AuthenticatedClient,
    channel_type: Deletev1RemindersUserIdSubjectIdChannelType | Unset = UNSET,
    lead_minutes: int | Unset = UNSET,
) -> Response[ErrorResponse | RemindersCancelled]:
    """Cancel a user's reminders of a subject

     Needs: a key with the `write` scope.

    Args:
        user_id (str):
        subject_id (str):
        channel_type (Deletev1RemindersUserIdSubjectIdChannelType | Unset):
        lead_minutes (int | Unset): One of the node's `reminders.leads_minutes`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | RemindersCancelled]
    """

    kwargs = _get_kwargs(
        user_id=user_id,
        subject_id=subject_id,
        channel_type=channel_type,
        lead_minutes=lead_minutes,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    user_id: str,
    subject_id: str,
    *,
    client: AuthenticatedClient,
    channel_type: Deletev1RemindersUserIdSubjectIdChannelType | Unset = UNSET,
    lead_minutes: int | Unset = UNSET,
) -> ErrorResponse | RemindersCancelled | None:
    """Cancel a user's reminders of a subject

     Needs: a key with the `write` scope.

    Args:
        user_id (str):
        subject_id (str):
        channel_type (Deletev1RemindersUserIdSubjectIdChannelType | Unset):
        lead_minutes (int | Unset): One of the node's `reminders.leads_minutes`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | RemindersCancelled
    """

    return (
        await asyncio_detailed(
            user_id=user_id,
            subject_id=subject_id,
            client=client,
            channel_type=channel_type,
            lead_minutes=lead_minutes,
        )
    ).parsed
