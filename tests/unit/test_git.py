"""Tests for three_ledger.git, each against a real repository built in tmp_path."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from three_ledger import git
from three_ledger.base_resolution import BaseResolution
from three_ledger.errors import Refused
from three_ledger.vocabulary import BaseHow

ROOT = "examples/orders"
ORACLES = ("properties", "tests")


@pytest.fixture(autouse=True)
def hermetic_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keep the developer's git config and any enclosing repository out of every test."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.invalid")


@dataclass
class Repo:
    top: Path

    @property
    def root(self) -> Path:
        return self.top / ROOT

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-c", "init.defaultBranch=main", *args],
            cwd=self.top,
            capture_output=True,
            check=True,
        )
        return done.stdout.decode().strip()

    def write(self, path: str, content: str | bytes, *, at_top: bool = False) -> Path:
        target = (self.top if at_top else self.root) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        target.write_bytes(content)
        return target

    def commit(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    created = Repo(tmp_path / "work")
    created.top.mkdir()
    created.git("init", "-q")
    created.write(".gitignore", "*.log\n", at_top=True)
    created.write("tests/test_orders.py", "def test_a(): pass\n")
    created.write("tests/test_old.py", "def test_old(): pass\n")
    created.write("properties/test_props.py", "def test_p(): pass\n")
    created.write("properties/naïve_größe.py", "x = 1\n")
    created.write("src/app.py", "APP = 1\n")
    created.write("tests/test_orders.py", "outside ROOT\n", at_top=True)
    return created


@pytest.fixture
def base(repo: Repo) -> str:
    return repo.commit("base")


def changed(repo: Repo, base: str) -> list[str]:
    return git.changed_paths(repo.root, base, ORACLES)


# --- work tree -------------------------------------------------------------------------


def test_work_tree_top_from_subfolder_root(repo: Repo, base: str) -> None:
    assert git.work_tree_top(repo.root).resolve() == repo.top.resolve()


def test_work_tree_top_refuses_folder_outside_git(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(Refused, match=r"not inside a git work tree: cannot tell"):
        git.work_tree_top(plain)


def test_work_tree_top_refuses_the_git_folder_itself(repo: Repo, base: str) -> None:
    with pytest.raises(Refused, match="not inside a git work tree"):
        git.work_tree_top(repo.top / ".git")


def test_work_tree_top_ignores_git_dir_from_environment(
    repo: Repo, base: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = Repo(tmp_path / "other")
    other.top.mkdir()
    other.git("init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other.top / ".git"))
    assert git.work_tree_top(repo.root).resolve() == repo.top.resolve()


def test_missing_git_is_refused(
    repo: Repo, base: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(Refused, match="git is not installed"):
        git.head_revision(repo.root)


# --- changed paths ---------------------------------------------------------------------


def test_no_change_reports_nothing(repo: Repo, base: str) -> None:
    assert changed(repo, base) == []


def test_committed_edit(repo: Repo, base: str) -> None:
    repo.write("tests/test_orders.py", "def test_a(): assert 0\n")
    repo.commit("edit")
    assert changed(repo, base) == ["tests/test_orders.py"]


def test_staged_edit(repo: Repo, base: str) -> None:
    repo.write("properties/test_props.py", "def test_p(): assert 0\n")
    repo.git("add", f"{ROOT}/properties/test_props.py")
    assert changed(repo, base) == ["properties/test_props.py"]


def test_unstaged_edit(repo: Repo, base: str) -> None:
    repo.write("tests/test_orders.py", "def test_a(): assert 0\n")
    assert changed(repo, base) == ["tests/test_orders.py"]


def test_deleted_file_unstaged_and_committed(repo: Repo, base: str) -> None:
    (repo.root / "tests/test_old.py").unlink()
    assert changed(repo, base) == ["tests/test_old.py"]
    repo.commit("delete")
    assert changed(repo, base) == ["tests/test_old.py"]


def test_rename_counts_both_paths(repo: Repo, base: str) -> None:
    repo.git("mv", f"{ROOT}/tests/test_old.py", f"{ROOT}/properties/test_moved.py")
    repo.commit("rename")
    assert changed(repo, base) == ["properties/test_moved.py", "tests/test_old.py"]


def test_type_change_counts(repo: Repo, base: str) -> None:
    (repo.root / "tests/test_old.py").unlink()
    (repo.root / "tests/test_old.py").symlink_to("test_orders.py")
    assert changed(repo, base) == ["tests/test_old.py"]


def test_untracked_new_file_counts(repo: Repo, base: str) -> None:
    repo.write("tests/test_new.py", "def test_new(): pass\n")
    assert changed(repo, base) == ["tests/test_new.py"]


def test_the_users_and_the_machines_git_configuration_are_not_read(
    repo: Repo, base: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    excludes = tmp_path / "ignore-everything"
    excludes.write_text("tests/\n")
    config = tmp_path / "gitconfig"
    config.write_text(f"[core]\n\texcludesFile = {excludes}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    repo.write("tests/test_new.py", "def test_new(): pass\n")
    # git with that configuration would call the new test module ignored...
    listed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo.root, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "test_new.py" not in listed
    # ...the gate's git reads neither the global nor the system configuration.
    assert changed(repo, base) == ["tests/test_new.py"]


@pytest.mark.skipif(os.geteuid() != 0, reason="giving the checkout to another user needs root")
def test_a_checkout_owned_by_another_user_is_judged(repo: Repo, base: str) -> None:
    # A container job's checkout belongs to the runner's user; actions/checkout trusts it in
    # the global configuration, which the gate does not read, so the gate trusts ROOT itself.
    repo.write("tests/test_new.py", "def test_new(): pass\n")
    for folder, _, files in os.walk(repo.top):
        for name in (folder, *(os.path.join(folder, f) for f in files)):
            os.lchown(name, 4242, 4242)
    refused = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo.root, capture_output=True, text=True,
        env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"},
    )  # fmt: skip
    assert "dubious ownership" in refused.stderr  # git alone refuses it...
    assert changed(repo, base) == ["tests/test_new.py"]  # ...the gate judges it


def test_an_untracked_virtual_environment_is_no_change(repo: Repo, base: str) -> None:
    """The job's `.venv` in the checkout, not ignored: its files are the installation. A file
    of the change beside it, and a `pyvenv.cfg` git tracks, still count."""
    repo.write(".venv/pyvenv.cfg", "home = /usr/bin\n")
    repo.write(".venv/lib/python3.11/site-packages/_pytest/runner.py", "X = 1\n")
    repo.write("tests/test_new.py", "def test_new(): pass\n")
    repo.write("tools/pyvenv.cfg", "home = /usr/bin\n")
    repo.git("add", f"{ROOT}/tools/pyvenv.cfg")
    repo.write("tools/forcing.py", "import pytest\n")
    assert git.changed_paths(repo.root, base, ["."]) == [
        "tests/test_new.py",
        "tools/forcing.py",
        "tools/pyvenv.cfg",
    ]


def test_ignored_file_does_not_count(repo: Repo, base: str) -> None:
    repo.write("tests/run.log", "noise\n")
    assert changed(repo, base) == []


def test_pytests_cache_does_not_count(repo: Repo, base: str) -> None:
    repo.write("tests/.pytest_cache/v/cache/lastfailed", "{}\n")
    repo.write("tests/test_real.py", "x = 1\n")
    assert changed(repo, base) == ["tests/test_real.py"]


def test_a_checkout_converting_line_endings_matches_its_blobs(repo: Repo, base: str) -> None:
    """Compared as `git diff` compares: a file the attributes check out with CRLF is the blob
    it came from, and a real edit of it is still one."""
    repo.write(".gitattributes", "*.py text eol=crlf\n", at_top=True)
    head = repo.commit("python files check out with CRLF")
    test = repo.root / "tests/test_orders.py"
    test.unlink()
    repo.git("checkout", "--", ".")
    assert test.read_bytes() == b"def test_a(): pass\r\n"
    assert git.changed_paths(repo.root, head, ORACLES) == []
    at_head = git.blob_ids_at(repo.root, head, ["tests/test_orders.py"])
    assert git.working_blob_ids(repo.root, ["tests/test_orders.py"]) == at_head
    # Raw, as the fixture digest reads its files: the CRLF bytes are not the blob's.
    assert git.paths_differing_from(repo.root, head, ["tests/test_orders.py"]) == [
        "tests/test_orders.py"
    ]
    test.write_bytes(b"def test_a(): assert 0\r\n")
    assert git.working_blob_ids(repo.root, ["tests/test_orders.py"]) != at_head


def test_bytecode_counts_tracked_or_new_and_not_ignored_but_not_ignored(
    repo: Repo, base: str
) -> None:
    repo.write("tests/__pycache__/test_orders.cpython-311.pyc", b"\x00bytecode")
    repo.write("properties/stale.pyc", b"\x00bytecode")
    repo.commit("bytecode, tracked")
    repo.write("tests/__pycache__/test_new.cpython-311.pyc", b"\x00bytecode")
    repo.write(".gitignore", "*.log\nignored/\n", at_top=True)
    repo.write("properties/ignored/x.pyc", b"\x00bytecode")
    assert changed(repo, base) == [
        "properties/stale.pyc",
        "tests/__pycache__/test_new.cpython-311.pyc",
        "tests/__pycache__/test_orders.cpython-311.pyc",
    ]


def test_paths_outside_pathspecs_and_root_do_not_count(repo: Repo, base: str) -> None:
    repo.write("src/app.py", "APP = 2\n")
    repo.write("tests2/test_x.py", "x = 1\n")
    repo.write("tests/test_orders.py", "outside ROOT, edited\n", at_top=True)
    repo.commit("outside")
    assert changed(repo, base) == []


def test_non_ascii_names_are_reported_as_utf8(repo: Repo, base: str) -> None:
    repo.write("properties/naïve_größe.py", "x = 2\n")
    repo.write("tests/tést_ü.py", "y = 1\n")
    assert changed(repo, base) == ["properties/naïve_größe.py", "tests/tést_ü.py"]


def test_missing_pathspec_and_no_pathspec(repo: Repo, base: str) -> None:
    repo.write("tests/test_orders.py", "changed\n")
    assert git.changed_paths(repo.root, base, ["nowhere"]) == []
    assert git.changed_paths(repo.root, base, []) == []


def test_pathspecs_are_literal_not_globs(repo: Repo, base: str) -> None:
    repo.write("tests/test_orders.py", "changed\n")
    assert git.changed_paths(repo.root, base, ["test*"]) == []


@pytest.mark.parametrize(
    "pathspecs",
    [
        ["tests"],
        ["tests/"],
        ["tests", "properties"],
        ["properties/test_props.py", "src/app.py"],
        ["tests_extra", "test"],
        ["properties/naïve_größe.py/"],
        ["nowhere"],
        [],
    ],
)
def test_paths_under_pathspecs_are_what_git_selects(
    repo: Repo, base: str, pathspecs: list[str]
) -> None:
    """Filtering every changed path by PATHSPECS gives what git gives when asked with them."""
    repo.write("tests/test_orders.py", "changed\n")
    (repo.root / "tests/test_old.py").unlink()
    repo.write("tests/new/test_new.py", "new\n")
    repo.write("tests/ignored.log", "ignored\n")
    repo.write("tests_extra/test_x.py", "a sibling whose name begins like a folder's\n")
    repo.write("testsfile", "a file whose name begins like a folder's\n")
    repo.write("properties/naïve_größe.py", "x = 2\n")
    repo.write("src/app.py", "APP = 2\n")
    every = git.changed_paths(repo.root, base, ["."])
    assert git.under_pathspecs(every, pathspecs) == git.changed_paths(repo.root, base, pathspecs)


def test_changed_paths_with_bad_base_quotes_git(repo: Repo, base: str) -> None:
    with pytest.raises(Refused, match=r"git diff failed .*nope"):
        git.changed_paths(repo.root, "nope", ORACLES)


# --- base revision ---------------------------------------------------------------------

ALL_SOURCES = {
    "THREE_LEDGER_BASE": "env-base",
    "GITHUB_BASE_REF": "main",
    "CI_MERGE_REQUEST_DIFF_BASE_SHA": "gitlab-sha",
}


@pytest.mark.parametrize(
    ("explicit", "env", "expected"),
    [
        ("cli-base", ALL_SOURCES, "cli-base"),
        (None, ALL_SOURCES, "env-base"),
        ("", {**ALL_SOURCES, "THREE_LEDGER_BASE": ""}, "refs/remotes/origin/main"),
        (None, {**ALL_SOURCES, "THREE_LEDGER_BASE": "", "GITHUB_BASE_REF": ""}, "gitlab-sha"),
        (None, {"CI_MERGE_REQUEST_DIFF_BASE_SHA": "gitlab-sha"}, "gitlab-sha"),
    ],
)
def test_base_resolution_order(explicit: str | None, env: dict[str, str], expected: str) -> None:
    assert git.base_choice(explicit, env).revision == expected


@pytest.mark.parametrize("env", [{}, {key: "" for key in ALL_SOURCES}])
def test_no_base_is_refused(env: dict[str, str]) -> None:
    with pytest.raises(Refused, match=r"no base revision: give --base REV .*oracles moved"):
        git.base_choice("", env)


def test_github_base_not_fetched_says_to_fetch(repo: Repo, base: str) -> None:
    with pytest.raises(Refused, match=r"origin/main.*git fetch origin .*oracles moved") as raised:
        git.resolve_base(repo.root, None, {"GITHUB_BASE_REF": "main"})
    assert "refs/remotes/origin/main" in raised.value.message


def test_github_base_once_fetched_resolves(repo: Repo, base: str) -> None:
    repo.git("update-ref", "refs/remotes/origin/main", base)
    repo.commit("head")
    resolution = git.resolve_base(repo.root, None, {"GITHUB_BASE_REF": "main"})
    assert resolution == BaseResolution("refs/remotes/origin/main", base, BaseHow.ANCESTOR)


def test_resolve_base_refuses_outside_work_tree(tmp_path: Path) -> None:
    with pytest.raises(Refused, match="not inside a git work tree"):
        git.resolve_base(tmp_path, "HEAD", {})


def test_resolve_base_unresolvable_says_cannot_tell(repo: Repo, base: str) -> None:
    with pytest.raises(Refused, match=r"'nope' does not resolve.*cannot tell") as raised:
        git.resolve_base(repo.root, "nope", {})
    assert "fetch" not in raised.value.message


@pytest.mark.parametrize("rev", ["nope", "--all", "0" * 40, ""])
def test_resolve_commit_refuses_unresolvable(repo: Repo, base: str, rev: str) -> None:
    with pytest.raises(Refused, match="does not resolve to a commit"):
        git.resolve_commit(repo.root, rev)


def test_resolve_commit_peels_tags_to_full_commit_id(repo: Repo, base: str) -> None:
    repo.git("tag", "-a", "-m", "annotated", "v1", base)
    assert git.resolve_commit(repo.root, "v1") == base
    assert git.resolve_commit(repo.root, base[:10]) == base


def test_head_revision(repo: Repo, base: str) -> None:
    head = repo.commit("next")
    assert git.head_revision(repo.root) == head != base


def test_head_revision_refused_before_first_commit(repo: Repo) -> None:
    with pytest.raises(Refused, match="'HEAD' does not resolve"):
        git.head_revision(repo.root)


# --- the base by its full name ---------------------------------------------------------


def resolved(repo: Repo, rev: str) -> BaseResolution:
    return git.resolve_base(repo.root, rev, {})


def test_a_tag_named_like_a_remote_branch_is_ambiguous(repo: Repo, base: str) -> None:
    """The attack: a tag `origin/main` on the change itself, which git prefers to the remote."""
    repo.git("update-ref", "refs/remotes/origin/main", base)
    head = repo.commit("the change")
    repo.git("tag", "origin/main", head)
    with pytest.raises(Refused) as raised:
        resolved(repo, "origin/main")
    assert raised.value.message.startswith(
        "base revision 'origin/main' is ambiguous: 'origin/main' names refs/tags/origin/main "
        "and refs/remotes/origin/main; give the one you mean by its full name"
    )
    assert raised.value.message.endswith("cannot tell whether oracles moved")
    # The full name is never ambiguous: it is the remote branch, not the tag.
    assert resolved(repo, "refs/remotes/origin/main").used == base
    assert resolved(repo, "refs/tags/origin/main").used == head


@pytest.mark.parametrize(
    ("meant", "planted", "given"),
    [
        ("refs/remotes/origin/main", "refs/heads/origin/main", "origin/main"),
        ("refs/remotes/origin/main", "refs/origin/main", "origin/main"),
        ("refs/remotes/origin/HEAD", "refs/tags/origin", "origin"),
        ("refs/heads/main", "refs/tags/main", "main~0"),
        ("refs/heads/main", "refs/tags/HEAD", "HEAD"),
        ("refs/heads/main", "refs/heads/HEAD", "@"),
    ],
)
def test_every_ref_git_would_consider_makes_a_short_name_ambiguous(
    repo: Repo, base: str, meant: str, planted: str, given: str
) -> None:
    repo.git("update-ref", meant, base)
    repo.git("update-ref", planted, repo.commit("the change"))
    with pytest.raises(Refused, match=rf"is ambiguous: .* names .*{planted}"):
        resolved(repo, given)


def test_a_full_name_that_is_missing_is_refused_not_looked_for_elsewhere(
    repo: Repo, base: str
) -> None:
    """Planted `refs/heads/refs/remotes/origin/main`: git would take it for the missing remote."""
    repo.git("update-ref", "refs/heads/refs/remotes/origin/main", repo.commit("the change"))
    with pytest.raises(Refused) as raised:
        resolved(repo, "refs/remotes/origin/main")
    assert "'refs/remotes/origin/main' does not resolve to a commit" in raised.value.message
    assert git.spelled_in_full(repo.root, "refs/remotes/origin/main~1", 40) is None
    repo.git("update-ref", "refs/remotes/origin/main", base)
    assert resolved(repo, "refs/remotes/origin/main").used == base


def test_a_short_name_is_spelled_in_full_in_an_expression(repo: Repo, base: str) -> None:
    repo.git("update-ref", "refs/remotes/origin/main", repo.commit("second"))
    head = repo.commit("head")
    spelled = git.spelled_in_full(repo.root, "origin/main~1", len(head))
    assert spelled == "refs/remotes/origin/main~1"
    assert resolved(repo, "origin/main~1") == BaseResolution(
        "origin/main~1", base, BaseHow.ANCESTOR
    )
    assert git.spelled_in_full(repo.root, "HEAD@{0}", len(head)) == "HEAD@{0}"
    assert git.spelled_in_full(repo.root, "@{-1}", len(head)) == "@{-1}"


def test_an_abbreviated_id_that_a_branch_also_names_is_ambiguous(repo: Repo, base: str) -> None:
    head = repo.commit("head")
    short = base[:10]
    assert resolved(repo, short).used == base
    repo.git("branch", short, head)  # git would now take the branch
    with pytest.raises(Refused, match=rf"refs/heads/{short} and the abbreviated object id {short}"):
        resolved(repo, short)


def test_a_full_commit_id_is_never_ambiguous(repo: Repo, base: str) -> None:
    head = repo.commit("head")
    repo.git("update-ref", f"refs/tags/{base}", head)  # git warns, and reads the id
    assert resolved(repo, base) == BaseResolution(base, base, BaseHow.ANCESTOR)


def test_a_base_that_moved_on_is_replaced_by_the_merge_base(repo: Repo, base: str) -> None:
    repo.git("checkout", "-q", "-b", "feature")
    feature = repo.commit("feature")
    repo.git("checkout", "-q", "-b", "main-moved-on", base)
    moved_on = repo.commit("main moves on")
    repo.git("checkout", "-q", "feature")
    assert resolved(repo, "main-moved-on") == BaseResolution(
        "main-moved-on", base, BaseHow.MERGE_BASE
    )
    assert resolved(repo, moved_on).used == base
    assert git.resolve_base_commit(repo.root, "main-moved-on") == base
    # HEAD itself, and its ancestors, are used as they are.
    assert resolved(repo, "HEAD") == BaseResolution("HEAD", feature, BaseHow.ANCESTOR)


def test_a_base_with_no_history_in_common_is_refused(repo: Repo, base: str) -> None:
    repo.git("checkout", "-q", "--orphan", "elsewhere")
    unrelated = repo.commit("unrelated")
    repo.git("checkout", "-q", "main")
    with pytest.raises(Refused) as raised:
        resolved(repo, "elsewhere")
    message = raised.value.message
    assert f"'elsewhere' (commit {unrelated[:12]}, from --base) is not an ancestor" in message
    assert "shares no history with it" in message
    assert "shallow" not in message  # a whole clone: there is nothing to fetch


def test_a_git_that_hangs_while_resolving_the_base_stays_a_hang(
    repo: Repo, base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`properties` reports a hung git as exit 4: the refusal wording must not hide it."""

    def hangs(root: Path, first: str, second: str) -> str | None:
        raise git.GitHung("git hung in ROOT: `git merge-base`")

    repo.commit("head")
    monkeypatch.setattr(git, "merge_base", hangs)
    with pytest.raises(git.GitHung, match="git hung in ROOT"):
        resolved(repo, base)


def test_head_as_the_base_is_head_itself_without_asking_git_again(
    repo: Repo, base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = repo.commit("head")

    def never(root: Path, first: str, second: str) -> str | None:
        raise AssertionError("HEAD's merge-base with itself is HEAD")

    monkeypatch.setattr(git, "merge_base", never)
    resolution, resolved_head = git.resolve_base_and_head(repo.root, "HEAD", {})
    assert (resolution, resolved_head) == (BaseResolution("HEAD", head, BaseHow.ANCESTOR), head)


def test_a_tag_named_head_still_makes_head_ambiguous(repo: Repo, base: str) -> None:
    repo.git("update-ref", "refs/tags/HEAD", base)
    repo.commit("head")
    with pytest.raises(Refused, match="ambiguous"):
        resolved(repo, "HEAD")


# --- ancestry --------------------------------------------------------------------------


def test_is_ancestor_or_same(repo: Repo, base: str) -> None:
    head = repo.commit("head")
    assert git.is_ancestor_or_same(repo.root, base, head)
    assert not git.is_ancestor_or_same(repo.root, head, base)
    assert git.is_ancestor_or_same(repo.root, head, head)


def test_side_branch_is_not_an_ancestor(repo: Repo, base: str) -> None:
    head = repo.commit("head")
    repo.git("checkout", "-q", "-b", "side", base)
    side = repo.commit("side")
    assert not git.is_ancestor_or_same(repo.root, side, head)


@pytest.mark.parametrize("ancestor", ["nope", "f" * 40, "--all"])
def test_unknown_ancestor_is_false(repo: Repo, base: str, ancestor: str) -> None:
    assert git.is_ancestor_or_same(repo.root, ancestor, base) is False


def test_unknown_descendant_is_refused(repo: Repo, base: str) -> None:
    with pytest.raises(Refused, match="'nope' does not resolve"):
        git.is_ancestor_or_same(repo.root, base, "nope")


# --- file contents at a revision -------------------------------------------------------


@pytest.fixture
def fixtures_base(repo: Repo) -> str:
    repo.write("fixtures/kept.json", "[1]\n")
    repo.write("fixtures/sub/edited.json", "[2]\n")
    repo.write("fixtures/größe.json", "[3]\n")
    repo.write("fixtures/binary.bin", b"\x00\xff\r\n")
    return repo.commit("fixtures")


def test_paths_differing_names_exactly_the_moved_files(repo: Repo, fixtures_base: str) -> None:
    repo.write("fixtures/sub/edited.json", "[2, 2]\n")
    repo.write("fixtures/größe.json", "[3, 3]\n")
    repo.write("fixtures/new.json", "[4]\n")
    pinned = [
        "fixtures/kept.json",
        "fixtures/sub/edited.json",
        "fixtures/größe.json",
        "fixtures/new.json",
        "fixtures/binary.bin",
    ]
    assert git.paths_differing_from(repo.root, fixtures_base, pinned) == [
        "fixtures/größe.json",
        "fixtures/new.json",
        "fixtures/sub/edited.json",
    ]


def test_paths_differing_counts_a_file_deleted_since_rev(repo: Repo, fixtures_base: str) -> None:
    (repo.root / "fixtures/kept.json").unlink()
    assert git.paths_differing_from(repo.root, fixtures_base, ["fixtures/kept.json"]) == [
        "fixtures/kept.json"
    ]


def test_a_link_in_place_of_a_file_differs(repo: Repo, fixtures_base: str) -> None:
    (repo.root / "fixtures/twin.json").write_text("[1]\n")
    (repo.root / "fixtures/kept.json").unlink()
    (repo.root / "fixtures/kept.json").symlink_to("twin.json")
    assert git.paths_differing_from(repo.root, fixtures_base, ["fixtures/kept.json"]) == [
        "fixtures/kept.json"
    ]


def test_paths_differing_from_one_path(repo: Repo, fixtures_base: str) -> None:
    assert not git.paths_differing_from(repo.root, fixtures_base, ["fixtures/kept.json"])
    repo.write("fixtures/kept.json", "[1 ]\n")
    assert git.paths_differing_from(repo.root, fixtures_base, ["fixtures/kept.json"]) == [
        "fixtures/kept.json"
    ]
    repo.write("fixtures/added.json", "[5]\n")
    assert git.paths_differing_from(repo.root, fixtures_base, ["fixtures/added.json"]) == [
        "fixtures/added.json"
    ]


def test_blob_comparison_ignores_line_ending_filters(repo: Repo, fixtures_base: str) -> None:
    # With autocrlf git would clean CRLF to LF before hashing; the gate compares raw bytes.
    repo.git("config", "core.autocrlf", "true")
    repo.write("fixtures/kept.json", "[1]\r\n")
    assert git.paths_differing_from(repo.root, fixtures_base, ["fixtures/kept.json"]) == [
        "fixtures/kept.json"
    ]


def test_file_at_present_and_absent(repo: Repo, fixtures_base: str) -> None:
    repo.write("fixtures/binary.bin", b"changed")
    assert git.file_at(repo.root, fixtures_base, "fixtures/binary.bin") == b"\x00\xff\r\n"
    assert git.file_at(repo.root, fixtures_base, "fixtures/größe.json") == b"[3]\n"
    assert git.file_at(repo.root, fixtures_base, "fixtures/absent.json") is None
    assert git.file_at(repo.root, fixtures_base, "fixtures/sub") is None


def test_file_at_unknown_revision_is_refused(repo: Repo, fixtures_base: str) -> None:
    with pytest.raises(Refused, match="git ls-tree failed"):
        git.file_at(repo.root, "nope", "fixtures/kept.json")


def test_ignored_among_answers_only_for_the_paths_asked(repo: Repo, base: str) -> None:
    """A folder the run opened (Hypothesis lists its `.hypothesis/` database) is a path too:
    the ignored files under it are not among the answers."""
    repo.write(".hypothesis/.gitignore", "*\n")
    repo.write(".hypothesis/examples/a", "x")
    repo.write("debug.log", "x")
    asked = [".hypothesis", ".hypothesis/examples/a", "debug.log", "src/app.py"]
    assert git.ignored_among(repo.root, asked) == {".hypothesis/examples/a", "debug.log"}
