"""A filled task page served on 127.0.0.1 before paying for it (`csdata DATASET hits preview`).

`serve_preview` / `preview` serve the page with a local submit endpoint that shows what the form
sent, as MTurk would store it, so a researcher can try a page on its own.
"""
from __future__ import annotations

import html as html_lib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional
from urllib.parse import parse_qsl, urlencode

PREVIEW_ASSIGNMENT = "PREVIEW_ASSIGNMENT"
SUBMIT_PATH = "/mturk/externalSubmit"


class PreviewServer(ThreadingHTTPServer):
    """The preview's HTTP server: the page, and the fields of every form submitted to it."""

    page: bytes
    submissions: list[dict[str, str]]


class _PreviewHandler(BaseHTTPRequestHandler):
    server: PreviewServer

    def _send(self, status: int, body: bytes, kind: str = "text/html; charset=utf-8") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = self.path.split("?", 1)[0]
        if path == "/":
            self._send(200, self.server.page)
        elif path == "/favicon.ico":
            self._send(204, b"")
        elif path == "/submissions.json":
            self._send(200, json.dumps(self.server.submissions).encode("utf-8"), "application/json")
        else:
            self._send(404, b"not found")

    def do_POST(self) -> None:  # noqa: N802
        if self.path.split("?", 1)[0] != SUBMIT_PATH:
            self._send(404, b"not found")
            return
        length = int(self.headers.get("Content-Length") or 0)
        fields = dict(parse_qsl(self.rfile.read(length).decode("utf-8"), keep_blank_values=True))
        self.server.submissions.append(fields)
        rows = "".join(f"<tr><th scope='row'>{html_lib.escape(k)}</th><td>{html_lib.escape(v)}</td></tr>"
                       for k, v in fields.items())
        body = ("<!doctype html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
                "content='width=device-width, initial-scale=1'><title>Submitted fields</title></head>"
                "<body><h1>Submitted fields</h1><p>MTurk would store these as <code>Answer.&lt;field&gt;"
                f"</code> columns.</p><table id='submitted'>{rows}</table><p><a href='/'>Back to the task"
                "</a></p></body></html>")
        self._send(200, body.encode("utf-8"))

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # the preview prints its own lines


def serve_preview(html: str, port: int = 0) -> tuple[str, PreviewServer]:
    """Serve a filled task page on 127.0.0.1 in a background thread; return (url, server).

    The url carries MTurk's `assignmentId` and `turkSubmitTo` parameters, so the page submits to
    the server's own `/mturk/externalSubmit`, which shows the fields and records them in
    `server.submissions` (also at `/submissions.json`). Stop it with `server.shutdown()`.
    """
    server = PreviewServer(("127.0.0.1", port), _PreviewHandler)
    server.page = html.encode("utf-8")
    server.submissions = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    query = urlencode({"assignmentId": PREVIEW_ASSIGNMENT, "hitId": "PREVIEW_HIT", "workerId": "PREVIEW_WORKER",
                       "turkSubmitTo": base})
    return f"{base}/?{query}", server


def preview(html: str, port: int = 0, out: Optional[Any] = None) -> int:
    """Serve `html` (a filled page) until Ctrl-C, printing the url and each submission; returns 0."""
    import sys

    stream = out or sys.stdout
    url, server = serve_preview(html, port)
    print(f"task page: {url}\n(submit it to see the fields a worker sends; Ctrl-C stops)", file=stream, flush=True)
    seen = 0
    try:
        while True:
            threading.Event().wait(0.5)
            for fields in server.submissions[seen:]:
                print("submitted: " + json.dumps(fields, ensure_ascii=False), file=stream, flush=True)
            seen = len(server.submissions)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
    return 0
