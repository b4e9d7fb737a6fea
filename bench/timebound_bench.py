"""Time-bounded statements: precision and recall of the expiry ``expiry_for`` sets on the
bilingual set in ``bench/data/timebound.json`` (40+ bounded, 40+ timeless statements, English
and Chinese), what dateparser costs to load (a fresh interpreter: import time and resident
memory) and what one extracted item costs (mean, p95, max over the set, warm).

    .venv/bin/python bench/timebound_bench.py [--repeat 20]

An expiry counts as right when it falls on the expected local day (the last day the statement
is true: for "before X" the day before X)."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import zoneinfo
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")

DATA = ROOT / "bench" / "data" / "timebound.json"

IMPORT_PROBE = """
import resource, time
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
from dateparser.date import DateDataParser
DateDataParser(languages=["en", "zh"]).get_date_data("next week")
elapsed = time.perf_counter() - started
print(elapsed, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


def last_day(expires_at: datetime, zone) -> str:
    local = expires_at.astimezone(zone)
    if (local.hour, local.minute) == (0, 0):  # "before X": the start of X
        local -= timedelta(minutes=1)
    return local.date().isoformat()


def evaluate(expiry_for) -> dict:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    said_at, zone = datetime.fromisoformat(data["said_at"]), zoneinfo.ZoneInfo(data["zone"])
    rows = [(text, want) for text, want in data["bounded"] + data["timeless"]]
    set_, right, wrong = 0, 0, []
    for text, want in rows:
        found = expiry_for(text, now=said_at, zone=zone)
        got = last_day(found.expires_at, zone) if found else None
        set_ += got is not None
        right += got is not None and got == want
        if got != want:
            wrong.append((text, want, got, found.phrase if found else ""))
    bounded = len(data["bounded"])
    return {
        "bounded": bounded,
        "timeless": len(data["timeless"]),
        "precision": right / set_ if set_ else 1.0,
        "recall": right / bounded,
        "wrong": wrong,
        "rows": rows,
        "said_at": said_at,
        "zone": zone,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    probes = [
        subprocess.run([sys.executable, "-c", IMPORT_PROBE], check=False, capture_output=True, text=True)
        for _ in range(3)
    ]
    figures = [tuple(map(float, p.stdout.split())) for p in probes if p.returncode == 0]
    if figures:
        print(
            f"dateparser first use (fresh interpreter, import + first parse): "
            f"{min(f[0] for f in figures) * 1000:.0f}-{max(f[0] for f in figures) * 1000:.0f} ms, "
            f"+{statistics.median(f[1] for f in figures):.1f} MB resident"
        )

    import django

    django.setup()
    from memory_app.distill.timebound import expiry_for

    result = evaluate(expiry_for)
    print(
        f"set: {result['bounded']} time-bounded, {result['timeless']} timeless statements (EN + ZH); "
        f"precision {result['precision']:.3f}, recall {result['recall']:.3f}"
    )
    for text, want, got, phrase in result["wrong"]:
        print(f"  wrong: {text!r}: expected {want}, got {got} ({phrase!r})")

    timings = []
    for _ in range(args.repeat):
        for text, _want in result["rows"]:
            started = time.perf_counter()
            expiry_for(text, now=result["said_at"], zone=result["zone"])
            timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    print(
        f"per extracted item (warm, {len(timings)} calls): mean {statistics.mean(timings):.2f} ms, "
        f"p50 {timings[len(timings) // 2]:.2f} ms, p95 {timings[int(len(timings) * 0.95)]:.2f} ms, "
        f"max {timings[-1]:.2f} ms"
    )


if __name__ == "__main__":
    main()
