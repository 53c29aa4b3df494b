"""The oracles of a run scored from a JUnit report, where nothing measures what the run used.

With `product_paths`, the pin says what the product is, so everything else that differs
from the base is an oracle: every changed file but the product, the pinned fixtures (the
fixture pin binds their bytes), the pins (merge row 4 judges those) and the gate's own
outputs. Without it, the oracles stay inferred (`oracle_paths`, and what steers mocha, jest
and vitest: `runner_config.py`), and the launch chain joins them: what decides which program
runs and with what arguments, so that a change cannot swap the runner for a command that
copies an old passing report. The launch chain is the files the command names, the
package.json scripts an npm, yarn or pnpm command runs (with their `pre` and `post`
scripts) and the files those name, npm's `.npmrc` and what its `node-options` load, and,
when make runs, the Makefile with the files it includes.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from three_ledger import git
from three_ledger.frozen import frozen
from three_ledger.pins import PropertiesPin
from three_ledger.run.measured_oracles import BeforeRun
from three_ledger.run.runner_config import (
    analyse,
    base_package_json,
    changed_entries,
    command_words,
    hook_words,
    npmrc_values,
    read_package,
    relative_file,
    script_hooks,
)

CHANGED_OUTSIDE_PRODUCT = "changed outside product_paths (JUnit mode measures nothing)"
NAMED_BY_COMMAND = "launch chain: a file the command names"
NAMED_BY_SCRIPT = "launch chain: a file a package.json script the command runs names"
SCRIPT = "launch chain: a package.json script the command runs"
NPMRC = "launch chain: npm's configuration (node-options can preload code)"
NAMED_BY_NPMRC = "launch chain: a file .npmrc's node-options loads"
MAKEFILE = "launch chain: the Makefile make reads"

_NPM_PROGRAMS = frozenset({"npm", "npx", "yarn", "pnpm"})
_MAKE_PROGRAMS = frozenset({"make", "gmake"})
_DEFAULT_MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
# What a shell line puts around a word: quotes, separators, redirections.
_SHELL_PUNCTUATION = "'\"`;&|()<>"
_SHELL_SEPARATORS = frozenset({";", "&&", "||", "|", "&"})
_MAKE_OPTIONS = {"-C": "-C", "--directory": "-C", "-f": "-f", "--file": "-f", "--makefile": "-f"}
_INCLUDE = re.compile(r"^\s*[-s]?include\s+(.*)$")
# Makefiles including Makefiles: enough for any real project, and no loop.
_MAX_MAKEFILES = 64


@frozen
class Exempt:
    """What is never an oracle of a JUnit run with `product_paths`, relative to ROOT."""

    fixture_files: frozenset[str]
    # Files of the gate's own making: the report, --out, --log.
    outputs: frozenset[str]
    # The folders of the pins given: a `.json` directly in one is a pin (row 4 judges it).
    pin_folders: frozenset[str]
    # The folders of --out and --log (not ROOT): what git does not track there is an output.
    output_folders: frozenset[str]


def exempt(
    root: Path, fixture_files: Iterable[str], pins: Iterable[Path], outputs: Iterable[Path]
) -> Exempt:
    """EXEMPT from paths as given on the command line (relative to the current directory)."""
    output_paths = {_under_root(root, path) for path in outputs}
    pin_paths = {_under_root(root, path) for path in pins}
    return Exempt(
        frozenset(fixture_files),
        frozenset(path for path in output_paths if path is not None),
        frozenset(posixpath.dirname(path) for path in pin_paths if path is not None),
        frozenset(posixpath.dirname(path) for path in output_paths if path is not None) - {""},
    )


def _under_root(root: Path, path: Path) -> str | None:
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    return None if relative == ".." or relative.startswith("../") else Path(relative).as_posix()


def declared_product_changes(
    root: Path, before: BeforeRun, pin: PropertiesPin, exempted: Exempt
) -> dict[str, str]:
    """Every path that differed from the base when the command started, but the product, the
    pinned fixtures, the pins and the gate's outputs, each with why it counts."""
    candidates = [
        path
        for path in sorted(before.differing)
        if not pin.is_product(path)
        and path not in exempted.fixture_files
        and path not in exempted.outputs
        and not _is_pin(path, exempted)
    ]
    in_output_folders = [
        path for path in candidates if posixpath.dirname(path) in exempted.output_folders
    ]
    tracked = {p.as_posix() for p in git.tracked_among(root, [Path(p) for p in in_output_folders])}
    outputs = {path for path in in_output_folders if path not in tracked}
    return {path: CHANGED_OUTSIDE_PRODUCT for path in candidates if path not in outputs}


def _is_pin(path: str, exempted: Exempt) -> bool:
    return path.endswith(".json") and posixpath.dirname(path) in exempted.pin_folders


@frozen
class LaunchChain:
    """The files of the launch chain under ROOT with why each belongs, and the package.json
    scripts the command runs."""

    files: dict[str, str]
    scripts: tuple[str, ...]


def launch_chain_changes(
    root: Path, base: str, command: Sequence[str], outputs: Iterable[str] = ()
) -> dict[str, str]:
    """Each file and package.json script of the launch chain that differs from BASE, with why.

    Files are listed by path, scripts as `package.json:scripts.NAME`. OUTPUTS (the report)
    are never part of the chain.
    """
    package = read_package(root)
    chain = launch_chain(root, command, package)
    files = {path: why for path, why in chain.files.items() if path not in set(outputs)}
    changes = {path: files[path] for path in git.changed_paths(root, base, sorted(files))}
    keys = [f"scripts.{hook}" for name in chain.scripts for hook in script_hooks(name)]
    base_package = base_package_json(root, base)
    changes.update((entry, SCRIPT) for entry in changed_entries(keys, package, base_package))
    return changes


def launch_chain(root: Path, command: Sequence[str], package: Mapping[str, Any]) -> LaunchChain:
    """The launch chain of COMMAND in ROOT, whose package.json is PACKAGE."""
    run = analyse(command, package)
    scripts = package.get("scripts")
    scripts = scripts if isinstance(scripts, Mapping) else {}
    script_words = [word for name in run.scripts for word in hook_words(scripts, name)]
    files: dict[str, str] = {}
    if any(posixpath.basename(word) in _NPM_PROGRAMS for word in run.words):
        files[".npmrc"] = NPMRC
        files.update((path, NAMED_BY_NPMRC) for path in named_files(root, npmrc_values(root)))
    files.update((path, NAMED_BY_SCRIPT) for path in named_files(root, script_words))
    files.update((path, NAMED_BY_COMMAND) for path in named_files(root, command_words(command)))
    files.update(makefiles(root, run.words))
    return LaunchChain(files, run.scripts)


def named_files(root: Path, words: Iterable[str]) -> list[str]:
    """The files under ROOT that WORDS name (a word, or the value of `--flag=value`)."""
    found: list[str] = []
    for word in words:
        for candidate in _word_values(word):
            path = relative_file(root, candidate)
            if path is not None and (root / path).is_file():
                found.append(path)
    return found


def _word_values(word: str) -> list[str]:
    bare = word.strip(_SHELL_PUNCTUATION)
    name, equals, value = bare.partition("=")
    values = [bare]
    if equals and name.startswith("-"):
        values.append(value.strip(_SHELL_PUNCTUATION))
    return [value for value in values if value]


def makefiles(root: Path, words: Sequence[str]) -> dict[str, str]:
    """For each `make` in WORDS, the Makefile it reads and the files that one includes."""
    found: dict[str, str] = {}
    for index, word in enumerate(words):
        if posixpath.basename(word) not in _MAKE_PROGRAMS:
            continue
        folder, named = make_arguments(words[index + 1 :])
        defaults = [name for name in _DEFAULT_MAKEFILES if (root / folder / name).is_file()]
        for makefile in named or defaults[:1] or ["Makefile"]:
            _add_makefile(root, folder, makefile, MAKEFILE, found)
    return found


def make_arguments(words: Sequence[str]) -> tuple[str, list[str]]:
    """The folder make runs in (`-C`) and the Makefiles it is given (`-f`), read up to the
    end of its command."""
    folder, named = ".", []
    index = 0
    while index < len(words):
        word = words[index]
        if word in _SHELL_SEPARATORS or word.endswith(";"):
            break
        option, value = _make_option(word)
        if option is not None and value is None and index + 1 < len(words):
            index += 1
            value = words[index]
        if option == "-C" and value:
            folder = posixpath.normpath(posixpath.join(folder, value))
        elif option == "-f" and value:
            named.append(value)
        index += 1
    return folder, named


def _make_option(word: str) -> tuple[str | None, str | None]:
    """`-C`/`-f` for WORD when it is one of their spellings, with the value it carries."""
    if word in _MAKE_OPTIONS:
        return _MAKE_OPTIONS[word], None
    name, equals, value = word.partition("=")
    if equals and name.startswith("--") and name in _MAKE_OPTIONS:
        return _MAKE_OPTIONS[name], value
    for short in ("-C", "-f"):
        if word.startswith(short) and len(word) > len(short):
            return short, word[len(short) :]
    return None, None


def _add_makefile(root: Path, folder: str, name: str, why: str, found: dict[str, str]) -> None:
    """Add Makefile NAME (relative to make's FOLDER) and, once each, what it includes."""
    if len(found) >= _MAX_MAKEFILES or "$" in name:
        return
    path = relative_file(root, posixpath.join(folder, name))
    if path is None or path in found:
        return
    found[path] = why
    for included in included_files(root / path, root / folder):
        _add_makefile(root, folder, included, f"launch chain: included by {path}", found)


def included_files(makefile: Path, folder: Path) -> list[str]:
    """The names a Makefile's `include`, `-include` and `sinclude` lines give, relative to
    make's FOLDER; globs are expanded there, and names built from variables are left out."""
    try:
        text = makefile.read_text("utf-8", "replace")
    except OSError:
        return []
    names: list[str] = []
    for line in text.splitlines():
        match = _INCLUDE.match(line.split("#", 1)[0])
        if match is None:
            continue
        for word in match.group(1).split():
            if "$" in word:
                continue
            if any(char in word for char in "*?["):
                hits = sorted(folder.glob(word))
                names.extend(hit.relative_to(folder).as_posix() for hit in hits)
            else:
                names.append(word)
    return names
