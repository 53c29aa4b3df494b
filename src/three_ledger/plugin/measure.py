"""What a test run executes and reads under ROOT, measured by an audit hook from the start.

The gate stages this file as `sitecustomize.py` on the child's PYTHONPATH, so that `site`
imports it in every Python process of the run (pytest, its xdist workers, Python
subprocesses that keep the environment) before any module of the project, and before the
plugin. It arms `sys.addaudithook` at once: a module that later deletes its own file or
swaps itself out of `sys.modules` has already been recorded. Then it runs the
`sitecustomize` it shadows, if the interpreter has one.

Each process appends to a file of its own in the folder `THREE_LEDGER_MEASURE` names: one
header line (its pid, the interpreter's own folders, and the modules from ROOT that were
already loaded when the hook was armed), then one line per file under ROOT the first time
it is imported (Python code run, an extension module loaded), executed (a library ctypes
loads, a program the process starts) or opened for reading (`read`). The gate reads every
file after the run (`run/measurement.py`). Standard library only.
"""

from __future__ import annotations

import os
import sys

# What this module imports, every Python process of the run imports before its own first
# line: `os` and `sys`, which `site` has loaded already, and json's string encoder in C. Not
# `json` (with `re` and `enum` under it) nor `typing`: some 40 million instructions, about a
# Python's start over again, in each Python subprocess a test starts. mypy reads any name
# TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

try:
    from _json import encode_basestring_ascii as _json_string
except ImportError:  # an interpreter without json's C part
    from json.encoder import encode_basestring_ascii as _json_string

# Not popped by the plugin: xdist workers and subprocesses start after it configures.
MEASURE_ENV = "THREE_LEDGER_MEASURE"
MEASURE_ROOT_ENV = "THREE_LEDGER_MEASURE_ROOT"
IMPORTED, EXECUTED, READ = "imported", "executed", "read"
# `import` carries a file name only for an extension module, which runs no `exec`; a program
# a process starts, whichever way it is started, and a library ctypes loads run code too.
_STARTS = frozenset({"os.exec", "os.posix_spawn", "subprocess.Popen"})
_WANTED = frozenset({"exec", "open", "import", "ctypes.dlopen", *_STARTS})


class _Recorder:
    """The audit hook of one process: the first use of each file under ROOT, written once."""

    def __init__(self, roots: tuple[str, ...], out: int) -> None:
        # ROOT as given and as its real path: paths reach the hook in either spelling.
        self.prefixes = tuple(root.rstrip(os.sep) + os.sep for root in roots)
        self.out = out  # a descriptor open for appending: each line is one write
        self.seen: set[str] = set()

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "exec":
            path = getattr(args[0], "co_filename", None)
            how = IMPORTED
        elif event == "open":
            path, mode, flags = args
            if _writes_only(mode, flags):
                return
            how = READ
        elif event == "import":
            path, how = args[1], IMPORTED  # (module, filename, ...): None but for native code
        elif event == "ctypes.dlopen":
            path, how = _named_file(args[0]), EXECUTED  # a bare name is the loader's to find
        else:
            path, how = _program(event, args), EXECUTED
        if not isinstance(path, str | bytes) or not path:
            return
        name = os.fsdecode(path)
        if name[0] != "<":  # `<string>`, `<frozen importlib.util>`: no file
            self.note(name, how)

    def note(self, path: str, how: str) -> None:
        key = f"{how}\0{path}"
        if key in self.seen:
            return
        self.seen.add(key)
        # Normalised whole: `pkg/../../data.txt` opened by a product module is the data file,
        # not a file of `pkg`'s for the product globs to pass as product.
        full = os.path.normpath(path if path[0] == os.sep else os.path.join(os.getcwd(), path))
        for prefix in self.prefixes:
            if full.startswith(prefix):
                # The text `json.dumps` makes of {"how": how, "path": ...}, by its own string
                # encoder: `json.dumps` builds an encoder for each call, once per file here.
                path = _json_string(full[len(prefix) :])
                _write(self.out, f'{{"how": {_json_string(how)}, "path": {path}}}\n'.encode())
                return


def _named_file(name: object) -> str | None:
    """NAME, where it names a file by a path (holds a separator) rather than a bare name."""
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str | bytes) or not name:
        return None
    text = os.fsdecode(name)
    return text if os.sep in text else None


def _program(event: str, args: tuple[Any, ...]) -> str | None:
    """The file a process start runs: `os.exec` and `os.posix_spawn` give (path, argv, env),
    `subprocess.Popen` (executable, args, cwd, env). A bare name is looked up on the PATH the
    program gets, as exec looks it up; a relative path is relative to the folder it starts in."""
    popen = event == "subprocess.Popen"
    program, cwd, env = args[0], args[2] if popen else None, args[3] if popen else args[2]
    path = _named_file(program)
    if path is not None:
        return path if cwd is None else os.path.join(os.fsdecode(cwd), path)
    if not isinstance(program, str | bytes) or not program:
        return None
    name = os.fsdecode(program)
    search = os.environ.get("PATH", os.defpath) if env is None else _path_of(env)
    for folder in search.split(os.pathsep):
        found = os.path.join(os.fsdecode(cwd) if cwd is not None else "", folder or ".", name)
        if os.path.isfile(found) and os.access(found, os.X_OK):
            return found
    return None


def _path_of(env: Any) -> str:
    """The PATH of an environment a process is started with (str or bytes keys)."""
    try:
        found = env.get("PATH", env.get(b"PATH", os.defpath))
    except (AttributeError, TypeError):
        return os.defpath
    return os.fsdecode(found) if isinstance(found, str | bytes) else os.defpath


def _write(descriptor: int, data: bytes) -> None:
    """DATA appended whole: write(2) to a regular file is short only when interrupted or out
    of space, and a line cut there would be no record of its file."""
    while data:
        data = data[os.write(descriptor, data) :]


def _writes_only(mode: object, flags: object) -> bool:
    """An open that cannot read what it opens: `w`, `a`, `x` without `+`, or O_WRONLY."""
    if isinstance(mode, str):
        return "+" not in mode and ("w" in mode or "a" in mode or "x" in mode)
    return isinstance(flags, int) and flags & os.O_ACCMODE == os.O_WRONLY


def _loaded_from(root: str) -> list[str]:
    prefix = root.rstrip(os.sep) + os.sep
    own = {os.path.realpath(folder) for folder in (sys.prefix, sys.base_prefix)}
    loaded = []
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        inside = isinstance(where, str) and where.startswith(prefix)
        if inside and not any(os.path.realpath(str(where)).startswith(f + os.sep) for f in own):
            loaded.append(name)
    return sorted(loaded)


def arm() -> None:
    """Install the hook in this process, if the gate asked for a measurement."""
    folder, root = os.environ.get(MEASURE_ENV), os.environ.get(MEASURE_ROOT_ENV)
    if not folder or not root:
        return
    roots = tuple(dict.fromkeys((os.path.abspath(root), os.path.realpath(root))))
    # Kept open for the life of the process, each line written whole by one write(2): it
    # lands as it is seen, with no buffer for the process to lose at an abrupt exit.
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    out = os.open(os.path.join(folder, f"{os.getpid()}.jsonl"), flags, 0o666)  # as open()
    prefixes = sorted({sys.prefix, sys.base_prefix, sys.exec_prefix})
    loaded = sorted({name for root in roots for name in _loaded_from(root)})
    # The text `json.dumps` makes of {"pid": ..., "python": ..., "prefixes": [...],
    # "loaded_before": [...]}.
    header = (
        f'{{"pid": {os.getpid()}, "python": {_json_string(sys.version)}, '
        f'"prefixes": [{", ".join(map(_json_string, prefixes))}], '
        f'"loaded_before": [{", ".join(map(_json_string, loaded))}]}}\n'
    )
    _write(out, header.encode())
    recorder = _Recorder(roots, out)

    # A plain function: calling the recorder itself from the hook machinery, for every event
    # of the process, cost about 80 ns more an event than a function that drops it.
    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in _WANTED:  # first, and constant-time: most events are not wanted
            recorder(event, args)

    sys.addaudithook(hook)


def _run_shadowed_sitecustomize() -> None:
    """The interpreter's own sitecustomize, which this file stands in front of on sys.path."""
    from importlib.machinery import PathFinder

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    try:
        # What `importlib.util.module_from_spec` is, without `importlib.util`, which brings
        # `contextlib`, `functools` and `collections` into every measured process.
        from importlib._bootstrap import module_from_spec
    except ImportError:
        from importlib.util import module_from_spec
    module = module_from_spec(spec)
    spec.loader.exec_module(module)


if __name__ == "sitecustomize":
    arm()
    _run_shadowed_sitecustomize()
