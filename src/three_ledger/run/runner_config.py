"""What steers a mocha, jest or vitest run, measured as implicit oracles.

A config file, a `--require`d setup file, `.npmrc`'s `node-options`, a package.json key or
a dependency entry of the runner or its reporter can skip, filter or neuter assertions, or
change the report the gate reads. When the command runs one of these runners, `properties`
compares them against the base exactly as it compares the pin's `oracle_paths`.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from three_ledger import git
from three_ledger.frozen import frozen

RUNNERS = ("mocha", "jest", "vitest")
_PROGRAM_ALIASES = {"_mocha": "mocha", "jest-cli": "jest"}
_SCRIPT_EXTENSIONS = (".js", ".cjs", ".mjs")
_CODE_EXTENSIONS = ("js", "cjs", "mjs", "ts", "cts", "mts")

CONFIG_FILES = {
    "mocha": tuple(
        f".mocharc.{extension}" for extension in ("js", "cjs", "yaml", "yml", "jsonc", "json")
    ),
    "jest": (
        *(f"jest.config.{extension}" for extension in (*_CODE_EXTENSIONS, "json")),
        *(f"babel.config.{extension}" for extension in (*_CODE_EXTENSIONS, "json")),
        *(f".babelrc{suffix}" for suffix in ("", ".js", ".cjs", ".mjs", ".json")),
    ),
    "vitest": tuple(
        f"{stem}.{extension}"
        for stem in ("vitest.config", "vite.config", "vitest.workspace")
        for extension in (*_CODE_EXTENSIONS, "json")
    ),
}
# npm reads these for every script it runs: `node-options` can preload code.
NPM_FILES = (".npmrc",)
# The keys of package.json the runner or its reporter reads (vitest reads none).
PACKAGE_KEYS = {"mocha": ("mocha",), "jest": ("jest", "jest-junit"), "vitest": ()}
# Reporters and plugins whose version decides what is run or what the report says.
KNOWN_PACKAGES = {
    "mocha": ("mocha", "mocha-junit-reporter"),
    "jest": ("jest", "jest-cli", "jest-junit", "ts-jest", "babel-jest", "jest-circus"),
    "vitest": ("vitest", "vite", "@vitest/runner", "@vitest/snapshot"),
}
DEPENDENCY_KEYS = (
    "dependencies",
    "devDependencies",
    "optionalDependencies",
    "peerDependencies",
    "overrides",
    "resolutions",
)
LOCKFILES = ("package-lock.json", "npm-shrinkwrap.json")
SNAPSHOT_FOLDER = "__snapshots__"

# Flags (of the runners and of node) whose value is a file or package that runs with the tests.
_FILE_FLAGS = frozenset(
    {
        "--require",
        "-r",
        "--file",
        "--import",
        "--loader",
        "--experimental-loader",
        "--config",
        "-c",
        "--package",
        "--setupFiles",
        "--setupFilesAfterEnv",
        "--globalSetup",
        "--globalTeardown",
        "--testEnvironment",
        "--snapshotResolver",
        "--reporter",
        "--reporters",
        "--testRunner",
    }
)
# Keys of config files and package.json runner keys with the same meaning.
_FILE_KEYS = (
    "require",
    "file",
    "import",
    "loader",
    "setupFiles",
    "setupFilesAfterEnv",
    "globalSetup",
    "globalTeardown",
    "testEnvironment",
    "snapshotResolver",
    "reporter",
    "reporters",
    "testRunner",
    "runner",
    "transform",
    "preset",
)
_KEYS = "|".join(_FILE_KEYS)
# `key: value` in JSON, YAML or JS; the value a string, a list or a flat object of strings.
_VALUE = r"""(\[[^\]]*\]|\{[^}]*\}|"[^"]*"|'[^']*'|`[^`]*`)"""
# Patterns, not compiled ones: `re` compiles each at its first use (a JavaScript runner's
# config read), not at every gated start, which imports this module (some 8 million
# instructions), and keeps it in its cache.
_KEY_VALUE = r"""["']?\b(?:""" + _KEYS + r""")["']?\s*[:=]\s*""" + _VALUE
_YAML_LIST_KEY = r"^\s*(?:" + _KEYS + r")\s*:\s*$"
_YAML_ITEM = r"""^\s*-\s*["']?([^"'#]+?)["']?\s*$"""
_QUOTED = r""""([^"]*)"|'([^']*)'|`([^`]*)`"""
_PACKAGE_NAME = r"^(@[a-z0-9][\w.~-]*/)?[a-z0-9][\w.~-]*"


@frozen
class RunnerCommand:
    """What a command runs: the runners, the npm scripts, and every word of both."""

    runners: frozenset[str]
    scripts: tuple[str, ...]
    words: tuple[str, ...]


def command_words(command: Sequence[str]) -> list[str]:
    """The command's words, also those inside a `sh -c '...'` string."""
    return [token for argument in command for token in argument.split()]


def read_package(root: Path) -> dict[str, Any]:
    """ROOT/package.json as a dict; {} when absent or unreadable (the runner will say why)."""
    try:
        document = json.loads((root / "package.json").read_bytes())
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}


def analyse(command: Sequence[str], package: Mapping[str, Any]) -> RunnerCommand:
    """The runners COMMAND runs, directly or through the package.json scripts it names."""
    scripts = package.get("scripts")
    scripts = scripts if isinstance(scripts, dict) else {}
    words = command_words(command)
    names: list[str] = []
    pending = npm_scripts(words, scripts)
    while pending:  # a script may itself run `npm run other`
        name = pending.pop(0)
        if name in names or len(names) > 20:
            continue
        names.append(name)
        script_words = hook_words(scripts, name)
        words.extend(script_words)
        pending.extend(npm_scripts(script_words, scripts))
    runners = frozenset(runner for word in words if (runner := program_runner(word)))
    return RunnerCommand(runners, tuple(names), tuple(words))


def hook_words(scripts: Mapping[str, Any], name: str) -> list[str]:
    """The words of script NAME with its `pre` and `post` scripts, which npm runs around it."""
    return [word for hook in script_hooks(name) for word in str(scripts.get(hook, "")).split()]


def script_hooks(name: str) -> tuple[str, str, str]:
    return ("pre" + name, name, "post" + name)


def program_runner(word: str) -> str | None:
    """`mocha`, `jest` or `vitest` when WORD invokes that runner (a path, `name@version`)."""
    name = posixpath.basename(word).split("@", 1)[0] if not word.startswith("@") else ""
    for extension in _SCRIPT_EXTENSIONS:
        name = name.removesuffix(extension)
    name = _PROGRAM_ALIASES.get(name, name)
    return name if name in RUNNERS else None


def npm_scripts(words: Sequence[str], scripts: Mapping[str, Any]) -> list[str]:
    """Names of the package.json scripts that `npm test`, `npm run X`, `yarn X`... run."""
    names: list[str] = []
    for index, word in enumerate(words):
        if posixpath.basename(word) not in ("npm", "yarn", "pnpm"):
            continue
        rest = [w for w in words[index + 1 :] if not w.startswith("-")]
        if not rest:
            continue
        if rest[0] in ("test", "t", "tst"):
            names.append("test")
        elif rest[0] in ("run", "run-script") and len(rest) > 1:
            names.append(rest[1])
        elif rest[0] in scripts and posixpath.basename(word) != "npm":
            names.append(rest[0])
    return names


def runner_oracle_changes(root: Path, base: str, command: Sequence[str]) -> list[str]:
    """The runner configuration that differs from BASE, as `oracle_changes` lists it.

    Files are listed by path; package.json and lockfile entries as `package.json:KEY`.
    Empty when the command runs none of mocha, jest and vitest.
    """
    package = read_package(root)
    run = analyse(command, package)
    if not run.runners:
        return []
    changed = git.changed_paths(root, base, implicit_oracle_paths(root, base, run, package))
    return sorted({*changed, *package_changes(root, base, run, package)})


def implicit_oracle_paths(
    root: Path, base: str, run: RunnerCommand, package: Mapping[str, Any]
) -> list[str]:
    """Config files, setup files and snapshot folders that steer RUN, relative to ROOT."""
    paths: set[str] = set(NPM_FILES)
    for runner in sorted(run.runners):
        paths.update(CONFIG_FILES[runner])
    referenced = list(flag_values(run.words)) + list(npmrc_values(root))
    for name in sorted(paths) + [value for value in referenced if _is_path_like(value)]:
        referenced.extend(config_values(root, name))
    referenced.extend(_package_key_values(run, package))
    files = filter(None, (relative_file(root, value) for value in referenced))
    # A flag value that names a folder is a spec folder or an option's value (mocha's `-c` is
    # `--colors`), not code that steers the run: making it an oracle would flag the library.
    paths.update(path for path in files if not (root / path).is_dir())
    paths.update(snapshot_folders(root, base))
    return sorted(paths)


def flag_values(words: Sequence[str]) -> Iterator[str]:
    """The values of file-naming flags: `--require X`, `--require=X`, `-r X`."""
    for index, word in enumerate(words):
        name, equals, value = word.partition("=")
        if name not in _FILE_FLAGS:
            continue
        if equals:
            yield value
        elif index + 1 < len(words):
            yield words[index + 1]


def npmrc_values(root: Path) -> Iterator[str]:
    """The files and packages `.npmrc`'s `node-options` loads into every node npm starts."""
    text = _read_text(root / ".npmrc")
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "node-options":
            yield from flag_values(value.strip().strip("\"'").split())


def config_values(root: Path, name: str) -> list[str]:
    """Strings that the setup keys of config file ROOT/NAME hold (JSON, YAML or JS)."""
    path = relative_file(root, name)
    if path is None:
        return []
    text = _read_text(root / path)
    values = [
        next(group for group in quoted.groups() if group is not None)
        for match in re.finditer(_KEY_VALUE, text)
        for quoted in re.finditer(_QUOTED, match.group(1))
    ]
    return values + list(_yaml_list_values(text))


def _yaml_list_values(text: str) -> Iterator[str]:
    in_list = False
    for line in text.splitlines():
        item = re.match(_YAML_ITEM, line)
        if in_list and item:
            yield item.group(1)
            continue
        in_list = bool(re.match(_YAML_LIST_KEY, line))


def _package_key_values(run: RunnerCommand, package: Mapping[str, Any]) -> list[str]:
    values: list[str] = []
    for key in sorted({key for runner in run.runners for key in PACKAGE_KEYS[runner]}):
        section = package.get(key)
        if isinstance(section, dict):
            values.extend(_strings_under(section, _FILE_KEYS))
    return values


def _strings_under(section: Mapping[str, Any], keys: Iterable[str]) -> Iterator[str]:
    for key in keys:
        value = section.get(key)
        yield from _strings(value)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _is_path_like(value: str) -> bool:
    return value.startswith(("./", "../", "<rootDir>/")) or "." in posixpath.basename(value)


def relative_file(root: Path, value: str) -> str | None:
    """VALUE as a path relative to ROOT, when it names something under ROOT; else None."""
    value = value.removeprefix("<rootDir>/")
    if not value or "\0" in value:
        return None
    looks_like_path = value.startswith(("./", "../", "/")) or os.path.lexists(root / value)
    if not looks_like_path:
        return None
    absolute = os.path.normpath(os.path.join(os.path.abspath(root), value))
    relative = os.path.relpath(absolute, os.path.abspath(root))
    if relative == "." or relative.startswith(".."):
        return None
    return Path(relative).as_posix()


def snapshot_folders(root: Path, base: str) -> list[str]:
    """Every `__snapshots__` folder under ROOT, at BASE or in the work tree (new or deleted)."""
    folders: set[str] = set()
    for path in (*git.files_at(root, base), *git.work_tree_files(root)):
        parts = path.split("/")
        if SNAPSHOT_FOLDER in parts[:-1]:
            folders.add("/".join(parts[: parts.index(SNAPSHOT_FOLDER) + 1]))
    return sorted(folders)


def package_changes(
    root: Path, base: str, run: RunnerCommand, package: Mapping[str, Any]
) -> list[str]:
    """The package.json and lockfile entries that steer RUN and differ from BASE."""
    base_package = base_package_json(root, base)
    changes = changed_entries(package_keys(run, package, base_package), package, base_package)
    for lockfile in LOCKFILES:
        current, before = _read_json(root / lockfile), _json_at(root, base, lockfile)
        changes.extend(
            f"{lockfile}:packages.node_modules/{name}"
            for name in sorted(dependency_names(run, package, base_package))
            if _locked(current, name) != _locked(before, name)
        )
    return changes


def base_package_json(root: Path, base: str) -> dict[str, Any]:
    """package.json at BASE; {} where it has none."""
    return _json_at(root, base, "package.json")


def changed_entries(
    keys: Iterable[str], package: Mapping[str, Any], base_package: Mapping[str, Any]
) -> list[str]:
    """`package.json:KEY` for each dotted KEY whose value differs between the two, sorted."""
    return [
        f"package.json:{key}"
        for key in sorted(keys)
        if _entry(package, key) != _entry(base_package, key)
    ]


def package_keys(
    run: RunnerCommand, package: Mapping[str, Any], base_package: Mapping[str, Any]
) -> set[str]:
    """Dotted keys of package.json that steer RUN."""
    keys = {key for runner in run.runners for key in PACKAGE_KEYS[runner]}
    for name in run.scripts:
        keys.update(f"scripts.{hook}" for hook in script_hooks(name))
    for name in dependency_names(run, package, base_package):
        keys.update(f"{section}.{name}" for section in DEPENDENCY_KEYS)
    return keys


def dependency_names(
    run: RunnerCommand, package: Mapping[str, Any], base_package: Mapping[str, Any]
) -> set[str]:
    """The runners, their known reporters and plugins, and every package a flag or key names."""
    names = {name for runner in run.runners for name in KNOWN_PACKAGES[runner]}
    values = [*flag_values(run.words), *_package_key_values(run, package)]
    values.extend(_package_key_values(run, base_package))
    names.update(filter(None, (_package_name(value) for value in values)))
    return names


def _package_name(value: str) -> str | None:
    if value.startswith((".", "/", "<")):
        return None
    match = re.match(_PACKAGE_NAME, value)
    return match.group(0).rstrip("/") if match else None


def _entry(document: Mapping[str, Any], dotted: str) -> Any:
    section, _, rest = dotted.partition(".")
    value = document.get(section)
    if rest and isinstance(value, dict):
        return value.get(rest)
    return value if not rest else None


def _locked(lockfile: Mapping[str, Any], name: str) -> Any:
    packages = lockfile.get("packages")
    return packages.get(f"node_modules/{name}") if isinstance(packages, dict) else None


def _json_at(root: Path, base: str, path: str) -> dict[str, Any]:
    data = git.file_at(root, base, path)
    return _parse_object(data) if data is not None else {}


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return _parse_object(path.read_bytes())
    except OSError:
        return {}


def _parse_object(data: bytes) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except ValueError:
        # Unreadable JSON is kept as its text, so that a change to it still shows.
        return {"": data.decode("utf-8", "replace")}
    return document if isinstance(document, dict) else {"": document}


def _read_text(path: Path) -> str:
    try:
        if path.is_file():
            return path.read_text("utf-8", "replace")
    except OSError:
        pass
    return ""
