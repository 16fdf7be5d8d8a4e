"""The hand-written layer over the generated client.

`herald_client.generated` is what openapi-python-client makes of
/openapi.json: a function per route and an attrs model per schema. This
module adds what it lacks:

- **Retries that are safe.** A request is sent again after a connection
  failure, `408`, `429` or a `5xx`, waiting as `Retry-After` asks (else an
  exponential backoff with jitter). Only requests that may be repeated are:
  reads, `PUT`s, `DELETE`s, cancels, and creates that carry an
  idempotency key; `timers.create` and `timers.bulk` make one for every
  timer that has none, so a create whose answer was lost is answered the
  second time by the timer the first one made. A create without a key
  (`jobs.create`, audience uploads) is sent again only when the server said
  nothing was written (`429`, `503 unavailable`, `503 overloaded`) or the
  connection was never made.
- **Typed errors.** Every error answer raises `HeraldError` with `code`,
  `message`, `field` and `status`.
- **Cursor iteration.** `timers.iterate(...)` and the like follow
  `next_cursor` (or `next_before`) page after page.
- **NDJSON bulk.** `timers.bulk(...)` and `reminders.bulk(...)`, which the
  generator skips (it does not take NDJSON bodies), answered per line.

The generated client stays at hand for every other route:
`herald.client` is its `Client`, to pass to any function of
`herald_client.generated.api`.
"""

from __future__ import annotations

import datetime
import json
import random
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import httpx

from .errors import HeraldConnectionError, HeraldError
from .generated.api.campaigns import (
    getv1_audiences_id,
    getv1_jobs,
    getv1_jobs_id,
    getv1_jobs_id_sends,
    postv1_jobs,
    postv1_jobs_id_cancel,
)
from .generated.api.reminders import (
    deletev1_reminders_user_id_subject_id,
    deletev1_subjects_subject_id,
    getv1_subjects,
    getv1_subjects_subject_id,
    getv1_users_user_id_reminders,
    postv1_reminders,
    putv1_subjects_subject_id,
)
from .generated.api.timers import deletev1_timers_id, getv1_timers, getv1_timers_id, postv1_timers
from .generated.client import AuthenticatedClient, Client
from .generated.models import (
    AudienceJson,
    CreateTimer,
    JobBody,
    JobJson,
    ReminderBody,
    ReminderJson,
    RemindersCancelled,
    SendList,
    SubjectBody,
    SubjectDetailJson,
    SubjectJson,
    SubjectSummaryJson,
    TimerJson,
    UserReminders,
)
from .generated.types import UNSET

__all__ = ["BulkLine", "Herald"]

VERSION = "0.1.0"
NDJSON = "application/x-ndjson"
# Codes whose answer says nothing was written: any request may go again.
NOTHING_WRITTEN = {"unavailable", "overloaded", "quota_exceeded"}
# Statuses worth another try for a request that may be repeated.
RETRY_STATUSES = {408, 429, 500, 502, 503, 504}


def new_idempotency_key() -> str:
    """A fresh key for a create (`py-` and a random UUID; keys must not
    start with `herald-`)."""
    return "py-" + uuid.uuid4().hex


def _time(value: datetime.datetime | str) -> str:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            raise ValueError("a datetime sent to Herald needs a time zone (tzinfo)")
        return value.isoformat()
    return value


def _unset_none(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (UNSET if v is None else v) for k, v in params.items()}


@dataclass
class BulkLine:
    """One answer line of a bulk request: `line` (1-based, of the non-blank
    input lines), `status` (what the single route would have answered),
    `id` of the timer made or found (timers), `error` (a `HeraldError`, or
    None when the line succeeded) and `data`, the whole line as answered."""

    line: int
    status: int
    data: dict[str, Any] = field(repr=False)
    error: HeraldError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and 200 <= self.status < 300

    @property
    def id(self) -> int | None:
        value = self.data.get("id")
        return value if isinstance(value, int) else None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BulkLine":
        status = int(data.get("status", 0))
        error = data.get("error")
        err = HeraldError.from_error_object(status, error, body=data) if error is not None else None
        return cls(line=int(data.get("line", 0)), status=status, data=data, error=err)


class Herald:
    """A client of one Herald node (or a load balancer in front of several).

        herald = Herald("http://127.0.0.1:8780")            # open mode
        herald = Herald(url, key="hrk_3_...", tenant=None)  # protected node

    `retries` is how many times a failed request may be sent again;
    `backoff_s` the first wait (doubled each time, up to `max_backoff_s`)
    when the server gives no `Retry-After`.
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8780",
        key: str | None = None,
        *,
        tenant: str | None = None,
        timeout_s: float = 30.0,
        retries: int = 4,
        backoff_s: float = 0.2,
        max_backoff_s: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        headers = {"User-Agent": f"herald-client-python/{VERSION}"}
        if tenant:
            headers["X-Herald-Tenant"] = tenant
        common: dict[str, Any] = {
            "base_url": base_url.rstrip("/"),
            "headers": headers,
            "timeout": httpx.Timeout(timeout_s),
            "raise_on_unexpected_status": False,
        }
        self.client: Client | AuthenticatedClient = (
            AuthenticatedClient(token=key, **common) if key else Client(**common)
        )
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._sleep = sleep
        self.timers = Timers(self)
        self.subjects = Subjects(self)
        self.reminders = Reminders(self)
        self.audiences = Audiences(self)
        self.jobs = Jobs(self)

    def close(self) -> None:
        self.client.get_httpx_client().close()

    def __enter__(self) -> "Herald":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # The one place requests are sent.

    def send(self, request: dict[str, Any], *, idempotent: bool) -> httpx.Response:
        """Sends `request` (keyword arguments of `httpx.Client.request`),
        again when that is safe, and returns the first answer under 400;
        raises `HeraldError` (or `HeraldConnectionError`) otherwise."""
        http = self.client.get_httpx_client()
        attempt = 0
        while True:
            attempt += 1
            try:
                response = http.request(**request)
            except httpx.TransportError as exc:
                # A connection never made sent nothing: any request may go again.
                never_sent = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
                if attempt > self.retries or not (idempotent or never_sent):
                    raise HeraldConnectionError(
                        f"{request.get('method', '').upper()} {request.get('url')}: {exc!r}", attempts=attempt
                    ) from exc
                self._sleep(self._backoff(attempt))
                continue
            if response.status_code < 400:
                return response
            error = HeraldError.from_response(response, attempts=attempt)
            if attempt > self.retries or not self._retryable(error, idempotent):
                raise error
            wait = self._backoff(attempt)
            if error.retry_after is not None:
                # As the server asks, within reason.
                wait = max(wait, min(error.retry_after, 60.0))
            self._sleep(wait)

    def _retryable(self, error: HeraldError, idempotent: bool) -> bool:
        if error.status == 429 or (error.status == 503 and error.code in NOTHING_WRITTEN):
            return True
        return idempotent and error.status in RETRY_STATUSES

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self.max_backoff_s, self.backoff_s * (2 ** (attempt - 1)))
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def call(self, route: ModuleType, *args: Any, idempotent: bool, **kwargs: Any) -> Any:
        """Calls a generated route module (`herald_client.generated.api...`)
        through `send`, and returns its parsed answer."""
        request = route._get_kwargs(*args, **kwargs)
        response = self.send(request, idempotent=idempotent)
        return route._build_response(client=self.client, response=response).parsed

    def ndjson(self, path: str, lines: Iterable[Mapping[str, Any]], *, idempotent: bool, params: Any = None) -> list[BulkLine]:
        """POSTs `lines` as NDJSON to a `:bulk` route and returns its answer lines."""
        body = "".join(json.dumps(dict(line), separators=(",", ":")) + "\n" for line in lines).encode()
        request = {
            "method": "post",
            "url": path,
            "content": body,
            "headers": {"Content-Type": NDJSON},
        }
        if params:
            request["params"] = params
        response = self.send(request, idempotent=idempotent)
        return [BulkLine.from_dict(json.loads(text)) for text in response.text.splitlines() if text.strip()]


class _Section:
    def __init__(self, herald: Herald) -> None:
        self._h = herald

    def _pages(self, route: ModuleType, items: str, next_field: str, param: str, page_size: int, **filters: Any) -> Iterator[Any]:
        position: Any = filters.pop(param, None)
        while True:
            page = self._h.call(route, idempotent=True, limit=page_size, **_unset_none({**filters, param: position}))
            yield from getattr(page, items)
            position = getattr(page, next_field, None)
            if position is None or position is UNSET:
                return


class Timers(_Section):
    """`/v1/timers`."""

    def create(
        self,
        *,
        message: Mapping[str, Any],
        channel: str | None = None,
        recipient: str | None = None,
        delay_ms: int | None = None,
        fire_at: datetime.datetime | str | None = None,
        idempotency_key: str | None = None,
        priority: int | None = None,
        **more: Any,
    ) -> TimerJson:
        """Schedules a timer: `delay_ms` or `fire_at`, `recipient` or
        `to={"user_id": ...}`; any other field of `POST /v1/timers` goes in
        `more` (`topic`, `critical`, `digest`, `on_conflict`, `route`).
        `channel` may be left out with a `route` or a default route. Without an
        `idempotency_key` one is made, so a retry finds the same timer."""
        body = self.line(
            channel=channel,
            message=message,
            recipient=recipient,
            delay_ms=delay_ms,
            fire_at=fire_at,
            idempotency_key=idempotency_key,
            priority=priority,
            **more,
        )
        return self._h.call(postv1_timers, idempotent=True, body=CreateTimer.from_dict(body))

    @staticmethod
    def line(**fields: Any) -> dict[str, Any]:
        """The JSON body of one timer, as `create` and `bulk` send it: None
        values left out, times as RFC 3339, and an idempotency key."""
        body = {k: v for k, v in fields.items() if v is not None}
        if "fire_at" in body:
            body["fire_at"] = _time(body["fire_at"])
        body.setdefault("idempotency_key", new_idempotency_key())
        return body

    def get(self, timer_id: int) -> TimerJson:
        return self._h.call(getv1_timers_id, timer_id, idempotent=True)

    def list(self, **filters: Any):
        """One page of `GET /v1/timers` (`state`, `channel`, `recipient`,
        `idempotency_key`, `kind`, `due_after`, `due_before`, `order`,
        `limit`, `cursor`): a `TimerList` with `timers` and `next_cursor`."""
        return self._h.call(getv1_timers, idempotent=True, **_unset_none(filters))

    def iterate(self, page_size: int = 100, **filters: Any) -> Iterator[TimerJson]:
        """Every timer the filters select, page after page (`next_cursor`)."""
        return self._pages(getv1_timers, "timers", "next_cursor", "cursor", page_size, **filters)

    def cancel(self, timer_id: int) -> TimerJson:
        """Cancels a pending timer (`DELETE /v1/timers/{id}`). A cancel
        whose first answer was lost is answered, when sent again, by the
        timer if it is already `cancelled`."""
        try:
            return self._h.call(deletev1_timers_id, timer_id, idempotent=True)
        except HeraldError as err:
            if err.code == "not_cancellable" and err.attempts > 1:
                timer = self.get(timer_id)
                if timer.state == "cancelled":
                    return timer
            raise

    def bulk(self, timers: Iterable[Mapping[str, Any]]) -> list[BulkLine]:
        """`POST /v1/timers:bulk`: each timer as `create` takes it, each
        given an idempotency key when it has none (so the whole request may
        be sent again); one `BulkLine` per timer, in order."""
        lines = [self.line(**dict(t)) for t in timers]
        return self._h.ndjson("/v1/timers:bulk", lines, idempotent=True)


class Subjects(_Section):
    """`/v1/subjects`: what users wait for."""

    def put(
        self,
        subject_id: str,
        *,
        start_at: datetime.datetime | str,
        title: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> SubjectJson:
        body: dict[str, Any] = {"start_at": _time(start_at)}
        if title is not None:
            body["title"] = title
        if data is not None:
            body["data"] = dict(data)
        return self._h.call(putv1_subjects_subject_id, subject_id, idempotent=True, body=SubjectBody.from_dict(body))

    def get(self, subject_id: str) -> SubjectDetailJson:
        return self._h.call(getv1_subjects_subject_id, subject_id, idempotent=True)

    def delete(self, subject_id: str) -> SubjectJson:
        return self._h.call(deletev1_subjects_subject_id, subject_id, idempotent=True)

    def iterate(self, page_size: int = 50) -> Iterator[SubjectSummaryJson]:
        return self._pages(getv1_subjects, "subjects", "next_cursor", "cursor", page_size)


class Reminders(_Section):
    """`/v1/reminders`: "remind me N minutes before it starts"."""

    def create(
        self,
        *,
        user_id: str,
        subject_id: str,
        channel_type: str,
        lead_minutes: int,
        channel: str | None = None,
        priority: int | None = None,
    ) -> ReminderJson:
        """Subscribes `user_id` to `subject_id`. A subscription is its own
        key: when the answer to the first try was lost and a retry is told
        `409 reminder_exists`, the reminder the first try made is read back
        and returned."""
        body: dict[str, Any] = {
            "user_id": user_id,
            "subject_id": subject_id,
            "channel_type": channel_type,
            "lead_minutes": lead_minutes,
        }
        if channel is not None:
            body["channel"] = channel
        if priority is not None:
            body["priority"] = priority
        try:
            return self._h.call(postv1_reminders, idempotent=True, body=ReminderBody.from_dict(body))
        except HeraldError as err:
            if err.code == "reminder_exists" and err.attempts > 1:
                found = self._find(user_id, subject_id, channel_type, lead_minutes, priority)
                if found is not None:
                    return found
            raise

    def _find(
        self, user_id: str, subject_id: str, channel_type: str, lead_minutes: int, priority: int | None
    ) -> ReminderJson | None:
        for subject in self.of_user(user_id).subjects:
            if subject.subject_id != subject_id:
                continue
            for slot in subject.reminders:
                if slot.channel_type == channel_type and slot.lead_minutes == lead_minutes:
                    return ReminderJson(
                        user_id=user_id,
                        subject_id=subject_id,
                        channel_type=slot.channel_type,
                        lead_minutes=slot.lead_minutes,
                        timer_id=slot.timer_id,
                        fire_at=slot.fire_at,
                        channel=slot.channel,
                        state=slot.state,
                        # This call never asks for send_late, so the reminder
                        # its first try made has the default.
                        send_late=False,
                        # The first try asked for this one (5 when none).
                        priority=5 if priority is None else priority,
                    )
        return None

    def of_user(self, user_id: str) -> UserReminders:
        return self._h.call(getv1_users_user_id_reminders, user_id, idempotent=True)

    def delete(
        self, user_id: str, subject_id: str, *, channel_type: str | None = None, lead_minutes: int | None = None
    ) -> RemindersCancelled:
        return self._h.call(
            deletev1_reminders_user_id_subject_id,
            user_id,
            subject_id,
            idempotent=True,
            **_unset_none({"channel_type": channel_type, "lead_minutes": lead_minutes}),
        )

    def bulk(self, reminders: Iterable[Mapping[str, Any]]) -> list[BulkLine]:
        """`POST /v1/reminders:bulk`, one `BulkLine` per reminder. Sent
        again after a lost answer, the lines the first try made answer
        `409 reminder_exists`."""
        return self._h.ndjson("/v1/reminders:bulk", reminders, idempotent=True)


class Audiences(_Section):
    """`/v1/audiences`: uploaded recipient lists."""

    def create(self, recipients: Iterable[str], *, name: str | None = None) -> AudienceJson:
        """Uploads the recipients as NDJSON and returns the sealed audience."""
        body = "".join(json.dumps({"recipient": r}) + "\n" for r in recipients).encode()
        request: dict[str, Any] = {
            "method": "post",
            "url": "/v1/audiences",
            "content": body,
            "headers": {"Content-Type": NDJSON},
        }
        if name is not None:
            request["params"] = {"name": name}
        response = self._h.send(request, idempotent=False)
        return AudienceJson.from_dict(response.json())

    def get(self, audience_id: int) -> AudienceJson:
        return self._h.call(getv1_audiences_id, audience_id, idempotent=True)


class Jobs(_Section):
    """`/v1/jobs`: campaigns."""

    def create(
        self,
        *,
        message: Mapping[str, Any],
        channel: str | None = None,
        audience_id: int | None = None,
        users: Iterable[str] | None = None,
        **more: Any,
    ) -> JobJson:
        """Starts a job to an audience (or to `users` listed inline); any
        other field of `POST /v1/jobs` goes in `more` (`deadline_secs`,
        `priority`, `segment_size`, `follow_up`, ...). The API has no
        idempotency key for jobs, so this is sent again only when the
        server answered that nothing was written."""
        body: dict[str, Any] = {"message": dict(message), **more}
        if channel is not None:
            body["channel"] = channel
        if audience_id is not None:
            body["audience_id"] = audience_id
        if users is not None:
            body["users"] = list(users)
        if "deadline" in body:
            body["deadline"] = _time(body["deadline"])
        return self._h.call(postv1_jobs, idempotent=False, body=JobBody.from_dict(body))

    def get(self, job_id: int) -> JobJson:
        return self._h.call(getv1_jobs_id, job_id, idempotent=True)

    def cancel(self, job_id: int) -> JobJson:
        """`POST /v1/jobs/{id}:cancel`; a job already ended is answered as it is."""
        return self._h.call(postv1_jobs_id_cancel, job_id, idempotent=True)

    def iterate(self, page_size: int = 50, category: str | None = None, name: str | None = None) -> Iterator[JobJson]:
        """Every job, newest first (`next_before`); with `category`, only
        that category's, with `name`, only names starting with it."""
        return self._pages(getv1_jobs, "jobs", "next_before", "before", page_size, category=category, name=name)

    def sends(self, job_id: int, start: int = 0, end: int | None = None) -> SendList:
        return self._h.call(getv1_jobs_id_sends, job_id, idempotent=True, **_unset_none({"start": start, "end": end}))

    def wait(self, job_id: int, timeout_s: float = 60.0, poll_s: float = 0.2) -> JobJson:
        """Polls the job until it is no longer `running`; returns it.
        Raises `TimeoutError` when it still runs after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while True:
            job = self.get(job_id)
            if job.state != "running":
                return job
            if time.monotonic() >= deadline:
                raise TimeoutError(f"job {job_id} still running after {timeout_s} s")
            time.sleep(poll_s)
