"""Progress lines on stderr: throttling and format with an injected clock, the
passthrough transform, the `csdata record generate` subprocess, and `format_written`."""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.util import assert_that, equal_to

from tests.conftest import DATA, beam_test_pipeline, loaded_modules
from transforms.core.io.written import format_written
from transforms.core.progress import lines as reporting
from transforms.core.progress.lines import (
    ENABLED_ENV,
    INTERVAL_ENV,
    Reporter,
    default_interval,
)
from transforms.core.progress.steps import ProgressLine

REPO = Path(__file__).resolve().parents[2]
STEPS = [("articles", "read"), ("articles", "annotated"), ("queries", "written")]


class Clock:
    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_reporter(interval: float = 5.0):
    clock, stream = Clock(), io.StringIO()
    reporter = Reporter(STEPS, interval, stream=stream, clock=clock)
    tallies = {step: reporter.tally(step) for step in STEPS}
    return reporter, tallies, clock, stream


def test_reporter_throttles_to_one_line_per_interval():
    reporter, tallies, clock, stream = make_reporter(interval=5.0)
    tallies[STEPS[0]].n = 10
    clock.now = 104.9
    assert reporter.report(clock.now) is None               # not due yet
    clock.now = 105.0
    assert reporter.report(clock.now) is not None
    tallies[STEPS[0]].n = 20
    for now in (105.0, 107.0, 109.99):                       # due again only at 110
        assert reporter.report(now) is None
    assert reporter.report(110.0) is not None
    assert len(stream.getvalue().splitlines()) == 2 and reporter.lines == 2


def test_reporter_line_format_units_rate_and_elapsed():
    reporter, tallies, clock, stream = make_reporter(interval=5.0)
    tallies[STEPS[0]].busy = True                            # still reading: no total yet
    tallies[STEPS[0]].n = 1234
    tallies[STEPS[1]].n = 567
    tallies[STEPS[2]].n = 890
    # The rate is that of the first step that moved since the previous line (here: since start).
    line = reporter.report(100.0 + 83.0)
    assert line == (f"csdata: 1,234 articles read · 567 annotated · 890 queries written · "
                    f"{1234 / 83:,.1f} articles/s · 0:01:23")
    assert stream.getvalue() == line + "\n"
    # Reading is over: the rate is now that of annotation, over the last interval only.
    tallies[STEPS[0]].busy = False
    tallies[STEPS[1]].n = 617
    line = reporter.report(100.0 + 93.0)
    assert "· 617/1,234 annotated · 890 queries written · 5.0 articles/s ·" in line
    # The unit is repeated only where it changes.
    assert "1,234 articles read · 617/1,234 annotated ·" in line
    # Elapsed time past an hour; the ETA is gone once annotation reached its total.
    tallies[STEPS[1]].n = 1234
    assert reporter.report(100.0 + 3700.0).endswith("1,234/1,234 annotated · 890 queries written · "
                                                    "0.2 articles/s · 1:01:40")


def test_the_eta_is_the_remaining_count_at_the_mean_rate_since_the_step_started():
    reporter, tallies, clock, stream = make_reporter(interval=5.0)
    tallies[STEPS[0]].n = 1000
    assert reporter.report(105.0) is not None                # annotation seen at 0 at 105
    assert reporter.report(110.0) is None                    # nothing moved: no line, seen at 0 at 110
    tallies[STEPS[1]].n = 200
    # 200 in the 20 s since 110: 10 a second; 800 left: 80 s. The rate shown is over the 25 s
    # since the last line: 200 / 25 = 8.0.
    assert reporter.report(130.0) == ("csdata: 1,000 articles read · 200/1,000 annotated · "
                                      "0 queries written · 8.0 articles/s · ETA 0:01:20 · 0:00:30")
    tallies[STEPS[1]].n = 600
    # 600 in 50 s since 110: 12 a second; 400 left: 33.3 s.
    assert reporter.report(160.0).endswith("· ETA 0:00:33 · 0:01:00")
    tallies[STEPS[1]].n = 700
    assert reporter.finish(170.0).endswith("· 700/1,000 annotated · 0 queries written · 10.0 articles/s · 0:01:10")


def test_a_total_shows_once_the_first_step_of_its_unit_is_idle_and_the_step_started():
    reporter, tallies, _, _ = make_reporter(interval=0)
    totals = reporter.totals
    counts = {STEPS[0]: 10, STEPS[1]: 4, STEPS[2]: 7}
    assert totals(counts, {}) == {STEPS[0]: None, STEPS[1]: 10, STEPS[2]: None}   # queries: a unit of its own
    assert totals(counts, {STEPS[0]: True})[STEPS[1]] is None                      # still reading
    assert totals({**counts, STEPS[1]: 0}, {})[STEPS[1]] is None                   # not started
    assert totals({**counts, STEPS[1]: 11}, {})[STEPS[1]] is None                  # past it: no total


def test_a_step_that_keeps_a_sample_has_no_total():
    # 535,158 stories read, of which the sample segments a few: "23,337/535,158 segmented" with
    # an ETA would never arrive.
    steps = [("stories", "read"), ("stories", "segmented"), ("paragraphs", "kept")]
    reporter = Reporter(steps, interval=0, stream=io.StringIO(), clock=lambda: 0.0)
    counts = {steps[0]: 535_158, steps[1]: 23_337, steps[2]: 19_000}
    assert reporter.totals(counts, {}) == {steps[0]: None, steps[1]: None, steps[2]: None}
    assert "annotated" in reporting.TOTALLED and "segmented" not in reporting.TOTALLED


def test_a_heartbeat_line_while_nothing_moves():
    reporter, tallies, _, stream = make_reporter(interval=5.0)
    tallies[STEPS[0]].n = 3
    assert reporter.report(105.0) is not None
    for now in (110.0, 120.0, 134.9):                        # HEARTBEAT_SECONDS (30) after that line
        assert reporter.report(now) is None
    assert reporter.report(135.0) == "csdata: 3 articles read · 0 annotated · 0 queries written · 0:00:35"
    assert reporter.report(140.0) is None
    assert len(stream.getvalue().splitlines()) == 2
    assert reporting.HEARTBEAT_SECONDS == 30.0


def test_other_processes_counts_add_up_and_committed_counts_are_a_floor():
    reporter, tallies, _, _ = make_reporter(interval=0)
    tallies[STEPS[0]].n = 2
    reporter.source("host/11", {STEPS[0]: (3, False), STEPS[1]: (1, True)})
    reporter.source("host/12", {STEPS[0]: (4, False)})
    reporter.source("host/11", {STEPS[0]: (5, False), STEPS[1]: (2, False)})   # replaces its first
    assert reporter.counts() == {STEPS[0]: 2 + 5 + 4, STEPS[1]: 2, STEPS[2]: 0}
    reporter.commit({STEPS[0]: 9, STEPS[2]: 6})              # the job's counters: 9 < 11 stays 11
    assert reporter.counts() == {STEPS[0]: 11, STEPS[1]: 2, STEPS[2]: 6}
    assert reporter.busy() == {STEPS[0]: False, STEPS[1]: False, STEPS[2]: False}
    reporter.source("host/12", {STEPS[0]: (4, True)})
    assert reporter.busy()[STEPS[0]] is True


class FakeRelay:
    def __init__(self, listening: bool):
        self.listening, self.sent = listening, []

    def send(self, counts) -> bool:
        self.sent.append(dict(counts))
        return self.listening


def test_a_relaying_worker_sends_instead_of_printing_and_prints_where_nobody_listens():
    stream, clock = io.StringIO(), Clock()
    relay = FakeRelay(listening=True)
    reporter = Reporter(STEPS[:2], 5.0, stream=stream, clock=clock, relay=relay)
    tally = reporter.tally(STEPS[0])
    tally.busy, tally.n = True, 4
    assert reporter.report(101.0) is None                    # throttled like a line
    assert reporter.bundle_done() is not None                # a bundle's end is sent at once
    tally.busy = False
    assert reporter.bundle_done() is not None                # the step went idle: sent again
    assert reporter.bundle_done() is None                    # nothing new
    assert relay.sent == [{STEPS[0]: (4, True), STEPS[1]: (0, False)},
                          {STEPS[0]: (4, False), STEPS[1]: (0, False)}]
    assert stream.getvalue() == ""
    relay.listening = False
    tally.n = 5
    assert reporter.bundle_done() is not None
    assert stream.getvalue().startswith("csdata: 5 articles read")


def test_the_relay_carries_counts_to_the_drivers_listener():
    from transforms.core.progress.relay import Listener, Relay, decode, encode

    assert decode(encode("h/1", {STEPS[0]: (3, True)})) == ("h/1", {STEPS[0]: (3, True)})
    assert decode(b"not json") is None and decode(b'{"from": "h/1"}') is None
    group = ProgressLine().group
    driver = Reporter(STEPS, 5.0, stream=io.StringIO(), clock=Clock())
    assert not Relay(group).send({STEPS[0]: (1, False)})     # nobody listens yet
    listener = Listener(group, driver)
    try:
        assert listener.listening
        assert Relay(group).send({STEPS[0]: (3, False), STEPS[1]: (1, True)})
        assert listener.drain() == 1
    finally:
        listener.stop()
    assert driver.counts() == {STEPS[0]: 3, STEPS[1]: 1, STEPS[2]: 0}
    assert driver.busy()[STEPS[1]] is True


def test_count_text_eta_seconds_and_clock_text():
    from transforms.core.progress.lines import clock_text, count_text, eta_seconds

    assert count_text(1234, None, "articles", "read", True) == "1,234 articles read"
    assert count_text(567, 1234, "articles", "annotated", False) == "567/1,234 annotated"
    assert eta_seconds(300, 1000, 2.0) == 350.0              # 700 left at 2 a second
    assert eta_seconds(1000, 1000, 2.0) is None and eta_seconds(3, 10, 0.0) is None
    assert clock_text(3725.9) == "1:02:05" and clock_text(-1) == "0:00:00"


def test_two_step_instances_of_one_label_share_a_count():
    reporter, tallies, _, _ = make_reporter(interval=0)
    other = reporter.tally(STEPS[2])
    tallies[STEPS[2]].n, other.n = 3, 4
    assert "7 queries written" in reporter.report(101.0)


def test_longer_step_lists_extend_the_line():
    reporter = Reporter(STEPS[:1], 0, stream=io.StringIO(), clock=Clock())
    reporter.tally(STEPS[0], STEPS[:1]).n = 2
    assert reporter.report(101.0) == "csdata: 2 articles read · 2.0 articles/s · 0:00:01"
    reporter.tally(STEPS[2], STEPS).n = 1                    # a later step, set up later
    assert "2 articles read · 0 annotated · 1 queries written" in reporter.report(102.0)


def test_finish_prints_a_last_line_only_after_a_line_and_when_counts_moved():
    reporter, tallies, _, stream = make_reporter(interval=5.0)
    tallies[STEPS[0]].n = 3
    assert reporter.finish(101.0) is None                    # a short run stays silent
    assert reporter.report(105.0) is not None
    assert reporter.finish(106.0) is None                    # nothing new since that line
    tallies[STEPS[0]].n = 4
    assert reporter.finish(106.0).startswith("csdata: 4 articles read")   # not throttled
    assert reporter.finish(140.0) is None                    # no heartbeat at the end
    assert len(stream.getvalue().splitlines()) == 2


def test_separator_falls_back_on_an_ascii_stream():
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    reporter = Reporter(STEPS[:2], 0, stream=stream, clock=Clock())
    reporter.tally(STEPS[0]).n = 1
    assert reporter.report(102.0) == "csdata: 1 articles read | 0 annotated | 0.5 articles/s | 0:00:02"


def test_interval_and_switch_from_the_environment(monkeypatch):
    monkeypatch.setenv(INTERVAL_ENV, "0.25")
    assert default_interval() == 0.25 and ProgressLine().interval == 0.25
    monkeypatch.setenv(INTERVAL_ENV, "soon")
    assert default_interval() == 5.0
    assert ProgressLine().enabled and not ProgressLine(enabled=False).enabled
    monkeypatch.setenv(ENABLED_ENV, "0")
    assert not ProgressLine().enabled


def run_steps(monkeypatch, enabled: bool):
    """1..50 through two steps of one line, interval 0 (a line per element when enabled)."""
    monkeypatch.setenv(INTERVAL_ENV, "0")
    pipeline = beam_test_pipeline()
    line = ProgressLine(enabled=enabled)
    numbers = (pipeline | beam.Create(list(range(1, 51)))
               | "Read" >> line.step("read", "numbers"))
    evens = (numbers | beam.Filter(lambda n: n % 2 == 0)
             | "Weighed" >> line.step("weighed", "units", count=lambda n: n))
    assert_that(numbers, equal_to(list(range(1, 51))), label="numbers")
    assert_that(evens, equal_to(list(range(2, 51, 2))), label="evens")
    result = pipeline.run()
    result.wait_until_finish()
    return {c.key.metric.name: c.committed
            for c in result.metrics().query(MetricsFilter())["counters"]
            if c.key.metric.name.startswith("progress.")}


def test_progress_passes_elements_through_and_counts(monkeypatch, capsys):
    counters = run_steps(monkeypatch, enabled=True)
    assert counters == {"progress.numbers.read": 50, "progress.units.weighed": sum(range(2, 51, 2))}
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("csdata")]
    assert lines and lines[-1].startswith("csdata: 50 numbers read · 650 units weighed")


def test_disabled_progress_prints_nothing_but_still_counts(monkeypatch, capsys):
    counters = run_steps(monkeypatch, enabled=False)
    assert counters["progress.numbers.read"] == 50
    assert "csdata" not in capsys.readouterr().err


def test_format_written_counts_rows_from_parquet_footers(tmp_path):
    for table, shards in (("passages", [3, 4]), ("queries", [0])):
        (tmp_path / table).mkdir()
        for i, n in enumerate(shards):
            pq.write_table(pa.table({"x": list(range(n))}), tmp_path / table / f"part-{i}.parquet")
    text = format_written(str(tmp_path) + "/", ["passages", "queries", "rejects"])
    assert text.splitlines() == [
        f"{'table':<16}{'rows':>9}  path",
        f"{'passages':<16}{'7':>9}  {tmp_path}/passages/",
        f"{'queries':<16}{'0':>9}  {tmp_path}/queries/",
        f"{'rejects':<16}{'-':>9}  {tmp_path}/rejects/",
    ]


def test_reporters_are_per_pipeline():
    a, b = ProgressLine(), ProgressLine()
    assert a.group != b.group
    reporter_a = reporting.reporter_for(a.group, STEPS, 5.0, a.origin)
    reporter_b = reporting.reporter_for(b.group, STEPS, 5.0, b.origin)
    assert reporter_a is not reporter_b                                  # two pipelines, two reporters
    assert reporting.reporter_for(a.group, STEPS, 5.0, a.origin) is reporter_a   # one per pipeline
    assert reporting.reporter_for(b.group, STEPS, 5.0, b.origin) is reporter_b


# --------------------------------------------------------------------------- the CLI, as a user runs it

PREFIX = re.compile(r"^csdata(?: \[worker (\d+)\])?: ")
COUNT = re.compile(r"^([\d,]+)(?:/[\d,]+)? (?:(\w+) )?(\w+)$")   # "1,234 articles read", "567/1,234 annotated"


def parse(line: str):
    """(worker or "", {(unit, label): n}) of a progress line, or None for another line."""
    match = PREFIX.match(line)
    if not match or " · " not in line:
        return None
    counts, unit = {}, None
    for part in line[match.end():].split(" · "):
        count = COUNT.match(part)
        if count:
            unit = count.group(2) or unit
            counts[(unit, count.group(3))] = int(count.group(1).replace(",", ""))
    return match.group(1) or "", counts


def last_counts(stderr: str) -> dict[str, dict]:
    """Each printing process's last progress line's counts."""
    return dict(filter(None, map(parse, stderr.splitlines())))


def generate_subprocess(tmp_path: Path, env_extra: dict, *beam_args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **env_extra}
    argv = [sys.executable, "-m", "pipeline.cli.main", "record", "generate", "--output", str(tmp_path / "out"),
            "--input", str(DATA / "cnn"), "--input", str(DATA / "dailymail"),
            "--input", str(DATA / "hf_rows.jsonl"), *beam_args]
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


def written_totals(out: Path) -> dict:
    """What the run's own outputs say was read, annotated and written: the progress counts must
    equal these (summary.json's stage counts and the rows of the queries table)."""
    stages = json.loads((out / "summary.json").read_text())["stages"]
    queries = sum(pq.ParquetFile(p).metadata.num_rows for p in (out / "queries").glob("*.parquet"))
    return {("articles", "read"): stages["read"]["kept"],
            ("articles", "annotated"): stages["annotate"]["kept"], ("queries", "written"): queries}


# The sample corpus read without URL lists: 15 articles read, 12 of them annotated; its 11 .story
# files and hf_rows.jsonl are 12 files matched and read.
READ, ANNOTATED = 15, 12
FILES = {("files", "matched"): 12, ("files", "read"): 12}


@pytest.mark.slow
def test_generate_prints_progress_on_stderr_and_none_when_disabled(tmp_path):
    shown = generate_subprocess(tmp_path / "a", {INTERVAL_ENV: "0", ENABLED_ENV: "1"})
    assert "articles read" not in shown.stdout                # progress never reaches stdout
    totals = written_totals(tmp_path / "a" / "out")
    assert totals[("articles", "read")] == READ and totals[("articles", "annotated")] == ANNOTATED
    assert totals[("queries", "written")] == 57   # counted by hand in tests/record/test_record_e2e.py
    assert last_counts(shown.stderr) == {"": {**FILES, **totals}}, shown.stderr   # the driver process's line
    quiet = generate_subprocess(tmp_path / "b", {INTERVAL_ENV: "0", ENABLED_ENV: "1"}, "--quiet")
    assert "articles read" not in quiet.stderr + quiet.stdout
    assert "sentence_filter" in quiet.stdout


@pytest.mark.slow
def test_a_multi_processing_generate_prints_one_line_for_all_workers(tmp_path):
    done = generate_subprocess(tmp_path, {INTERVAL_ENV: "0", ENABLED_ENV: "1"},
                               "--direct_running_mode=multi_processing", "--direct_num_workers=2")
    last = last_counts(done.stderr)
    assert list(last) == [""], done.stderr                    # the driver's line only, no worker's
    totals = written_totals(tmp_path / "out")
    assert totals[("articles", "read")] == READ and totals[("articles", "annotated")] == ANNOTATED
    assert last[""] == {**FILES, **totals}, done.stderr


# Two worker processes: each stage's input is dealt out between them.
MULTI_PROCESS_RUN = """
import apache_beam as beam
from pipeline.engine.runner import beam_options, new_pipeline, run_pipeline
from transforms.core.progress.steps import ProgressLine

pipeline = new_pipeline(beam_options(["--direct_running_mode=multi_processing", "--direct_num_workers=2"]))
line = ProgressLine()
numbers = pipeline | beam.Create(list(range(1, 201))) | "Read" >> line.step("read", "numbers")
(numbers | beam.Reshuffle() | beam.Map(lambda n: (n % 5, n)) | beam.GroupByKey()
 | beam.FlatMap(lambda kv: kv[1]) | "Annotated" >> line.step("annotated", "numbers"))
run_pipeline(pipeline)
"""


def test_a_multi_processing_run_prints_one_line_for_all_its_workers():
    env = {**os.environ, INTERVAL_ENV: "0", ENABLED_ENV: "1"}
    done = subprocess.run([sys.executable, "-c", MULTI_PROCESS_RUN], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("csdata")]
    assert lines and all(ln.startswith("csdata: ") for ln in lines), done.stderr   # no worker's line
    counts = [parse(ln)[1] for ln in lines]
    # The driver printed the workers' counts while they ran (the pipeline's own counters come
    # only at its end), and ends on the run's totals.
    assert len(counts) >= 2 and counts[0][("numbers", "read")] > 0, lines
    assert counts[-1] == {("numbers", "read"): 200, ("numbers", "annotated"): 200}, lines
    assert lines[-1].startswith("csdata: 200 numbers read · 200/200 annotated ·"), lines


def test_the_cli_switch_is_the_variable_the_pipelines_read(monkeypatch):
    from pipeline.cli import main as cli

    monkeypatch.setenv(ENABLED_ENV, "1")
    assert ProgressLine().enabled
    monkeypatch.setenv(cli.PROGRESS_ENV, "0")     # what `--quiet` sets
    assert not ProgressLine().enabled


def test_reporting_loads_no_beam():
    assert loaded_modules("import transforms.core.progress.lines, pipeline.cli.main", ["apache_beam"]) == []


# --------------------------------------------------------------------------- lines of a long task

def test_task_log_throttles_and_forces():
    import io

    from transforms.core.progress.lines import TaskLog, process_origin

    now = [100.0]
    stream = io.StringIO()
    log = TaskLog("fold 1", True, 5.0, process_origin(), stream=stream, clock=lambda: now[0])
    assert log.say("a") is None                     # the first throttled line waits an interval
    now[0] = 104.9
    assert log.say("b") is None
    now[0] = 105.0
    assert log.say("c") == "csdata: fold 1: c"
    now[0] = 106.0
    assert log.say("d") is None
    assert log.say("e", force=True) == "csdata: fold 1: e"
    assert stream.getvalue().splitlines() == ["csdata: fold 1: c", "csdata: fold 1: e"]
    off = TaskLog("fold 1", False, 0.0, process_origin(), stream=stream)
    assert off.say("f", force=True) is None


def test_task_log_tags_a_worker():
    import io

    from transforms.core.progress.lines import TaskLog, process_origin

    host, _ = process_origin()
    stream = io.StringIO()
    TaskLog("fold 0", True, 0.0, (host, 1), stream=stream).say("x", force=True)
    assert stream.getvalue() == f"csdata [worker {os.getpid()}]: fold 0: x\n"


def test_eta_text():
    from transforms.core.progress.lines import eta_text

    # 84 s for 40 steps: 2.1 s a step, 360 steps left: 756 s = 0:12:36
    assert eta_text(40, 400, 84.0) == "40/400 steps · 2.1 s/step · ETA 0:12:36"
    assert eta_text(0, 400, 0.0) == "0/400 steps"
