"""Render the gate's step summary for each posture as GitHub shows it, and screenshot it.

Runs the real `three-ledger gate` on three of the demo's scenarios (a reject, a human
review, a review with a flake note) and on a pin change that pins a ceremony property (vet's
table), renders each summary with cmark-gfm (GitHub's Markdown
parser) inside GitHub's Markdown stylesheet (npm `github-markdown-css`) in a 1,000 px wide
page, and takes a screenshot with headless Chromium. Prints, for each posture, the widest
table and whether anything is wider than the page.

Needs: the test extra (cmarkgfm), npm, and Debian's chromium (`apt-get install chromium`).

    .venv/bin/python scripts/render_summaries.py docs/
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

import cmarkgfm
from cmarkgfm.cmark import Options

from three_ledger.cli import main
from three_ledger.demo import repository
from three_ledger.demo.scenarios import SCENARIOS, Scenario
from three_ledger.demo.vet_check import CEREMONY_TEST, AddProperty

PAGE_PX = 1000
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]
POSTURES = {
    "reject": ("property-broken", True),
    "human_review": ("clean-one-pin", False),
    "review": ("flake-observed", True),
}
# Measured in the page: its height, and the widest table against the page's width.
MEASURE = """<script>
window.addEventListener("load", () => {
  const tables = [...document.querySelectorAll("table")];
  const widest = Math.max(0, ...tables.map((t) => t.scrollWidth));
  const body = document.querySelector(".markdown-body");
  document.title = JSON.stringify({height: document.documentElement.scrollHeight,
    widest: widest, page: body.clientWidth, overflow: body.scrollWidth > body.clientWidth});
});
</script>"""


def scenario(name: str) -> Scenario:
    return next(item for item in SCENARIOS if item.name == name)


def summary_for(work: Path, name: str, two_pins: bool) -> str:
    """Run the real gate on one demo scenario; return the Markdown it wrote."""
    item = scenario(name)
    repo = work / name
    base = repository.build_repository(repo)
    if not two_pins:
        pin_path = repo / "pins" / "properties.json"
        pin = json.loads(pin_path.read_text(encoding="utf-8"))
        pin["fixture_pins"] = pin["fixture_pins"][:1]
        pin_path.write_text(json.dumps(pin, indent=2) + "\n", encoding="utf-8")
        _git(repo, "commit", "-q", "-am", "pins: pin A only")
        base = _git(repo, "rev-parse", "HEAD")
    for edit in item.edits:
        edit.apply(repo)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", item.description)
    return gate_summary(work, name, repo, base, item.env)


def pin_change_summary(work: Path) -> str:
    """The gate on a change to the properties pin alone: the test landed first, unpinned."""
    repo = work / "pin-change"
    repository.build_repository(repo)
    CEREMONY_TEST.apply(repo)
    _git(repo, "commit", "-q", "-am", "a test of the orders files")
    base = _git(repo, "rev-parse", "HEAD")
    AddProperty().apply(repo)
    _git(repo, "commit", "-q", "-am", "pins: pin the new property")
    return gate_summary(work, "pin-change", repo, base, {})


def gate_summary(work: Path, name: str, repo: Path, base: str, env: dict[str, str]) -> str:
    # Relative, as in a CI workspace: the summary shows the paths the way CI gives them.
    out = Path("three-ledger") / name
    command = shlex.join([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "properties/test_orders.py"])  # fmt: skip
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        main(["gate", "--pins-dir", str(repo / "pins"), "--root", str(repo), "--command",
              command, "--base", base, "--out-dir", str(out), "--summary-md",
              str(out / "summary.md")])  # fmt: skip
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return (work / out / "summary.md").read_text(encoding="utf-8")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=repository.demo_environment(),
                          capture_output=True, text=True, check=True)  # fmt: skip
    return done.stdout.strip()


def stylesheet(work: Path) -> str:
    subprocess.run(["npm", "pack", "--silent", "github-markdown-css@5"], cwd=work, check=True,
                   capture_output=True)  # fmt: skip
    archive = next(work.glob("github-markdown-css-*.tgz"))
    with tarfile.open(archive) as tar:
        member = tar.extractfile("package/github-markdown-light.css")
        assert member is not None
        return member.read().decode("utf-8")


def page(markdown: str, css: str) -> str:
    body = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><style>{css}\n"
        f"body {{ margin: 0; }} .markdown-body {{ box-sizing: border-box; width: {PAGE_PX}px; "
        f"padding: 16px; }}</style>{MEASURE}</head>"
        f"<body><article class='markdown-body'>{body}</article></body></html>"
    )


def chromium(*args: str, profile: Path) -> str:
    done = subprocess.run(
        ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return done.stdout


def measure(html: Path, profile: Path) -> dict[str, int | bool]:
    dom = chromium("--virtual-time-budget=2000", "--dump-dom", html.as_uri(), profile=profile)
    title = dom.split("<title>", 1)[1].split("</title>", 1)[0]
    return json.loads(title.replace("&quot;", '"'))  # type: ignore[no-any-return]


def main_script(target: Path) -> int:
    with tempfile.TemporaryDirectory(prefix="three-ledger-render-") as temporary:
        work = Path(temporary)
        target = target.resolve()
        os.chdir(work)
        css = stylesheet(work)
        wide = False
        summaries: dict[str, Callable[[], str]] = {
            posture: functools.partial(summary_for, work, name, two_pins)
            for posture, (name, two_pins) in POSTURES.items()
        }
        summaries["pin-change"] = functools.partial(pin_change_summary, work)
        for posture, summary in summaries.items():
            html = work / f"{posture}.html"
            html.write_text(page(summary(), css), encoding="utf-8")
            profile = work / f"profile-{posture}"
            profile.mkdir()
            sizes = measure(html, profile)
            shot = target / f"summary-{posture}.png"
            chromium(f"--window-size={PAGE_PX},{sizes['height']}", f"--screenshot={shot}",
                     html.as_uri(), profile=profile)  # fmt: skip
            print(
                f"{posture}: {shot} height {sizes['height']} px, widest table "
                f"{sizes['widest']} px of {sizes['page']} px, overflow {sizes['overflow']}"
            )
            wide = wide or bool(sizes["overflow"]) or int(sizes["widest"]) > int(sizes["page"])
    return 1 if wide else 0


if __name__ == "__main__":
    raise SystemExit(main_script(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs")))
