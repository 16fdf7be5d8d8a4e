from typing import Literal

Getv1JobsIdSendsOutcome = Literal["delivered", "expired", "failed", "in_doubt", "retry"]

GETV_1_JOBS_ID_SENDS_OUTCOME_VALUES: set[Getv1JobsIdSendsOutcome] = {
    "delivered",
    "expired",
    "failed",
    "in_doubt",
    "retry",
}


def check_getv_1_jobs_id_sends_outcome(value: str) -> Getv1JobsIdSendsOutcome:
    if value in GETV_1_JOBS_ID_SENDS_OUTCOME_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {GETV_1_JOBS_ID_SENDS_OUTCOME_VALUES!r}"
    )
