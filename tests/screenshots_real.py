"""The README's report screenshots of real-sample runs (run by hand; needs ../shared/samples).

    .venv/bin/python tests/screenshots_real.py [--samples ../shared/samples] [--work DIR]

Runs `csdata record generate` on the 20 CNN stories, `csdata cosmos paragraphs` on the Blog
Authorship Corpus sample and `csdata protoqa release` on the ProtoQA dev set, writes each run's
report with `--sample-rows 0` (no text of the samples on the page: their text must never enter
the repository), checks that each page's Table 1 shows the numbers `csdata stats` prints and
that no sample text is on it, and saves a full-page screenshot in headless Chromium with every
example-reject list closed: docs/screenshots/report_real_{record,cosmos,protoqa}.png.
"""
from __future__ import annotations

import argparse
import contextlib
import html
import io
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.cli.main import main  # noqa: E402

SHOTS = ROOT / "docs" / "screenshots"
WIDTH = 1100


def runs(samples: Path, work: Path) -> dict[str, tuple[Path, list[str]]]:
    """name -> (run directory, the csdata command line that writes it)."""
    return {
        "record": (work / "record", ["record", "generate", "--input", str(samples / "cnndm" / "stories"),
                                     "--output", str(work / "record")]),
        "cosmos": (work / "cosmos", ["cosmos", "paragraphs", "--input", str(samples / "blogs"),
                                     "--output", str(work / "cosmos")]),
        "protoqa": (work / "protoqa", ["protoqa", "release", "--input",
                                       str(samples / "protoqa" / "dev.crowdsourced.jsonl"),
                                       "--output", str(work / "protoqa")]),
    }


def stats_text(run: Path) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["-q", "stats", str(run)]) == 0
    return out.getvalue()


def stats_cells(name: str, text: str) -> list[list[str]]:
    """(statistic, this run[, detail]) per row of `csdata stats`' table for the dataset."""
    lines = text.splitlines()
    if name == "record":
        return [re.split(r"\s{2,}", line.strip())[:2] for line in text.split("-\n", 1)[1].strip().splitlines()]
    if name == "cosmos":
        body = lines[3:lines.index("")]
        return [[line[:34].strip(), line[34:50].strip()] for line in body]
    rows = []
    for line in lines[1:6]:
        note = line[38:].strip()
        rows.append([line[:28].strip(), line[28:38].strip(), note[1:-1] if note else "-"])
    return rows


def page_cells(name: str, page: str) -> list[list[str]]:
    """The same cells from the report's Table 1 (its first table)."""
    table = page[page.index("<table>"):page.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", table)[1:]
    cells = [[html.unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)] for row in rows]
    return [c[:3] if name == "protoqa" else c[:2] for c in cells]


def sample_texts(name: str, run: Path) -> list[str]:
    """Texts of the run that must not be on a `--sample-rows 0` page."""
    from transforms.core.io.tables import read_table

    if name == "record":
        return read_table(run, "queries", ["query"]).column("query").to_pylist()
    if name == "cosmos":
        return [t[:60] for t in read_table(run, "paragraphs", ["text"]).column("text").to_pylist()]
    return [json.loads(line)["question"]["normalized"]
            for line in (run / "dev.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def screenshot(page: Path, target: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 f"--window-size={WIDTH},900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=shutil.which("chromedriver")), options=options)
    try:
        driver.get(page.as_uri())
        assert driver.execute_script("return document.querySelectorAll('details[open]').length") == 0
        errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(WIDTH, height + 120)
        target.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(target))
    finally:
        driver.quit()


def run(samples: Path, work: Path) -> int:
    for name, (run_dir, command) in runs(samples, work).items():
        print(f"csdata {' '.join(command)}")
        assert main(["-q", *command]) == 0, command
        out = work / f"report_{name}"
        assert main(["report", str(run_dir), "--output", str(out), "--sample-rows", "0"]) == 0
        page = (out / "index.html").read_text(encoding="utf-8")
        ours, printed = page_cells(name, page), stats_cells(name, stats_text(run_dir))
        assert ours == printed, (name, ours, printed)
        leaked = [t for t in sample_texts(name, run_dir) if t and html.escape(t) in page]
        assert not leaked, f"{name}: sample text on the page: {len(leaked)} strings"
        target = SHOTS / f"report_real_{name}.png"
        screenshot(out / "index.html", target)
        print(f"  Table 1 equals csdata stats ({len(ours)} rows); no sample text; {target.relative_to(ROOT)}")
    return 0


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=Path, default=ROOT.parent / "shared" / "samples")
    parser.add_argument("--work", type=Path, help="folder for the runs and pages (default: a temporary one)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse_args()
    if not (args.samples / "cnndm" / "stories").is_dir():
        sys.exit(f"no real samples at {args.samples} (see its README.md); nothing to do")
    if args.work:
        sys.exit(run(args.samples, args.work))
    with tempfile.TemporaryDirectory(prefix="csdata-real-report-") as tmp:
        sys.exit(run(args.samples, Path(tmp)))
