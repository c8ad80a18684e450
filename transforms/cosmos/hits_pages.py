"""Cosmos QA's two HITs on Mechanical Turk and Label Studio: question writing (§2.2) and
validation (§2.3).

**Writing** (variables `paragraph_id`, `paragraph`): up to `hits.max_questions` questions, each
with a question type (`hits.question_types` or `other`), 1..`hits.max_correct` correct and
`hits.incorrect` incorrect answers. Answer fields, for question n: `q{n}_type`, `q{n}_question`,
`q{n}_correct{k}`, `q{n}_incorrect{k}`; question 1 is required, a later one counts when its
question is written. Each written question becomes a row of the question-sets layout
(`crowd_results.QUESTION_COLUMNS`) with set id `{assignment_id}#q{n}`.

**Validation** (variables `set_id`, `paragraph`, `question`, `options`): the five judgements of
§2.3, answer fields `paragraph_sensible`, `question_sensible` (yes/no), `chosen_answer` (the
chosen option's text), `needs_commonsense`, `answerable_without_paragraph` (yes/no). The options
are the set's answers in a seeded order (sha1 of seed, set id and answer), so their position
never tells which are correct.

MTurk variables hold JSON (`transforms.core.crowd.pages`); Label Studio data holds plain text, with
`options` as `[{"value": text}]` for the dynamic choices and the same field names as results.
"""
from __future__ import annotations

import html as html_lib
import json
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, Union

from data_specs.models import CosmosHitsSection, LimitsSection
from transforms.core.crowd import pages
from transforms.core.crowd.label_studio import label_studio_tasks, read_label_studio_export
from transforms.core.crowd.mturk import read_mturk_results, template_variables, write_mturk_batch
from transforms.core.crowd.platforms import (
    LABEL_STUDIO,
    MTURK,
    Assignment,
    PlatformResults,
    answer_text,
    check_inputs,
)
from transforms.core.hashing import seeded_digest

PathLike = Union[str, Path]
OTHER_TYPE = "other"
JUDGEMENTS = (
    ("paragraph_sensible", "1. Does the paragraph make sense?", "A readable, coherent piece of a story."),
    ("question_sensible", "2. Does the question make sense and is it about the paragraph?", ""),
    ("needs_commonsense", "4. Does answering the question need commonsense, beyond what the paragraph "
                          "states?", ""),
    ("answerable_without_paragraph", "5. Could the question be answered without reading the paragraph?", ""),
)
CHOSEN = "chosen_answer"


# --------------------------------------------------------------------------- writing (§2.2)

def _writing_question(n: int, hits: CosmosHitsSection) -> str:
    required = " required" if n == 1 else ""
    optional = "" if n == 1 else " (optional)"
    types = [*hits.question_types, OTHER_TYPE]
    radios = "".join(
        f'<div class="choice"><input type="radio" id="q{n}_type-{i}" name="q{n}_type" '
        f'value="{html_lib.escape(t, quote=True)}"{required if i == 0 else ""}>'
        f'<label for="q{n}_type-{i}">{html_lib.escape(t)}</label></div>' for i, t in enumerate(types))
    correct = "".join(
        f'<div class="field"><label for="q{n}_correct{k}">Correct answer {k}'
        f'{"" if k == 1 else " (optional)"}</label><input type="text" id="q{n}_correct{k}" '
        f'name="q{n}_correct{k}"{required if k == 1 else ""}></div>'
        for k in range(1, hits.max_correct + 1))
    incorrect = "".join(
        f'<div class="field"><label for="q{n}_incorrect{k}">Incorrect answer {k}</label>'
        f'<input type="text" id="q{n}_incorrect{k}" name="q{n}_incorrect{k}"{required}></div>'
        for k in range(1, hits.incorrect + 1))
    return (f'<fieldset id="q{n}" class="question"><legend>Question {n}{optional}</legend>'
            f'<fieldset id="q{n}_type-group"><legend>What kind of question is it?</legend>{radios}</fieldset>'
            f'<div class="field"><label for="q{n}_question">Question {n}</label>'
            f'<textarea id="q{n}_question" name="q{n}_question"{required}></textarea></div>'
            f'{correct}{incorrect}</fieldset>')


_WRITING_SCRIPT = """
(function () {
  document.getElementById('paragraph').textContent = csdataData('paragraph');
  var form = document.getElementById('mturk_form');
  form.addEventListener('input', function () { document.getElementById('formError').textContent = ''; });
  form.addEventListener('submit', function (event) {
    var questions = form.querySelectorAll('fieldset.question');
    for (var i = 1; i < questions.length; i++) {
      var fields = questions[i].querySelectorAll('input[type=text], textarea');
      var filled = Array.prototype.some.call(fields, function (f) { return f.value.trim() !== ''; });
      if (!filled) { continue; }
      var n = i + 1;
      var missing = [];
      if (!form.elements['q' + n + '_question'].value.trim()) { missing.push('the question'); }
      if (!form.elements['q' + n + '_correct1'].value.trim()) { missing.push('a correct answer'); }
      Array.prototype.forEach.call(questions[i].querySelectorAll('input[name*=_incorrect]'), function (f) {
        if (!f.value.trim() && missing.indexOf('every incorrect answer') < 0) { missing.push('every incorrect answer'); }
      });
      if (!form.querySelector('input[name=q' + n + '_type]:checked')) { missing.push('its type'); }
      if (missing.length) {
        event.preventDefault();
        document.getElementById('formError').textContent = 'Question ' + n + ' needs ' + missing.join(', ') +
          ' (or leave it empty).';
        form.elements['q' + n + '_question'].focus();
        return;
      }
    }
  });
})();
"""


def writing_template(hits: CosmosHitsSection) -> str:
    """The question-writing HTMLQuestion page (`${paragraph_id}`, `${paragraph}`)."""
    types = ", ".join(hits.question_types)
    body = (f'<input type="hidden" name="paragraph_id" value="${{paragraph_id}}">'
            f'<h1>Write questions that need commonsense</h1>'
            f'<div class="instructions"><p>Read the paragraph and write up to {hits.max_questions} questions '
            f'whose answers need commonsense reasoning: about {html_lib.escape(types)}. Do not ask what the '
            f'paragraph states word for word. For each question write 1 to {hits.max_correct} correct answers '
            f'and {hits.incorrect} incorrect answers that are plausible and about as long as the correct '
            f'ones.</p></div>'
            f'<section aria-labelledby="paragraph-heading"><h2 id="paragraph-heading">Paragraph</h2>'
            f'<p class="passage" id="paragraph"></p></section>'
            + "".join(_writing_question(n, hits) for n in range(1, hits.max_questions + 1))
            + pages.data_slot("paragraph"))
    return pages.document("Cosmos QA: write commonsense questions", body, _WRITING_SCRIPT)


def writing_config(hits: CosmosHitsSection) -> str:
    """The Label Studio labeling config of the writing task (same field names as the page)."""
    parts = ['<View>', f'  <Header value="Write up to {hits.max_questions} questions that need commonsense '
             f'about the paragraph, each with 1 to {hits.max_correct} correct and {hits.incorrect} '
             'incorrect answers."/>', '  <Text name="paragraph" value="$paragraph"/>']
    for n in range(1, hits.max_questions + 1):
        required = ' required="true"' if n == 1 else ""
        parts.append(f'  <Header value="Question {n}{"" if n == 1 else " (optional)"}"/>')
        parts.append(f'  <Choices name="q{n}_type" toName="paragraph" choice="single"{required}>')
        parts += [f'    <Choice value="{html_lib.escape(t, quote=True)}"/>' for t in [*hits.question_types, OTHER_TYPE]]
        parts.append("  </Choices>")
        fields = [(f"q{n}_question", "Question", n == 1)]
        fields += [(f"q{n}_correct{k}", f"Correct answer {k}", n == 1 and k == 1) for k in range(1, hits.max_correct + 1)]
        fields += [(f"q{n}_incorrect{k}", f"Incorrect answer {k}", n == 1) for k in range(1, hits.incorrect + 1)]
        for name, label, needed in fields:
            parts.append(f'  <TextArea name="{name}" toName="paragraph" placeholder="{label}" rows="1" '
                         f'maxSubmissions="1"{" required=" + chr(34) + "true" + chr(34) if needed else ""}/>')
    parts.append("</View>")
    return "\n".join(parts) + "\n"


def writing_rows(paragraphs: Iterable[Mapping[str, Any]]) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, Any]]]:
    """MTurk batch rows and Label Studio data of the writing task, by paragraph id."""
    mturk, ls = {}, {}
    for p in paragraphs:
        mturk[p["paragraph_id"]] = {"paragraph_id": p["paragraph_id"], "paragraph": pages.json_value(p["text"])}
        ls[p["paragraph_id"]] = {"paragraph_id": p["paragraph_id"], "paragraph": p["text"]}
    return mturk, ls


def question_rows(assignments: Iterable[Assignment], hits: CosmosHitsSection) -> list[dict[str, str]]:
    """Each written question of each assignment as a row of the question-sets layout."""
    rows = []
    for a in assignments:
        for n in range(1, hits.max_questions + 1):
            question = answer_text(a.answers.get(f"q{n}_question")).strip()
            if not question:
                continue
            row = {"hit_id": a.hit_id, "assignment_id": a.assignment_id, "worker_id": a.worker_id,
                   "paragraph_id": a.inputs["paragraph_id"], "question_number": str(n),
                   "question_type": answer_text(a.answers.get(f"q{n}_type")).strip(), "question": question,
                   "submit_time": a.submit_time}
            for k in range(1, hits.max_correct + 1):
                row[f"correct_{k}"] = answer_text(a.answers.get(f"q{n}_correct{k}")).strip()
            for k in range(1, hits.incorrect + 1):
                row[f"incorrect_{k}"] = answer_text(a.answers.get(f"q{n}_incorrect{k}")).strip()
            rows.append(row)
    return rows


# --------------------------------------------------------------------------- validation (§2.3)

_VALIDATION_SCRIPT = """
(function () {
  document.getElementById('paragraph').textContent = csdataData('paragraph');
  document.getElementById('question').textContent = csdataData('question');
  var group = document.getElementById('chosen_answer-options');
  csdataData('options').forEach(function (option, i) {
    var row = document.createElement('div');
    row.className = 'choice';
    var input = document.createElement('input');
    input.type = 'radio';
    input.name = 'chosen_answer';
    input.id = 'chosen_answer-' + i;
    input.value = option;
    if (i === 0) { input.required = true; }
    var label = document.createElement('label');
    label.htmlFor = input.id;
    label.textContent = option;
    row.appendChild(input);
    row.appendChild(label);
    group.appendChild(row);
  });
})();
"""


def validation_template() -> str:
    """The validation HTMLQuestion page (`${set_id}`, `${paragraph}`, `${question}`, `${options}`)."""
    first, second, third, fourth = (pages.yes_no_fieldset(name, legend, hint) for name, legend, hint in JUDGEMENTS)
    body = ('<input type="hidden" name="set_id" value="${set_id}">'
            '<h1>Check a reading question</h1>'
            '<div class="instructions"><p>Read the paragraph and the question, then answer the five '
            'questions below. Choose the answer you think is right even if you are unsure.</p></div>'
            '<section aria-labelledby="paragraph-heading"><h2 id="paragraph-heading">Paragraph</h2>'
            '<p class="passage" id="paragraph"></p></section>'
            '<section aria-labelledby="question-heading"><h2 id="question-heading">Question</h2>'
            '<p class="query" id="question"></p></section>'
            f'{first}{second}'
            '<fieldset id="chosen_answer-group"><legend>3. Which answer is correct?</legend>'
            '<div id="chosen_answer-options"></div></fieldset>'
            f'{third}{fourth}'
            + "".join(pages.data_slot(v) for v in ("paragraph", "question", "options")))
    return pages.document("Cosmos QA: check a reading question", body, _VALIDATION_SCRIPT)


def validation_config() -> str:
    """The Label Studio labeling config of the validation task."""
    parts = ["<View>", '  <Header value="Read the paragraph and the question, then answer the five questions."/>',
             '  <Text name="paragraph" value="$paragraph"/>', '  <Text name="question" value="$question"/>']

    def yes_no(name: str, legend: str) -> None:
        parts.extend([f'  <Header value="{html_lib.escape(legend, quote=True)}"/>',
                      f'  <Choices name="{name}" toName="question" choice="single" required="true">',
                      '    <Choice value="yes"/>', '    <Choice value="no"/>', "  </Choices>"])

    yes_no(*JUDGEMENTS[0][:2])
    yes_no(*JUDGEMENTS[1][:2])
    parts += ['  <Header value="3. Which answer is correct?"/>',
              f'  <Choices name="{CHOSEN}" toName="question" value="$options" choice="single" required="true"/>']
    yes_no(*JUDGEMENTS[2][:2])
    yes_no(*JUDGEMENTS[3][:2])
    parts.append("</View>")
    return "\n".join(parts) + "\n"


def shuffled_options(set_id: str, options: Sequence[str], seed: int) -> list[str]:
    """A set's answers in the seeded order the validation page shows them in."""
    return sorted(options, key=lambda o: (seeded_digest(seed, "validation", set_id, o), o))


def validation_rows(sets: Iterable[Any], paragraphs: Mapping[str, Mapping[str, Any]],
                    seed: int) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, Any]]]:
    """MTurk batch rows and Label Studio data of the validation task, by set id (no labels)."""
    mturk, ls = {}, {}
    for qset in sets:
        options = shuffled_options(qset.set_id, qset.options, seed)
        text = paragraphs[qset.paragraph_id]["text"]
        mturk[qset.set_id] = {"set_id": qset.set_id, "paragraph": pages.json_value(text),
                              "question": pages.json_value(qset.question), "options": pages.json_value(options)}
        ls[qset.set_id] = {"set_id": qset.set_id, "paragraph": text, "question": qset.question,
                           "options": [{"value": o} for o in options]}
    return mturk, ls


def judgement_rows(assignments: Iterable[Assignment]) -> list[dict[str, str]]:
    """Each validation assignment as a row of the validations layout."""
    return [{"set_id": a.inputs["set_id"], "worker_id": a.worker_id, "assignment_id": a.assignment_id,
             **{name: answer_text(a.answers.get(name)).strip() for name, _, _ in JUDGEMENTS},
             CHOSEN: answer_text(a.answers.get(CHOSEN)).strip(), "submit_time": a.submit_time}
            for a in assignments]


# --------------------------------------------------------------------------- files

def write_export(out_dir: PathLike, fmt: str, page: str, config: str, mturk_rows: Sequence[Mapping[str, str]],
                 ls_rows: Sequence[Mapping[str, Any]]) -> list[Path]:
    """`template.html` + `batch.csv` (mturk) or `config.xml` + `tasks.json` (label-studio)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if fmt == MTURK:
        (out / "template.html").write_text(page, encoding="utf-8")
        write_mturk_batch(out / "batch.csv", template_variables(page), mturk_rows)
        return [out / "template.html", out / "batch.csv"]
    (out / "config.xml").write_text(config, encoding="utf-8")
    (out / "tasks.json").write_text(json.dumps(label_studio_tasks(ls_rows), ensure_ascii=False, indent=1) + "\n",
                                    encoding="utf-8")
    return [out / "config.xml", out / "tasks.json"]


def read_assignments(path: PathLike, fmt: str, id_field: str, required_answers: Sequence[str],
                     mturk_expected: Mapping[str, Mapping[str, str]], ls_expected: Mapping[str, Mapping[str, Any]],
                     compare: Sequence[str], limits: LimitsSection) -> PlatformResults:
    """A platform results file read within `limits` (assignments in submission order, withdrawn
    work, skipped parts); another export's results are a UserError."""
    if fmt == MTURK:
        results = read_mturk_results(path, [id_field], required_answers, limits)
    elif fmt == LABEL_STUDIO:
        results = read_label_studio_export(path, [id_field], limits)
    else:
        raise ValueError(f"not a platform format: {fmt!r}")
    check_inputs(results.assignments, mturk_expected if fmt == MTURK else ls_expected, id_field, path, compare)
    return results
