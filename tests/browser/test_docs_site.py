"""The documentation site (mkdocs.yml) in headless Chromium: it builds with `mkdocs build --strict`,
and, served over HTTP as a reader would get it, every page loads without console errors and
without fetching anything from another origin, every internal link and image resolves (to a built
file, and to an element with that id when the link has a #fragment), and the search box finds
"coverage" in the ProtoQA guide or the spec reference.

HTTP rather than file://: Material's search runs in a web worker, which file:// pages may not start.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser.conftest import console_errors

ROOT = Path(__file__).resolve().parents[2]
# The pages the test insists on, whatever the nav says, so that it cannot pass on an empty site.
KEY_PAGES = frozenset({
    "index.html", "getting-started/index.html", "datasets/record/index.html",
    "datasets/cosmos/index.html", "datasets/protoqa/index.html", "reference/cli/index.html",
    "reference/spec/index.html", "reference/tables/index.html",
})
NOT_PAGES = ("assets/", "search/")     # Material's and the search plugin's files, not pages
WAIT_S = 10


# ---- the built site, served on 127.0.0.1 ----------------------------------------------------------

@dataclass(frozen=True)
class Site:
    root: Path          # the built site
    url: str            # where it is served, with a trailing slash


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):   # noqa: A002 - the base class's parameter name
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    """The site built with --strict into a tmp folder and served over HTTP on a free port."""
    root = tmp_path_factory.mktemp("docs") / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(root)], cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True, timeout=300)
    if built.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed (exit {built.returncode}):\n{built.stderr}{built.stdout}")
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(root, f"http://127.0.0.1:{server.server_address[1]}/")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def built_pages(root: Path) -> list[str]:
    """Every page of the built site, as a path relative to it (`datasets/record/index.html`)."""
    pages = (path.relative_to(root).as_posix() for path in root.rglob("*.html"))
    return sorted(page for page in pages if page != "404.html" and not page.startswith(NOT_PAGES))


def nav_pages() -> set[str]:
    """The built paths of the pages mkdocs.yml's nav lists (`reference/cli.md` -> `.../index.html`)."""
    def sources(entries) -> Iterable[str]:
        for entry in entries:
            value = next(iter(entry.values())) if isinstance(entry, dict) else entry
            if isinstance(value, list):
                yield from sources(value)
            elif not value.startswith(("http://", "https://")):
                yield value
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    return {"index.html" if source == "index.md" else source.removesuffix(".md") + "/index.html"
            for source in sources(nav)}


def page_url(site: Site, page: str) -> str:
    """The URL a reader opens: `reference/cli/index.html` -> `http://.../reference/cli/`."""
    return site.url + page.removesuffix("index.html")


# ---- the link checker ------------------------------------------------------------------------------

class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            # a fragment names an element's id, or an <a name="...">
            if value is not None and (name == "id" or (tag == "a" and name == "name")):
                self.ids.add(value)


@functools.cache
def _ids(path: Path) -> frozenset[str]:
    parser = _Ids()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return frozenset(parser.ids)


def _target(root: Path, url_path: str) -> Path | None:
    """The built file a URL path is served from, or None: `/a/` -> `a/index.html`."""
    relative = unquote(url_path).lstrip("/")
    if relative == "" or relative.endswith("/"):
        relative += "index.html"
    path = root / relative
    if path.is_dir():       # the server redirects `/a` to `/a/`
        path = path / "index.html"
    return path if path.is_file() else None


def broken_links(root: Path, base_url: str, urls: Iterable[str]) -> list[str]:
    """The internal URLs among `urls` (absolute, as the browser resolved them) that do not resolve
    in the site built at `root` and served at `base_url`: no such file, or a #fragment that no
    element of the target page has as its id. URLs of other origins and schemes are not checked."""
    base = urlsplit(base_url)
    broken = []
    for url in urls:
        parts = urlsplit(url)
        if (parts.scheme, parts.netloc) != (base.scheme, base.netloc):
            continue
        target = _target(root, parts.path)
        if target is None:
            broken.append(f"{url} (no such file)")
        elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _ids(target):
            broken.append(f"{url} (no element with id {unquote(parts.fragment)!r})")
    return broken


# ---- what the browser sees ------------------------------------------------------------------------

LINKS_JS = """return {
  links: Array.from(document.querySelectorAll('a[href]'), a => a.href),
  images: Array.from(document.querySelectorAll('img[src]'), img => img.src),
  loaded: performance.getEntriesByType('resource').map(entry => entry.name),
};"""
# Every <img> loaded (lazy ones too) and decoded: its URL and naturalWidth, 0 when it is broken.
IMAGES_JS = """const done = arguments[arguments.length - 1];
Promise.all(Array.from(document.querySelectorAll('img[src]'), img => {
  img.loading = 'eager';
  return img.decode().then(() => [img.src, img.naturalWidth], () => [img.src, 0]);
})).then(done);"""


def _load(driver, url: str) -> None:
    driver.get(url)
    WebDriverWait(driver, WAIT_S).until(
        lambda d: d.execute_script("return document.readyState") == "complete")


def test_site_builds_with_every_nav_page(site):
    pages = set(built_pages(site.root))
    missing = (KEY_PAGES | nav_pages()) - pages
    assert not missing, f"pages missing from the built site: {sorted(missing)}"


def test_every_page_loads_cleanly_and_its_links_and_images_resolve(site, browser):
    pages = built_pages(site.root)
    assert KEY_PAGES <= set(pages)
    browser.set_script_timeout(WAIT_S)
    origin = site.url.rstrip("/")
    failures: list[str] = []
    for page in pages:
        url = page_url(site, page)
        _load(browser, url)
        found = browser.execute_script(LINKS_JS)
        for loaded in found["loaded"]:
            if not loaded.startswith(origin + "/"):
                failures.append(f"{page}: loads a resource from elsewhere: {loaded}")
        for link in broken_links(site.root, site.url, dict.fromkeys(found["links"])):
            failures.append(f"{page}: broken link {link}")
        for image in broken_links(site.root, site.url, dict.fromkeys(found["images"])):
            failures.append(f"{page}: broken image {image}")
        for src, width in browser.execute_async_script(IMAGES_JS):
            if width <= 0:
                failures.append(f"{page}: image does not render (naturalWidth 0): {src}")
        # read last, so that the failed loads of lazy images count against this page
        for error in console_errors(browser):
            failures.append(f"{page}: console error: {error}")
    assert not failures, f"{len(failures)} problem(s) on the docs site:\n" + "\n".join(failures)


def test_search_finds_coverage(site, browser):
    _load(browser, site.url)
    # Narrow windows show a search button in the header; wide ones the search box itself.
    toggle = browser.find_element(By.CSS_SELECTOR, 'label.md-header__button[for="__search"]')
    if toggle.is_displayed():
        toggle.click()
    box = browser.find_element(By.CSS_SELECTOR, "input.md-search__input")
    WebDriverWait(browser, WAIT_S).until(lambda d: box.is_displayed())
    box.click()
    box.send_keys("coverage")
    try:
        results = WebDriverWait(browser, WAIT_S).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, ".md-search-result__item"))
    except TimeoutException:        # say what the search showed, and the console
        meta = browser.find_element(By.CSS_SELECTOR, ".md-search-result__meta").text
        pytest.fail(f"no search results for 'coverage' (search says {meta!r}); "
                    f"console: {console_errors(browser)}")
    hrefs = [link.get_attribute("href")
             for item in results for link in item.find_elements(By.CSS_SELECTOR, "a[href]")]
    assert any("datasets/protoqa" in href or "reference/spec" in href for href in hrefs), hrefs
    assert console_errors(browser) == []


# ---- the checker itself can fail --------------------------------------------------------------------

def test_link_checker_reports_exactly_the_broken_links(tmp_path):
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "index.html").write_text(
        '<h2 id="coverage">Coverage</h2><a name="old-anchor"></a>', encoding="utf-8")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG")
    base = "http://127.0.0.1:8123/"
    urls = [
        base, base + "guide/", base + "guide", base + "guide/index.html#coverage",
        base + "guide/#old-anchor", base + "logo.png", base + "guide/#",
        "https://example.org/missing/", "mailto:someone@example.org", "http://127.0.0.1:9999/missing/",
        base + "missing/", base + "guide/#no-such-heading", base + "logo.svg",
    ]
    (tmp_path / "index.html").write_text("<p>home</p>", encoding="utf-8")
    assert broken_links(tmp_path, base, urls) == [
        f"{base}missing/ (no such file)",
        f"{base}guide/#no-such-heading (no element with id 'no-such-heading')",
        f"{base}logo.svg (no such file)",
    ]
