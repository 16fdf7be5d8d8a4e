#!/usr/bin/env python3
"""Cross-checks Herald's built-in `cn` calendar against PyPI's chinese-calendar.

    python3 scripts/calendars/check_cn.py

For every day of the years cn.json covers, a day is working when its weekday
is one of `working_weekdays` and it is not a holiday, or when it is a make-up
working day: the rule herald_core::calendar applies. That answer must equal
chinese_calendar.is_workday. Prints each disagreement and exits 1 if any.

chinese-calendar is imported when installed; otherwise it is installed into
a virtual environment under ~/.cache (kept between runs) and this script is
run again from there. The package is a second, independent transcription of
the same State Council notices, so agreement checks cn.json's typing.
"""

import datetime as dt
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "crates/herald-core/data/calendars/cn.json"
VERSION = "1.11.0"
WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def ensure_package():
    try:
        import chinese_calendar  # noqa: F401

        return
    except ImportError:
        pass
    if os.environ.get("HERALD_CHECK_CN_IN_VENV"):
        sys.exit("chinese-calendar is not importable even in its venv")
    venv = pathlib.Path.home() / ".cache" / f"herald-chinese-calendar-{VERSION}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", f"chinese-calendar=={VERSION}"],
            check=True,
        )
    env = dict(os.environ, HERALD_CHECK_CN_IN_VENV="1")
    sys.exit(subprocess.run([str(python), __file__, *sys.argv[1:]], env=env).returncode)


def herald_answer(cal):
    """{date: working?} for every day of every covered year, as the Rust code decides."""
    regular = {WEEKDAYS.index(w) for w in cal["working_weekdays"]}
    out = {}
    for year, spec in cal["years"].items():
        holidays = {dt.date.fromisoformat(d) for d in spec.get("holidays", [])}
        workdays = {dt.date.fromisoformat(d) for d in spec.get("workdays", [])}
        day = dt.date(int(year), 1, 1)
        while day.year == int(year):
            if day in workdays:
                out[day] = True
            elif day in holidays:
                out[day] = False
            else:
                out[day] = day.weekday() in regular
            day += dt.timedelta(days=1)
    return out


def main():
    ensure_package()
    import chinese_calendar

    cal = json.loads(DATA.read_text(encoding="utf-8"))
    ours = herald_answer(cal)
    wrong = []
    for day, working in sorted(ours.items()):
        theirs = chinese_calendar.is_workday(day)
        if theirs != working:
            wrong.append((day, working, theirs))
    for day, working, theirs in wrong:
        print(
            f"{day} ({WEEKDAYS[day.weekday()]}): cn.json says "
            f"{'working' if working else 'not working'}, chinese-calendar "
            f"{'working' if theirs else 'not working'}"
        )
    years = sorted(cal["years"])
    if wrong:
        print(f"{len(wrong)} disagreement(s) in {years[0]}..{years[-1]}")
        sys.exit(1)
    print(
        f"cn.json agrees with chinese-calendar {chinese_calendar.__version__} "
        f"on all {len(ours)} days of {years[0]}..{years[-1]}"
    )


if __name__ == "__main__":
    main()
