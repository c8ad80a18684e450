"""ProtoQA answer collection on a crowd platform (`csdata protoqa hits ...`, paper §3.1).

Each question is one task; the paper had 100 workers type one answer each, so a requester sets
100 assignments per HIT (MTurk) or 100 annotations per task (Label Studio's overlap). Plain
Python: a release has ~150 questions and ~15,000 answers.

**MTurk** (`template.html` + `batch.csv`): variables `question_id` (echoed back as the answer
field `question_id`) and `question` (JSON text, read by the page from a data slot; see
transforms/core/crowd/pages.py). Answer field: `answer`, the worker's text.

**Label Studio** (`config.xml` + `tasks.json`): data `question_id` and `question` (plain text);
the TextArea result `answer`.

**Import**: an MTurk batch results CSV or a Label Studio JSON export becomes the crowd answers
CSV that `protoqa cluster-prep` reads: `question_id, question, answer` plus the provenance
columns `worker_id, assignment_id, hit_id, submit_time` (cluster-prep ignores them), one row per
assignment. Nothing is dropped silently; each left-out assignment is a reject of the stage
`import_answers`: `rejected_assignment` (MTurk status Rejected), `cancelled_annotation` (Label
Studio), `empty_answer` (blank after whitespace is collapsed) and `duplicate_worker`: a worker
counts once per question, with the first answer they submitted (submission order; the file's
order on equal times), as the paper's 100 answers come from 100 different workers. Rows or
tasks of the results file over the spec's `limits`, or damaged, are rejects of the same stage
(`record_too_large`, `field_too_large`, `not_utf8`, `malformed_record`: transforms/core/io/untrusted.py).
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from data_specs.models import LimitsSection
from transforms.core.accounting import Reject
from transforms.core.crowd import pages
from transforms.core.crowd.label_studio import label_studio_tasks, read_label_studio_export
from transforms.core.crowd.mturk import (
    fill_template,
    read_mturk_results,
    template_variables,
    write_mturk_batch,
)
from transforms.core.crowd.platforms import (
    CANCELLED_ANNOTATION,
    LABEL_STUDIO,
    MTURK,
    Assignment,
    PlatformResults,
    answer_text,
    check_inputs,
    detect_results_format,
    withdrawn_reason,
)
from transforms.core.errors import UserError
from transforms.core.io.cells import escaped_dict
from transforms.core.io.untrusted import parse_json

IMPORT = "import_answers"

# The task's input variables and its one answer field (MTurk: Input.<var>, Answer.answer).
INPUTS = ("question_id", "question")
ANSWER = "answer"

TEMPLATE_FILE = "template.html"
BATCH_FILE = "batch.csv"
LS_CONFIG_FILE = "config.xml"
LS_TASKS_FILE = "tasks.json"

ANSWER_COLUMNS = ["question_id", "question", "answer", "worker_id", "assignment_id", "hit_id",
                  "submit_time"]
REJECT_COLUMNS = ["stage", "reason", "record_id", "detail"]

_BODY = """
<h1>Give the first answer that comes to mind</h1>
<div class="instructions">
<p>Read the question and type one short answer, the first that comes to mind, as you would in
a game show. There is no wrong answer, but please give a real one.</p>
</div>
<input type="hidden" name="question_id" value="${question_id}">
<p class="question" id="question"></p>
<div class="field"><label for="answer">Your answer</label>
<input type="text" id="answer" name="answer" required maxlength="100" autocomplete="off"
       aria-describedby="answer-hint">
<p class="hint" id="answer-hint">One answer, a few words at most.</p></div>
{slots}
"""

_SCRIPT = """
(function () {
  document.getElementById('question').textContent = csdataData('question');
  document.getElementById('answer').addEventListener('input', function () {
    document.getElementById('formError').textContent = '';
  });
  document.getElementById('mturk_form').addEventListener('submit', function (event) {
    var box = document.getElementById('answer');
    box.value = box.value.replace(/\\s+/g, ' ').trim();
    if (!box.value) {
      event.preventDefault();
      document.getElementById('formError').textContent = 'Please type an answer first.';
      box.focus();
    }
  });
})();
"""

_STYLE = ('<style>.question { font-size: 1.3rem; font-weight: 600; margin: 1rem 0; } '
          '.hint { color: #444; font-size: .9rem; margin: .25rem 0 0; }</style>')

LABEL_STUDIO_CONFIG = """<View>
  <Header value="Give the first answer that comes to mind: read the question and type one short answer."/>
  <Text name="question" value="$question"/>
  <TextArea name="answer" toName="question" placeholder="One answer, a few words at most"
            rows="1" maxSubmissions="1" required="true"/>
</View>
"""


def template() -> str:
    """The MTurk HTMLQuestion page: `${question_id}` (echoed as the answer field `question_id`),
    `${question}` (JSON text, read from a data slot) and the text field `answer`."""
    body = _STYLE + _BODY.replace("{slots}", pages.data_slot("question"))
    return pages.document("Answer a question", body, _SCRIPT)


def mturk_row(question: HitQuestion) -> dict[str, str]:
    """One batch CSV row: exactly the template's variables (the question as JSON)."""
    return {"question_id": question.question_id, "question": pages.json_value(question.question)}


@dataclass(frozen=True)
class HitQuestion:
    """One task: a question id and the question as workers see it."""

    question_id: str
    question: str

    def row(self) -> dict[str, str]:
        """The task's variables, as a batch row."""
        return {"question_id": self.question_id, "question": self.question}


def read_questions(path: str) -> list[HitQuestion]:
    """The questions of a `protoqa questions` run (its questions.jsonl) or of a protoqa-data JSONL
    file (ids from `metadata.id`, text from `question.original`), in file order."""
    source = Path(path)
    if source.is_dir():
        source = source / "questions.jsonl"
    if not source.is_file():
        raise UserError(f"{path}: no questions (give a `protoqa questions` output directory or a "
                        f"protoqa-data JSONL file)")
    questions, seen = [], set()
    try:
        lines = source.read_bytes().decode("utf-8-sig").splitlines()
    except UnicodeDecodeError as error:
        raise UserError(f"{source}: not UTF-8 (byte {error.start}); protoqa-data JSONL is UTF-8") from None
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = parse_json(line)
            qid, text = str(row["metadata"]["id"]), row["question"]["original"]
        except (ValueError, KeyError, TypeError):
            raise UserError(f"{source}:{n}: not a protoqa-data row (needs metadata.id and "
                            f"question.original)") from None
        if not isinstance(text, str) or not text.strip():
            raise UserError(f"{source}:{n}: question {qid!r} has no text")
        if qid in seen:
            raise UserError(f"{source}:{n}: question id {qid!r} appears twice")
        seen.add(qid)
        questions.append(HitQuestion(qid, " ".join(text.split())))
    if not questions:
        raise UserError(f"{source}: no questions")
    return questions


def export_mturk(questions: Sequence[HitQuestion], output: Path) -> dict[str, str]:
    """template.html and batch.csv (its header is exactly the template's variables); the paths."""
    output.mkdir(parents=True, exist_ok=True)
    page = template()
    target = output / TEMPLATE_FILE
    target.write_text(page, encoding="utf-8")
    batch = output / BATCH_FILE
    write_mturk_batch(batch, template_variables(page), [mturk_row(q) for q in questions])
    return {"template": str(target), "batch": str(batch)}


def export_label_studio(questions: Sequence[HitQuestion], output: Path) -> dict[str, str]:
    """config.xml (the labeling interface) and tasks.json (one task per question); the paths."""
    output.mkdir(parents=True, exist_ok=True)
    config = output / LS_CONFIG_FILE
    config.write_text(LABEL_STUDIO_CONFIG, encoding="utf-8")
    tasks = output / LS_TASKS_FILE
    tasks.write_text(json.dumps(label_studio_tasks([q.row() for q in questions]), indent=1,
                                ensure_ascii=False) + "\n", encoding="utf-8")
    return {"config": str(config), "tasks": str(tasks)}


def exported_tasks(hits_dir: str) -> tuple[str, dict[str, dict[str, str]]]:
    """(format, question_id -> the task's inputs as exported) of an export directory."""
    folder = Path(hits_dir)
    if (folder / BATCH_FILE).is_file():
        with open(folder / BATCH_FILE, encoding="utf-8-sig", newline="") as handle:
            return MTURK, {r["question_id"]: dict(r) for r in csv.DictReader(handle)}
    if (folder / LS_TASKS_FILE).is_file():
        tasks = json.loads((folder / LS_TASKS_FILE).read_text(encoding="utf-8"))
        return LABEL_STUDIO, {str(t["data"]["question_id"]): dict(t["data"]) for t in tasks}
    raise UserError(f"{hits_dir}: no {BATCH_FILE} or {LS_TASKS_FILE} (give the directory "
                    f"`protoqa hits export` wrote)")


def exported_questions(hits_dir: str) -> list[HitQuestion]:
    """The questions of an export directory, in its order."""
    fmt, tasks = exported_tasks(hits_dir)
    return [HitQuestion(qid, question_text(row["question"], fmt)) for qid, row in tasks.items()]


def question_text(value: str, fmt: str) -> str:
    """The question as shown: MTurk inputs hold it as JSON text (the page's data slot)."""
    if fmt == MTURK:
        try:
            decoded = json.loads(value)
        except ValueError:
            decoded = value                   # a batch edited by hand: plain text
        value = decoded if isinstance(decoded, str) else value
    return " ".join(value.split())


def results_format(path: str, fmt: str = "auto") -> str:
    """`mturk` or `label-studio`: `fmt`, or detected from the file; another layout is an error."""
    if fmt == "auto":
        fmt = detect_results_format(path)
    if fmt not in (MTURK, LABEL_STUDIO):
        raise UserError(f"{path}: neither an MTurk results CSV (HITId, AssignmentId, ... columns) "
                        f"nor a Label Studio JSON export")
    return fmt


def read_results(path: str, fmt: str, limits: LimitsSection) -> PlatformResults:
    """The results file read within `limits`: submitted assignments (in submission order),
    withdrawn ones and skipped parts, checked for the task's input and answer fields (a missing
    one is one `UserError`)."""
    if fmt == MTURK:
        return read_mturk_results(path, INPUTS, (ANSWER,), limits)
    return read_label_studio_export(path, INPUTS, limits)


def platform_rejects(path: str, results: PlatformResults) -> list[Reject]:
    """The work the platform readers leave out, as rejects: MTurk assignments with status
    `Rejected` (`rejected_assignment`), cancelled Label Studio annotations
    (`cancelled_annotation`), and parts of the file over the spec's `limits` or damaged
    (`record_too_large`, `field_too_large`, `not_utf8`, `malformed_record`; the record id is
    `FILE:line N` or `FILE:task ID`)."""
    rejects = []
    for a in results.withdrawn:
        reason = withdrawn_reason(a)
        rejects.append(Reject(IMPORT, reason, f"{a.inputs.get('question_id', '')}#{a.assignment_id}",
                              f"{'annotator' if reason == CANCELLED_ANNOTATION else 'worker'} {a.worker_id}"))
    rejects.extend(Reject(IMPORT, s.reason, s.record_id(path), s.detail) for s in results.skipped)
    return rejects


def check_foreign(assignments: Sequence[Assignment], hits_dir: str, fmt: str, results: str) -> None:
    """Results of a question the export does not hold, or showing it another text, belong to
    another batch: one `UserError` naming the assignment and HIT."""
    exported_fmt, tasks = exported_tasks(hits_dir)
    if exported_fmt != fmt:
        raise UserError(f"{results}: {fmt} results, but {hits_dir} is a {exported_fmt} export")
    check_inputs(assignments, tasks, "question_id", results, compare=("question",))


def answers_from_assignments(assignments: Sequence[Assignment], fmt: str
                             ) -> tuple[list[dict], list[Reject]]:
    """Crowd answer rows (`ANSWER_COLUMNS`) and rejects from assignments in submission order:
    one row per assignment, only a worker's first answer to a question (`duplicate_worker`
    otherwise), blank answers rejected (`empty_answer`)."""
    rows: list[dict] = []
    rejects: list[Reject] = []
    first: dict[tuple[str, str], str] = {}
    for a in assignments:
        qid = a.inputs.get("question_id", "")
        record_id = f"{qid}#{a.assignment_id}"
        answer = " ".join(answer_text(a.answers.get(ANSWER)).split())
        if not answer:
            rejects.append(Reject(IMPORT, "empty_answer", record_id, f"worker {a.worker_id}"))
            continue
        key = (qid, a.worker_id)
        if key in first:
            rejects.append(Reject(IMPORT, "duplicate_worker", record_id,
                                  f"worker {a.worker_id} answered first in {first[key]}"))
            continue
        first[key] = a.assignment_id
        rows.append({"question_id": qid, "question": question_text(a.inputs.get("question", ""), fmt),
                     "answer": answer, "worker_id": a.worker_id, "assignment_id": a.assignment_id,
                     "hit_id": a.hit_id, "submit_time": a.submit_time})
    return rows, rejects


def import_results(path: str, limits: LimitsSection, fmt: str = "auto", hits_dir: Optional[str] = None
                   ) -> tuple[list[dict], list[Reject], int]:
    """(answer rows, rejects, assignments and skipped parts in the file) of a results file read
    within `limits`; with `hits_dir`, results of another export are an error."""
    fmt = results_format(path, fmt)
    results = read_results(path, fmt, limits)
    if hits_dir:
        check_foreign(results.assignments, hits_dir, fmt, path)
    skipped = platform_rejects(path, results)
    rows, rejects = answers_from_assignments(results.assignments, fmt)
    return rows, skipped + rejects, len(results.assignments) + len(skipped)


def write_answers(path: str, rows: Sequence[dict]) -> None:
    """The crowd answers CSV (`cluster-prep --answers`)."""
    _write_csv(path, ANSWER_COLUMNS, rows)


def rejects_path(path: str) -> str:
    """Where the import's rejects go: beside the answers, `<stem>.rejects.csv`."""
    target = Path(path)
    return str(target.with_name(f"{target.stem}.rejects.csv"))


def write_rejects(path: str, rejects: Sequence[Reject]) -> None:
    """The rejects CSV (`stage, reason, record_id, detail`)."""
    _write_csv(path, REJECT_COLUMNS, [r.row() for r in rejects])


def _write_csv(path: str, columns: Sequence[str], rows: Iterable[dict]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore",
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows(escaped_dict(row) for row in rows)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    partial.write_text(buffer.getvalue(), encoding="utf-8")
    partial.replace(target)     # a failed run never leaves half a file under the final name


def preview_page(questions: Sequence[HitQuestion], index: int = 0) -> str:
    """The task page as MTurk shows it for question `index`."""
    if not 0 <= index < len(questions):
        raise UserError(f"--row {index} is out of range (0-{len(questions) - 1})")
    return fill_template(template(), mturk_row(questions[index]))
