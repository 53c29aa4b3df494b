"""`three-ledger init`: draft the pins and the CI workflow of a repository that has none.

It writes drafts, never pins: a fixture pin of the project's data folders, a properties pin
with one property per test module (from a collection, as `plan` makes it) and an empty flake
pin, all in `pins.draft/`, and the workflow for GitHub or GitLab. Every file is new: one
that exists already is refused before anything runs, and nothing is written. It commits
nothing; the next steps it prints say how the drafts become pins.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from three_ledger import git, jsonio
from three_ledger.ci_workflow import (
    CI,
    PLACEHOLDER_PACKAGE,
    WORKFLOWS,
    Values,
    installed_source,
    render,
)
from three_ledger.commands.draft_pin import (
    checked_folders,
    draft_document,
    git_warnings,
    untracked_states,
)
from three_ledger.data_folders import (
    data_folders,
    data_packages,
    project_files,
    python_data_folders,
)
from three_ledger.draft_properties import PropertiesDraft, draft_properties, test_modules
from three_ledger.env_policy import refuse_keep_env
from three_ledger.errors import Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.frozen import frozen
from three_ledger.hints import shown_path
from three_ledger.pins import FixturePin
from three_ledger.product_guess import package_dir, propose
from three_ledger.pytest_config import entries, pytest_settings
from three_ledger.results import TestResult
from three_ledger.run import network_namespace
from three_ledger.run.collection import PlanRequest, run_collection
from three_ledger.run.network_ban import choose_enforcement
from three_ledger.vocabulary import Network

DRAFT_FOLDER = "pins.draft"
PINS_FOLDER = "pins"
# Where `vet` and `gate` write by default: never committed.
LEDGERS_FOLDER = "ledgers"
FIXTURE_DRAFT, PROPERTIES_DRAFT, FLAKE_DRAFT = "fixtures.json", "properties.json", "flakes.json"
# Lockfiles of the tests' dependencies the workflow installs from, first found wins.
REQUIREMENTS_FILES = (
    "requirements-test.txt",
    "requirements/test.txt",
    "test-requirements.txt",
    "requirements-dev.txt",
    "requirements/dev.txt",
)
_NOT_IN_A_PIN_ID = re.compile(r"[^a-z0-9._-]+")


@frozen
class InitRequest:
    root: Path
    command: list[str]
    # The data folders; empty: found by `data_folders`.
    fixtures_dirs: tuple[str, ...]
    ci: CI
    # Where the workflow installs the gate from; None: this installation's source, if pinned.
    package: str | None
    # The tests' lockfile, relative to ROOT; None: the first of REQUIREMENTS_FILES found.
    requirements: str | None
    timeout_s: float
    keep_env: tuple[str, ...] = ()


@frozen
class Targets:
    """Every file init writes, and where the workflow says ROOT and the pins are."""

    fixtures: Path
    properties: Path
    flakes: Path
    workflow: Path
    # ROOT and the pins folder relative to the top of the work tree, as the workflow runs.
    root_in_top: str
    pins_in_top: str
    # Where init may make folders: the drafts' under ROOT, the workflow's under the top.
    root: Path
    top: Path

    @classmethod
    def of(cls, root: Path, ci: CI) -> Targets:
        try:
            top = git.work_tree_top(root)
        except Refused:  # not in git: the workflow goes in ROOT
            top = root.resolve()
        root_in_top = Path(os.path.relpath(root.resolve(), top)).as_posix()
        drafts = root / DRAFT_FOLDER
        return cls(
            fixtures=drafts / FIXTURE_DRAFT,
            properties=drafts / PROPERTIES_DRAFT,
            flakes=drafts / FLAKE_DRAFT,
            workflow=top / WORKFLOWS[ci].path,
            root_in_top=root_in_top,
            pins_in_top=PINS_FOLDER if root_in_top == "." else f"{root_in_top}/{PINS_FOLDER}",
            root=root,
            top=top,
        )

    def below(self) -> list[tuple[Path, Path]]:
        """Each file, with the folder below which init makes the folders it needs."""
        drafts = [(path, self.root) for path in (self.fixtures, self.properties, self.flakes)]
        return [*drafts, (self.workflow, self.top)]


def init(request: InitRequest) -> int:
    targets = Targets.of(request.root, request.ci)
    refuse_existing(targets.below())
    refuse_keep_env(request.keep_env)
    folders = request.fixtures_dirs or detected_folders(request.root)
    folders = checked_folders(folders, request.root)
    name = project_name(request.root)
    fixture_draft = draft_document(
        folders, request.root, f"fixpin-{name}", with_digest=True, listed=True
    )
    fixture_pin = FixturePin.from_json(fixture_draft, targets.fixtures)
    tests = collected(request, fixture_pin, targets)
    properties = properties_draft(request.root, name, fixture_pin, tests, targets.properties)
    flakes = {"pin_id": f"flakepin-{name}", "flakes": []}
    jsonio.validate(flakes, "flake-pin", targets.flakes, "drafted flake pin")
    values = workflow_values(request, targets)
    write_new(
        {
            targets.fixtures: jsonio.dumps(fixture_draft),
            targets.properties: jsonio.dumps(properties.document),
            targets.flakes: jsonio.dumps(flakes),
            targets.workflow: render(request.ci, values),
        }
    )
    for line in git_warnings(
        request.root, folders, untracked_states(request.root, folders, required=False), False
    ):
        print(f"three-ledger: {line}", file=sys.stderr)
    for note in properties.notes:
        print(f"three-ledger: {note}", file=sys.stderr)
    if not request.fixtures_dirs:
        files = project_files(request.root)
        left_out = python_data_folders(files, folders)
        if left_out:
            print(f"three-ledger: {_python_data_note(left_out)}", file=sys.stderr)
        packages = data_packages(files, folders)
        if packages:
            print(f"three-ledger: {_data_package_note(packages)}", file=sys.stderr)
    for said in (_missing_requirements(request, values), _off_the_path(request)):
        if said is not None:
            print(f"three-ledger: {said}", file=sys.stderr)
    sys.stdout.write(report(request, targets, fixture_draft, properties.document, values))
    return ExitCode.OK


def _missing_requirements(request: InitRequest, values: Values) -> str | None:
    """A note where the lockfile the drafted workflow installs the tests' dependencies from
    is not in ROOT: the job's install step would fail on it (idna's trial)."""
    if (request.root / requirements_file(request)).is_file():
        return None
    return (
        f"note: the drafted workflow installs the tests' dependencies from {values.requirements}, "
        f"which is not there: write it (pytest and what the tests import, pinned), or name "
        "the file the project has with --requirements FILE"
    )


def _off_the_path(request: InitRequest) -> str | None:
    """A note where setuptools maps the packages to a folder (`package_dir`) that neither
    pytest's `pythonpath` nor the command puts on the path: the drafted workflow installs no
    project, so the tests would import an installed copy or nothing (PyYAML's `lib/`)."""
    root = request.root

    def read(name: str) -> bytes | None:
        with contextlib.suppress(OSError):
            return (root / name).read_bytes()
        return None

    on_path = {entry.strip("/") for entry in entries(pytest_settings(read).get("pythonpath"))}
    for folder, because in package_dir(root):
        named = any(f"pythonpath={folder}" in argument for argument in request.command)
        if folder not in on_path and not named:
            return (
                f"note: the packages are in {folder}/ ({because}), which pytest's settings do "
                "not put on the path (`pythonpath`): the drafted workflow installs no project, "
                f"so its tests would import an installed copy or nothing; add `pythonpath = "
                f"{folder}` to pytest's settings in a change of its own, or `-o "
                f"pythonpath={folder}` to --command"
            )
    return None


def _named(folders: Sequence[str]) -> str:
    """The first left-out folders, and how many more."""
    more = len(folders) - _NAMED_FOLDERS
    return ", ".join(folders[:_NAMED_FOLDERS]) + (f" and {more} more" if more > 0 else "")


def _python_data_note(folders: Sequence[str]) -> str:
    return (
        f"note: not drafted, since they hold Python: {_named(folders)}; if those files are "
        "data the tests read (a formatter's cases, say), not code, draft again naming each "
        "folder with --fixtures-dir"
    )


def _data_package_note(folders: Sequence[str]) -> str:
    return (
        f"note: not drafted, since they are Python packages (an __init__.py of their own): "
        f"{_named(folders)}; if the package holds the data the tests read, draft again naming "
        "it with --fixtures-dir (its loader is then pinned with the data: an edit to it is a "
        "pin change), or move the loader out and name the data"
    )


# How many left-out folders the note names before it only counts.
_NAMED_FOLDERS = 5


def refuse_existing(targets: Sequence[tuple[Path, Path]]) -> None:
    """Refuse (exit 2) before anything runs when a file init would write is there already,
    or a folder it would write in (below BASE, for each (file, BASE)) is not a plain one."""
    for path, base in targets:
        if os.path.lexists(path):
            raise Refused(
                f"{shown_path(path)} already exists: init writes nothing over a file, and has "
                "written nothing; move it away, or review it as it is"
            )
        folder = path.parent
        while folder != base and folder != folder.parent:
            if folder.is_symlink() or (os.path.lexists(folder) and not folder.is_dir()):
                raise Refused(
                    f"{shown_path(folder)} is not a plain folder: init writes {path.name} only "
                    "in a real folder, and has written nothing"
                )
            folder = folder.parent


def detected_folders(root: Path) -> tuple[str, ...]:
    found = data_folders(project_files(root))
    if not found:
        raise Refused(
            f"init: no data folder found under {shown_path(root)} (a folder of files and no "
            "Python, under tests/ or named fixtures/ or testdata/): name each with "
            "--fixtures-dir DIR"
        )
    return tuple(found)


def project_name(root: Path) -> str:
    """ROOT's folder name as a pin id takes it (`fixpin-NAME`)."""
    name = _NOT_IN_A_PIN_ID.sub("-", root.resolve().name.lower()).strip("-._")
    return name[:100] or "project"


def collected(request: InitRequest, fixture_pin: FixturePin, targets: Targets) -> list[TestResult]:
    """What the test command collects (no test runs), as `plan` collects it."""
    plan_request = PlanRequest(
        pin_path=targets.fixtures,
        properties_path=targets.properties,
        command=request.command,
        root=request.root,
        flake_pin_path=None,
        timeout_s=request.timeout_s,
        log_path=None,
        as_json=False,
        keep_env=request.keep_env,
    )
    enforcement = choose_enforcement(
        Network.BANNED, request.command, network_namespace.namespace_available
    )
    return run_collection(plan_request, fixture_pin, request.keep_env, enforcement).tests


def properties_draft(
    root: Path, name: str, fixture_pin: FixturePin, tests: list[TestResult], source: Path
) -> PropertiesDraft:
    modules = test_modules(tests)
    if not modules:
        raise Refused(
            f"init: the command collected no test of a Python module under {shown_path(root)}: "
            "init drafts one property per pytest module"
        )
    draft = draft_properties(
        pin_id=f"proppin-{name}",
        fixture_pin_id=fixture_pin.pin_id,
        folders=fixture_pin.fixtures_dirs,
        tests=tests,
        products=propose(root, modules),
        root=root,
        source=source,
    )
    if not draft.document["properties"]:
        raise Refused("init: every test module skips at collection: no property to draft")
    return draft


def requirements_file(request: InitRequest) -> str:
    """The tests' lockfile under ROOT the workflow installs from: the one given, else the
    first of REQUIREMENTS_FILES there, else the first of them (which ROOT lacks)."""
    return request.requirements or next(
        (name for name in REQUIREMENTS_FILES if (request.root / name).is_file()),
        REQUIREMENTS_FILES[0],
    )


def workflow_values(request: InitRequest, targets: Targets) -> Values:
    requirements = requirements_file(request)
    in_top = requirements if targets.root_in_top == "." else f"{targets.root_in_top}/{requirements}"
    return Values(
        package=request.package or installed_source() or PLACEHOLDER_PACKAGE,
        requirements=in_top,
        command=shlex.join(request.command),
        root=targets.root_in_top,
        pins_dir=targets.pins_in_top,
    )


def write_new(files: dict[Path, str]) -> None:
    """Write every file whole, none over an existing one; on a failure, none stays."""
    written: list[Path] = []
    made: list[Path] = []
    try:
        for path, text in files.items():
            made += _make_folders(path.parent)
            _write_one(path, text)
            written.append(path)
    except OSError as exc:
        for path in written:
            path.unlink()
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise Refused(f"{shown_path(path)}: cannot be written ({exc.strerror or exc})") from None


def _make_folders(folder: Path) -> list[Path]:
    missing = [each for each in (folder, *folder.parents) if not each.exists()]
    for each in reversed(missing):
        each.mkdir()
    return list(reversed(missing))


def _write_one(path: Path, text: str) -> None:
    """Through a temporary file in the same folder, linked in place: the file appears whole,
    and a file that appeared meanwhile is never replaced (the link fails)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.link(temporary, path)
    finally:
        os.unlink(temporary)


def report(
    request: InitRequest,
    targets: Targets,
    fixture_draft: dict[str, Any],
    properties: dict[str, Any],
    values: Values,
) -> str:
    """What was drafted, then the next steps."""
    folders = fixture_draft["fixtures_dirs"]
    products = properties.get("product_paths")
    files = len(fixture_draft["files"])
    fixture = f"fixture pin {fixture_draft['pin_id']}, {files} files in {len(folders)} folder(s)"
    products_text = json.dumps(products) if products else "none"
    count = len(properties["properties"])
    workflow = f"the {request.ci.value} workflow; it installs the gate from {values.package}"
    drafted = [
        (targets.fixtures, f"{fixture}: {', '.join(folders)}"),
        (targets.properties, f"{count} properties, one per module; product_paths {products_text}"),
        (targets.flakes, "no flaky test listed"),
        (targets.workflow, workflow),
    ]
    lines = [f"init: drafted {len(drafted)} files; none is a pin yet, and nothing is committed"]
    lines += [f"  {shown_path(path)}: {what}" for path, what in drafted]
    return "\n".join([*lines, "", *next_steps(request, targets, values)]) + "\n"


def next_steps(request: InitRequest, targets: Targets, values: Values) -> list[str]:
    root = shown_path(request.root)
    at_root = "" if root == "." else f" --root {shlex.quote(root)}"
    pins = shown_path(request.root / PINS_FOLDER)
    drafts = shown_path(request.root / DRAFT_FOLDER)
    run = f"--pin {pins}/{FIXTURE_DRAFT} --properties {pins}/{PROPERTIES_DRAFT} --command "
    run += shlex.quote(values.command) + at_root
    message = "pins: the reviewed fixture, properties and flake pins"
    steps = [
        "next steps:",
        _STEP_REVIEW,
        _STEP_MOVE,
        f"       mkdir {pins} && mv {drafts}/*.json {pins}/ && rmdir {drafts}",
        f'       git add {pins} && git commit -m "{message}"',
        f"  3. three-ledger plan {run}",
        f"  4. three-ledger vet {run}",
        (
            f"  5. Commit {shown_path(targets.workflow)} in a change of its own, with "
            f"{LEDGERS_FOLDER}/ (where vet and gate write) in .gitignore; make its job the one "
            f"required check, and give {pins}/ and the tests owners (CODEOWNERS)."
        ),
    ]
    if values.package == PLACEHOLDER_PACKAGE:
        steps.append(_STEP_PACKAGE)
    if request.ci is CI.GITLAB:
        steps.append(f"     Include it from .gitlab-ci.yml: `include: {WORKFLOWS[CI.GITLAB].path}`")
    return steps


_STEP_REVIEW = (
    "  1. Review every draft: each pinned file is test data; each claim says what its tests "
    "show (rewrite it); each domain names what its property reads; product_paths is the code "
    "under test."
)
_STEP_MOVE = (
    "  2. Move the drafts into the pins folder, in a commit of its own that the pin owners review:"
)
_STEP_PACKAGE = (
    "     The workflow installs the gate from a placeholder: set TL_PACKAGE to its repository "
    "at a commit (git+https://...@COMMIT) or a wheel's https URL."
)
