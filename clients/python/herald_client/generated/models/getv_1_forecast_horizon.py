from typing import Literal

Getv1ForecastHorizon = Literal["day", "hour"]

GETV_1_FORECAST_HORIZON_VALUES: set[Getv1ForecastHorizon] = {
    "day",
    "hour",
}


def check_getv_1_forecast_horizon(value: str) -> Getv1ForecastHorizon:
    if value in GETV_1_FORECAST_HORIZON_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {GETV_1_FORECAST_HORIZON_VALUES!r}"
    )
