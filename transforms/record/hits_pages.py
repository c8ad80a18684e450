"""ReCoRD's validation HIT (§3.4, Figure 4) on Mechanical Turk and Label Studio.

The page shows the cloze query with `@placeholder` as `hits.placeholder_display` (X) and the
passage with every candidate mention as a button (the same option number for every mention of a
candidate, as `crowd.mark_passage` numbers them); the worker presses the entity X stands for,
may tick "I guessed" and may leave feedback. References never reach the page, the batch CSV or
the tasks JSON.

**MTurk** (`template.html` + `batch.csv`): variables `triple_id`, `passage` (JSON list of
segments: a string is plain text, `[number, mention]` a candidate mention) and `query` (JSON
`[before, display, after]`). Answer fields: `entity` (the chosen option number), `entity_text`
(its text), `guessed` (`yes` when ticked, absent otherwise), `feedback` and `triple_id` (the
HIT's own id, echoed).

**Label Studio** (`config.xml` + `tasks.json`): data `triple_id`, `query` (text with X),
`passage_html` (the passage with `<mark>`ed mentions) and `options` (`[{"value": text}]`, the
dynamic choices); results `entity` (the chosen text), `guessed` (`I guessed`) and `feedback`.
"""
from __future__ import annotations

import html as html_lib
import json
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence, Union

from data_specs.models import LimitsSection
from transforms.core.crowd import pages
from transforms.core.crowd.label_studio import label_studio_tasks, read_label_studio_export
from transforms.core.crowd.mturk import read_mturk_results, template_variables, write_mturk_batch
from transforms.core.crowd.platforms import (
    LABEL_STUDIO,
    MTURK,
    PlatformResults,
    answer_text,
    check_inputs,
    left_out,
)
from transforms.core.io.untrusted import Skipped
from transforms.record.metric import normalize_answer

PathLike = Union[str, Path]
PLACEHOLDER = "@placeholder"
HIGHLIGHT = "\n@highlight\n"
ID_FIELD = "triple_id"
MTURK_ANSWERS = ("entity", "entity_text", "guessed", "feedback")
LABEL_STUDIO_RESULTS = ("entity", "guessed", "feedback")
GUESSED_CHOICE = "I guessed"

_BODY = """
<h1>Which entity is {display}?</h1>
<div class="instructions">
<p>The query below comes from a news article. One entity of the passage was replaced by
<strong>{display}</strong>. Read the query and the passage, then press the entity that
{display} stands for. Every highlighted name in the passage is a button: use the mouse, or Tab to
reach it and Enter or Space to choose it. If you cannot tell, choose your best guess and tick
"I guessed".</p>
</div>
<section aria-labelledby="query-heading">
<h2 id="query-heading">Query</h2>
<p class="query" id="query"></p>
</section>
<fieldset id="passage-group">
<legend>Passage: choose the entity that {display} stands for</legend>
<div class="passage" id="passage"></div>
</fieldset>
<p id="chosen" aria-live="polite">No entity chosen yet.</p>
<input type="hidden" id="entity" name="entity" value="">
<input type="hidden" id="entity_text" name="entity_text" value="">
<div class="choice"><input type="checkbox" id="guessed" name="guessed" value="yes">
<label for="guessed">I guessed: I am not sure of my answer</label></div>
<div class="field"><label for="feedback">Feedback (optional): is the query unclear, or is
more than one entity right?</label>
<textarea id="feedback" name="feedback"></textarea></div>
{slots}
"""

_SCRIPT = """
(function () {
  var passage = document.getElementById('passage');
  var texts = {};
  var buttons = [];
  csdataData('passage').forEach(function (segment) {
    if (typeof segment === 'string') {
      passage.appendChild(document.createTextNode(segment));
      return;
    }
    var button = document.createElement('button');
    button.type = 'button';
    button.className = 'entity';
    button.setAttribute('data-number', String(segment[0]));
    button.setAttribute('aria-pressed', 'false');
    button.textContent = segment[1];
    if (!(segment[0] in texts)) { texts[segment[0]] = segment[1]; }
    button.addEventListener('click', function () { choose(String(segment[0])); });
    buttons.push(button);
    passage.appendChild(button);
  });
  var query = csdataData('query');
  var queryNode = document.getElementById('query');
  queryNode.appendChild(document.createTextNode(query[0]));
  var blank = document.createElement('span');
  blank.className = 'blank';
  blank.textContent = query[1];
  queryNode.appendChild(blank);
  queryNode.appendChild(document.createTextNode(query[2]));
  function choose(number) {
    buttons.forEach(function (b) {
      b.setAttribute('aria-pressed', b.getAttribute('data-number') === number ? 'true' : 'false');
    });
    document.getElementById('entity').value = number;
    document.getElementById('entity_text').value = texts[number];
    document.getElementById('chosen').textContent = 'Your answer: ' + texts[number];
    document.getElementById('formError').textContent = '';
  }
  document.getElementById('mturk_form').addEventListener('submit', function (event) {
    if (!document.getElementById('entity').value) {
      event.preventDefault();
      document.getElementById('formError').textContent = 'Choose an entity in the passage first.';
      if (buttons.length) { buttons[0].focus(); }
    }
  });
})();
"""


def template(display: str) -> str:
    """The MTurk HTMLQuestion page with `${triple_id}`, `${passage}` and `${query}`."""
    shown = html_lib.escape(display)
    slots = "\n".join(pages.data_slot(v) for v in ("passage", "query"))
    body = (f'<input type="hidden" name="{ID_FIELD}" value="${{{ID_FIELD}}}">'
            + _BODY.format(display=shown, slots=slots))
    return pages.document("ReCoRD: which entity is " + display + "?", body, _SCRIPT)


def candidate_mentions(entities: Iterable[Mapping[str, Any]],
                       numbers: Mapping[str, int]) -> Iterator[tuple[int, int, int]]:
    """`(start, stop, number)` of the mentions a worker can choose, in text order: those of a
    candidate (`numbers`, keyed by the normalised answer), each not overlapping an earlier one;
    `stop` exclusive (the entities' `end` is inclusive)."""
    cursor = 0
    for ent in sorted(entities or [], key=lambda e: (e["start"], -e["end"])):
        start, stop = ent["start"], ent["end"] + 1
        n = numbers.get(normalize_answer(ent["text"]))
        if n is None or start < cursor:
            continue  # no candidate, or overlapping an already chosen mention
        yield start, stop, n
        cursor = stop


def segments(text: str, entities: Iterable[Mapping[str, Any]], numbers: Mapping[str, int]) -> list[Any]:
    """The passage as plain strings and `[number, mention]` pieces (`candidate_mentions`);
    highlights shown as bullet lines."""
    out: list[Any] = []
    cursor = 0
    for start, stop, n in candidate_mentions(entities, numbers):
        if start > cursor:
            out.append(text[cursor:start].replace(HIGHLIGHT, "\n• "))
        out.append([n, text[start:stop]])
        cursor = stop
    if cursor < len(text):
        out.append(text[cursor:].replace(HIGHLIGHT, "\n• "))
    return out


def query_parts(query: str, display: str) -> list[str]:
    before, _, after = query.partition(PLACEHOLDER)
    return [before, display, after]


def mturk_row(passage: Mapping[str, Any], query: Mapping[str, Any], numbers: Mapping[str, int],
              display: str) -> dict[str, str]:
    """One batch CSV row: exactly the template's variables."""
    return {ID_FIELD: query["query_id"],
            "passage": pages.json_value(segments(passage["text"], passage["entities"], numbers)),
            "query": pages.json_value(query_parts(query["query"], display))}


def passage_html(text: str, entities: Iterable[Mapping[str, Any]], numbers: Mapping[str, int]) -> str:
    """The passage for Label Studio's HyperText: escaped text, candidate mentions `<mark>`ed."""
    pieces = []
    for segment in segments(text, entities, numbers):
        if isinstance(segment, str):
            pieces.append(html_lib.escape(segment).replace("\n", "<br>"))
        else:
            pieces.append(f'<mark title="option {segment[0]}">{html_lib.escape(segment[1])}</mark>')
    return "<p>" + "".join(pieces) + "</p>"


def label_studio_data(passage: Mapping[str, Any], query: Mapping[str, Any], numbers: Mapping[str, int],
                      options: Sequence[str], display: str) -> dict[str, Any]:
    """One Label Studio task's data (no references)."""
    return {ID_FIELD: query["query_id"], "query": query["query"].replace(PLACEHOLDER, display),
            "passage_html": passage_html(passage["text"], passage["entities"], numbers),
            "options": [{"value": text} for text in options]}


def label_studio_config(display: str) -> str:
    """The labeling config: query, passage, the dynamic entity choices, "I guessed", feedback."""
    shown = html_lib.escape(display, quote=True)
    return f"""<View>
  <Header value="Which entity is {shown}? Read the query and the passage, then choose the entity that {shown} stands for."/>
  <Text name="query" value="$query"/>
  <HyperText name="passage" value="$passage_html"/>
  <Header value="The entity {shown} stands for"/>
  <Choices name="entity" toName="passage" value="$options" choice="single" showInline="false" required="true"/>
  <Choices name="guessed" toName="passage" choice="single">
    <Choice value="{GUESSED_CHOICE}"/>
  </Choices>
  <Header value="Feedback (optional): is the query unclear, or is more than one entity right?"/>
  <TextArea name="feedback" toName="passage" maxSubmissions="1"/>
</View>
"""


def write_export(out_dir: PathLike, fmt: str, display: str, mturk_rows: Sequence[Mapping[str, str]],
                 ls_rows: Sequence[Mapping[str, Any]]) -> list[Path]:
    """Write `template.html` + `batch.csv` (mturk) or `config.xml` + `tasks.json` (label-studio)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if fmt == MTURK:
        page = template(display)
        (out / "template.html").write_text(page, encoding="utf-8")
        write_mturk_batch(out / "batch.csv", template_variables(page), mturk_rows)
        return [out / "template.html", out / "batch.csv"]
    (out / "config.xml").write_text(label_studio_config(display), encoding="utf-8")
    (out / "tasks.json").write_text(json.dumps(label_studio_tasks(ls_rows), ensure_ascii=False, indent=1) + "\n",
                                    encoding="utf-8")
    return [out / "config.xml", out / "tasks.json"]


def result_rows(path: PathLike, fmt: str, mturk_expected: Mapping[str, Mapping[str, str]],
                ls_expected: Mapping[str, Mapping[str, Any]], limits: LimitsSection
                ) -> tuple[list[dict[str, str]], list[Skipped]]:
    """The platform's assignments as rows of the own results layout (`worker_id, assignment_id,
    triple_id, chosen_entity, feedback, submit_time, guessed`), in submission order, and what the
    file left out: withdrawn work (`rejected_assignment`, `cancelled_annotation`) and parts over
    `limits` or damaged. Results of another export are one `UserError`."""
    results: PlatformResults
    if fmt == MTURK:
        results = read_mturk_results(path, [ID_FIELD], ["entity"], limits)
        check_inputs(results.assignments, mturk_expected, ID_FIELD, path, compare=("passage", "query"))
    elif fmt == LABEL_STUDIO:
        results = read_label_studio_export(path, [ID_FIELD], limits)
        check_inputs(results.assignments, ls_expected, ID_FIELD, path, compare=("query", "passage_html"))
    else:
        raise ValueError(f"not a platform format: {fmt!r}")
    rows = [{"worker_id": a.worker_id, "assignment_id": a.assignment_id, "triple_id": a.inputs[ID_FIELD],
             "chosen_entity": answer_text(a.answers.get("entity")),
             "feedback": answer_text(a.answers.get("feedback")), "submit_time": a.submit_time,
             "guessed": "yes" if answer_text(a.answers.get("guessed")) in ("yes", GUESSED_CHOICE) else "no"}
            for a in results.assignments]
    return rows, left_out(results)
