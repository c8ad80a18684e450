"""Shared pieces of the crowd task pages: one HTML document, MTurk's submit plumbing, data slots.

A page is a complete HTMLQuestion document with no external resources. Data reaches it through
`${variable}` placeholders inside hidden `<textarea>` slots (`data_slot`): whether the platform
HTML-escapes a value or not, the textarea gives the script back the exact text, and values are
JSON with `<`, `>` and `&` escaped (`json_value`), so no value can close the slot or inject
markup. The form posts to `${turkSubmitTo}/mturk/externalSubmit` with the `assignmentId` MTurk
appends to the page's URL; on MTurk's preview (`ASSIGNMENT_ID_NOT_AVAILABLE`) submitting is off.
"""
from __future__ import annotations

import html as html_lib
import json
from typing import Any

STYLE = """
*, *::before, *::after { box-sizing: border-box; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1a1a1a;
       background: #fff; margin: 0; padding: 1rem; }
main { max-width: 52rem; margin: 0 auto; }
h1 { font-size: 1.35rem; margin: 0 0 .5rem; }
h2, legend { font-size: 1.1rem; font-weight: 600; }
p, li, label, legend, td, th { overflow-wrap: anywhere; }
fieldset { border: 1px solid #8a8a8a; border-radius: 6px; margin: 0 0 1rem; padding: .75rem 1rem; min-width: 0; }
legend { padding: 0 .35rem; }
.instructions { background: #f3f6fa; border-left: 4px solid #2a5db0; padding: .5rem 1rem; margin: 0 0 1rem; }
.passage { white-space: pre-wrap; }
textarea, input[type=text], select { font: inherit; width: 100%; max-width: 100%; padding: .4rem;
       border: 1px solid #6b6b6b; border-radius: 4px; }
textarea { min-height: 4.5rem; }
.field { margin: 0 0 .75rem; }
.field label { display: block; font-weight: 500; }
.choice { display: flex; gap: .5rem; align-items: flex-start; margin: .25rem 0; }
.choice input { margin-top: .35rem; flex: none; }
button, input[type=submit] { font: inherit; cursor: pointer; }
button.entity { border: 1px solid #2a5db0; background: #e8effb; color: #12356f; border-radius: 4px;
       padding: 0 .25rem; margin: 0; white-space: normal; text-align: left; line-height: 1.4; }
button.entity[aria-pressed=true] { background: #12356f; color: #fff; }
.number { font-size: .75em; vertical-align: super; }
.query { font-size: 1.05rem; background: #fffbe6; border: 1px solid #c9a400; border-radius: 4px; padding: .5rem; }
.blank { font-weight: 700; text-decoration: underline; }
#submitButton { background: #1f6f3a; color: #fff; border: 0; border-radius: 4px; padding: .6rem 1.4rem; }
#submitButton:disabled { background: #8a8a8a; cursor: not-allowed; }
.error { color: #a00000; font-weight: 600; }
:focus-visible { outline: 3px solid #d4630b; outline-offset: 2px; }
"""

SUBMIT_SCRIPT = """
function csdataParam(name) {
  var match = new RegExp('[?&]' + name + '=([^&]*)').exec(window.location.search);
  return match ? decodeURIComponent(match[1].replace(/\\+/g, ' ')) : '';
}
function csdataData(name) {
  var slot = document.getElementById('data-' + name);
  return JSON.parse(slot.value);
}
(function () {
  var form = document.getElementById('mturk_form');
  var assignment = csdataParam('assignmentId');
  document.getElementById('assignmentId').value = assignment;
  var submitTo = csdataParam('turkSubmitTo');
  if (submitTo) { form.action = submitTo.replace(/\\/$/, '') + '/mturk/externalSubmit'; }
  if (assignment === 'ASSIGNMENT_ID_NOT_AVAILABLE') {
    var button = document.getElementById('submitButton');
    button.disabled = true;
    button.value = 'Accept the HIT to submit';
  }
})();
"""


def json_value(value: Any) -> str:
    """`value` as JSON safe inside any HTML context: `<`, `>` and `&` as \\u escapes."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def data_slot(variable: str) -> str:
    """A hidden, unsubmitted textarea holding `${variable}` (JSON), read by `csdataData(name)`."""
    return (f'<textarea id="data-{variable}" hidden readonly aria-hidden="true" tabindex="-1">'
            f"${{{variable}}}</textarea>")


def document(title: str, body: str, script: str) -> str:
    """A complete task page: `body` inside MTurk's form (with `assignmentId` and the submit
    button), the shared style and `script` after the submit plumbing."""
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html_lib.escape(title)}</title>
<style>{STYLE}</style>
</head>
<body>
<main>
<form id="mturk_form" name="mturk_form" method="post" action="https://www.mturk.com/mturk/externalSubmit">
<input type="hidden" id="assignmentId" name="assignmentId" value="">
{body}
<p id="formError" class="error" role="alert"></p>
<p><input type="submit" id="submitButton" value="Submit"></p>
</form>
</main>
<script>{SUBMIT_SCRIPT}
{script}</script>
</body>
</html>
"""


def yes_no_fieldset(name: str, legend: str, hint: str = "") -> str:
    """A required yes/no radio group with a legend (values `yes` and `no`)."""
    hint_html = f'<p class="hint" id="{name}-hint">{html_lib.escape(hint)}</p>' if hint else ""
    described = f' aria-describedby="{name}-hint"' if hint else ""
    return (f'<fieldset id="{name}-group"{described}><legend>{html_lib.escape(legend)}</legend>{hint_html}'
            f'<div class="choice"><input type="radio" id="{name}-yes" name="{name}" value="yes" required>'
            f'<label for="{name}-yes">Yes</label></div>'
            f'<div class="choice"><input type="radio" id="{name}-no" name="{name}" value="no">'
            f'<label for="{name}-no">No</label></div></fieldset>')


def form_field_names(page: str) -> list[str]:
    """The names of the form controls written in a page (inputs, textareas, selects), in order,
    each once, without MTurk's `assignmentId`; controls a script adds later are not seen."""
    from html.parser import HTMLParser

    names: list[str] = []

    class Collector(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            name = dict(attrs).get("name")
            if tag in ("input", "textarea", "select") and name and name != "assignmentId" and name not in names:
                names.append(name)

    Collector().feed(page)
    return names
