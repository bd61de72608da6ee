"""Tutorials in a real JupyterLab, driven by headless Chromium: the widgets render (the
quickstart's diff and timeline, the exploring-history tutorial's lineage grid and timeline
picture).

JupyterLab listens on loopback with a token; its settings, data and runtime folders are
temporary (the kernelspec of this Python stays discoverable through ``sys.prefix``). The
screenshots are saved under pytest's temporary folder and copied to ``tests/browser/artifacts``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
USER_SETTINGS = {
    # Render every cell (JupyterLab 4 otherwise skips cells outside the view).
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    # No news or update checks (no network), no pop-ups over the notebook.
    "@jupyterlab/apputils-extension/notification": {
        "fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True},
}


NOTEBOOKS = ("01-quickstart.ipynb", "06-exploring-history.ipynb")
"""The notebooks the JupyterLab of a test serves."""


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    tmp: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    """JupyterLab serving copies of :data:`NOTEBOOKS`."""
    root, tmp = tmp_path / "root", tmp_path / "tmp"
    for d in (root, tmp):
        d.mkdir()
    for notebook in NOTEBOOKS:
        shutil.copy(ROOT / "notebooks" / notebook, root)
    config = tmp_path / "jupyter-config"
    for name, values in USER_SETTINGS.items():
        plugin, _, setting = name.rpartition("/")
        target = config / "lab" / "user-settings" / plugin / f"{setting}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values), encoding="utf-8")
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(config),
               JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"), TMPDIR=str(tmp))
    port, token = _free_port(), secrets.token_hex(16)
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
               f"--port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={root}",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = (tmp_path / "jupyter.log").open("wb")
    server = subprocess.Popen(command, env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("JupyterLab did not start:\n"
                                       + (tmp_path / "jupyter.log").read_text()) from None
                time.sleep(0.5)
        yield Lab(url, token, root, tmp)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _save(page, name: str, tmp_path: Path) -> Path:
    path = tmp_path / name
    page.screenshot(path=str(path))
    try:
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(path, ARTIFACTS / name)
    except OSError:  # a read-only checkout: the copy under tmp_path is enough
        pass
    print(f"screenshot: {path}")
    return path


def test_quickstart_renders_the_diff_and_timeline_widgets(lab: Lab, tmp_path: Path):
    from playwright.sync_api import expect, sync_playwright

    import evonb

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.goto(f"{lab.url}/lab/tree/01-quickstart.ipynb?token={lab.token}")
            status = page.locator("#jp-main-statusbar")
            expect(status).to_contain_text("Idle", timeout=120_000)
            page.locator(".jp-Notebook .jp-Cell").first.click()
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()

            last = page.locator(".jp-CodeCell").last.locator(".jp-OutputArea")
            expect(last).to_contain_text("Result of select * from trips as of", timeout=300_000)
            expect(status).to_contain_text("Idle", timeout=60_000)

            diff = page.locator(".evonb-diff-widget").first
            expect(diff).to_be_visible()
            expect(diff).to_contain_text("renamed (was rider)")
            expect(diff).to_contain_text("passenger")
            expect(diff.locator('[data-field-id="2"]').last).to_contain_text("passenger")
            expect(diff.locator('[data-field-id="6"]').last).to_contain_text("tip")
            diff.scroll_into_view_if_needed()
            _save(page, "lab-diff.png", tmp_path)

            warehouse = next(lab.tmp.glob("evonb-quickstart-*"))
            history = evonb.open_table(warehouse / "trips").history()
            timeline = page.locator(".evonb-timeline-widget")
            expect(timeline).to_be_visible()
            selector = timeline.locator("select")
            for commit in history:
                expect(selector).to_contain_text(commit.instant)
            first_write = history[1].instant
            timeline.scroll_into_view_if_needed()
            option = selector.locator("option", has_text=first_write).first.inner_text()
            selector.select_option(label=option)
            expect(timeline).to_contain_text(f"Data as of {first_write}, in that commit's schema")
            expect(timeline.locator("th", has_text="rider").first).to_be_visible()
            timeline.get_by_text("today's schema", exact=True).click()
            expect(timeline).to_contain_text(f"Data as of {first_write}, in today's schema")
            expect(timeline.locator("th", has_text="passenger").first).to_be_visible()
            timeline.scroll_into_view_if_needed()
            _save(page, "lab-timeline.png", tmp_path)

            # The picture: one mark per commit; clicking one selects that commit in the list.
            picture = timeline.locator("svg.evonb-timeline-svg")
            expect(picture).to_be_visible()
            expect(picture.locator("circle.evonb-mark")).to_have_count(len(history))
            created = history[0].instant
            picture.locator(f'circle[data-instant="{created}"]').click()
            expect(selector.locator("option:checked")).to_contain_text(created)
            expect(timeline).to_contain_text("The table was created with this schema.")
        except BaseException:
            _save(page, "lab-failure.png", tmp_path)
            raise
        finally:
            browser.close()


def _run_all(page, notebook: str, lab: Lab) -> None:
    from playwright.sync_api import expect

    page.goto(f"{lab.url}/lab/tree/{notebook}?token={lab.token}")
    status = page.locator("#jp-main-statusbar")
    expect(status).to_contain_text("Idle", timeout=120_000)
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()


def test_exploring_history_renders_the_lineage_grid_and_the_timeline_picture(
        lab: Lab, tmp_path: Path):
    from playwright.sync_api import expect, sync_playwright

    import evonb

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            _run_all(page, "06-exploring-history.ipynb", lab)
            picture = page.locator(".jp-CodeCell").last.locator("svg.evonb-timeline-svg")
            expect(picture).to_be_visible(timeout=300_000)
            expect(page.locator("#jp-main-statusbar")).to_contain_text("Idle", timeout=60_000)
            assert not page.locator(".jp-OutputArea-output[data-mime-type="
                                    "'application/vnd.jupyter.stderr']").filter(
                has_text="Traceback").count()

            warehouse = next(lab.tmp.glob("evonb-history-*"))
            rides = evonb.open_table(warehouse / "rides")
            grids = page.locator(".evonb-lineage")
            expect(grids).to_have_count(2)
            before, after = grids.nth(0), grids.nth(1)
            # One row per field ID ever given: the two zone columns are two rows.
            ids = sorted({int(v) for v in before.locator("tr.evonb-lineage-row").evaluate_all(
                "rows => rows.map(r => r.dataset.fieldId)")})
            assert ids == sorted({f.id for s in rides.schemas() for f in s.fields})
            zones = before.locator("tr.evonb-lineage-row", has_text="zone")
            expect(zones).to_have_count(2)
            expect(zones.first.locator('td[data-kinds~="dropped"]')).to_have_count(1)
            expect(zones.last.locator('td[data-kinds~="born"]')).to_have_count(1)
            renamed = before.locator('td[data-kinds~="renamed"]')
            expect(renamed.first).to_be_visible()
            expect(after.locator('td[data-kinds~="restored"]').first).to_be_visible()
            before.scroll_into_view_if_needed()
            _save(page, "lab-lineage.png", tmp_path)

            history = rides.history()
            expect(picture.locator("circle.evonb-mark")).to_have_count(len(history))
            picture.scroll_into_view_if_needed()
            _save(page, "lab-history-timeline.png", tmp_path)
        except BaseException:
            _save(page, "lab-failure.png", tmp_path)
            raise
        finally:
            browser.close()
