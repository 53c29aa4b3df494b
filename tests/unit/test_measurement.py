"""The audit hook (plugin/measure.py) in a real Python child, and the gate's reading of it."""

from __future__ import annotations

import _csv
import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import fast_path_examples
from three_ledger.errors import InfraFailure
from three_ledger.plugin.wire import MEASURE_ENV, MEASURE_ROOT_ENV
from three_ledger.run.child import Measurement
from three_ledger.run.measurement import prepare, read_measured


def measured_child(private: Path, root: Path, code: str, *, python_path: str = "") -> Measurement:
    """Run CODE in a Python child of ROOT with the hook staged as a run stages it."""
    private.mkdir()
    measurement = prepare(private)
    paths = [str(measurement.hook_folder), *([python_path] if python_path else [])]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("THREE_LEDGER_", "COV"))},
        "PYTHONPATH": os.pathsep.join(paths),
        MEASURE_ENV: str(measurement.records),
        MEASURE_ROOT_ENV: str(root),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    subprocess.run([sys.executable, "-c", code], cwd=root, env=env, check=True, timeout=60)
    return measurement


def record(folder: Path, header: dict[str, object], *lines: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(entry) + "\n" for entry in (header, *lines))
    (folder / f"{len(list(folder.iterdir())) + 1}.jsonl").write_text(text)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "helper.py").write_text("VALUE = 1\n")
    (folder / "data.txt").write_text("cases\n")
    return folder


def test_the_hook_records_what_the_child_imports_and_reads_under_root(
    tmp_path: Path, root: Path
) -> None:
    code = (
        "import helper\n"
        "open('data.txt').read()\n"
        "open('written.txt', 'w').write('x')\n"
        "import json\n"  # outside ROOT: not recorded
    )
    measurement = measured_child(tmp_path / "private", root, code)
    assert read_measured(measurement, root) == {"helper.py": "imported", "data.txt": "read"}


def test_native_code_and_programs_the_child_runs_are_recorded(tmp_path: Path, root: Path) -> None:
    """An extension module under ROOT is imported ahead of a `.py` of its name and runs no
    Python `exec`; a library ctypes loads and a program a test starts run no Python either.
    Each is recorded by the file it runs, a program found on PATH as exec finds it."""
    extension = Path(_csv.__file__)
    shutil.copy(extension, root / extension.name)
    for name in ("tool.sh", "bin/on_path.sh", "bin/not_run.sh"):
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text("#!/bin/sh\nexit 0\n")
        (root / name).chmod(0o755)
    code = (
        "import sys, ctypes, os, subprocess\n"
        "import _csv\n"
        f"assert _csv.__file__ == {str(root / extension.name)!r}, _csv.__file__\n"
        f"ctypes.CDLL('./{extension.name}')\n"
        "subprocess.run(['./tool.sh'], check=True)\n"
        "subprocess.run(['on_path.sh'], check=True, env={'PATH': 'bin'})\n"
        "subprocess.run(['true'], check=True)\n"  # found outside ROOT: not recorded
    )
    measurement = measured_child(tmp_path / "private", root, code)
    assert read_measured(measurement, root) == {
        extension.name: "imported",
        "tool.sh": "executed",
        "bin/on_path.sh": "executed",
    }


def test_a_python_subprocess_of_the_run_is_measured_in_a_record_of_its_own(
    tmp_path: Path, root: Path
) -> None:
    """A test that starts Python keeps the environment: the subprocess arms the hook at its
    start too, and what it alone reads is in its own record."""
    code = (
        "import subprocess, sys\n"
        "subprocess.run([sys.executable, '-c', 'open(\"data.txt\").read()'], check=True)\n"
    )
    measurement = measured_child(tmp_path / "private", root, code)
    assert len(list(measurement.records.glob("*.jsonl"))) == 2
    assert read_measured(measurement, root) == {"data.txt": "read"}


def test_a_module_that_hides_itself_was_already_recorded(tmp_path: Path, root: Path) -> None:
    hiding = "import sys\nsys.modules[__name__] = type(sys)(__name__)\ndel __file__\n"
    (root / "hiding.py").write_text(hiding)
    measurement = measured_child(tmp_path / "private", root, "import hiding")
    assert read_measured(measurement, root) == {"hiding.py": "imported"}


def test_the_sitecustomize_it_shadows_still_runs(tmp_path: Path, root: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    marker = tmp_path / "marker"
    (theirs / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    measured_child(tmp_path / "private", root, "pass", python_path=str(theirs))
    assert marker.read_text() == "ran"


def test_project_code_loaded_before_the_hook_is_named(tmp_path: Path, root: Path) -> None:
    # ROOT first on the path, and a sitecustomize there: it would run before the gate's.
    records = tmp_path / "private" / "measured"
    record(records, {"pid": 1, "prefixes": [], "loaded_before": ["helper"]})
    measurement = Measurement(tmp_path / "hook", records)
    with pytest.raises(InfraFailure, match="the measurement started late: helper was loaded"):
        read_measured(measurement, root)


def test_no_record_at_all_means_the_measurement_did_not_start(tmp_path: Path, root: Path) -> None:
    (tmp_path / "measured").mkdir()
    with pytest.raises(InfraFailure, match="the measurement did not start"):
        read_measured(Measurement(tmp_path / "hook", tmp_path / "measured"), root)


def test_a_malformed_record_is_not_evidence(tmp_path: Path, root: Path) -> None:
    records = tmp_path / "measured"
    records.mkdir()
    (records / "1.jsonl").write_text('{"pid": 1}\n{"path": "x"}\n')
    with pytest.raises(InfraFailure, match="malformed"):
        read_measured(Measurement(tmp_path / "hook", records), root)


def test_imported_wins_and_the_interpreters_own_files_are_left_out(
    tmp_path: Path, root: Path
) -> None:
    records = tmp_path / "measured"
    inside = str(root.resolve() / ".venv")
    holding = str(root.resolve().parent)  # an environment that holds ROOT hides nothing
    record(
        records,
        {"pid": 1, "prefixes": [inside, holding], "loaded_before": []},
        {"how": "read", "path": "helper.py"},
        {"how": "read", "path": ".venv/lib/site.py"},
        {"how": "read", "path": ".git/HEAD"},
        {"how": "read", "path": "pkg/__pycache__/m.cpython-311.pyc"},
    )
    record(
        records,
        {"pid": 2, "prefixes": [], "loaded_before": []},
        {"how": "imported", "path": "helper.py"},
    )
    measured = read_measured(Measurement(tmp_path / "hook", records), root)
    assert measured == {"helper.py": "imported"}


# A fast path held to its reference: see helpers.fast_path_examples.
@given(
    path=st.lists(
        st.sampled_from([".git", "__pycache__", "", ".", "..", "a", ".gitx", "x.git", "/"]),
        max_size=6,
    ).map("/".join)
    | st.text()
)
@settings(max_examples=fast_path_examples())
def test_what_is_left_out_is_what_pathlibs_parts_say(path: str) -> None:
    """A recorded path is left out for a folder of git's or bytecode's wherever PurePosixPath's
    parts would name one: the record is the run's to write, so its text may be any."""
    from pathlib import PurePosixPath

    from three_ledger.run.measurement import _LEFT_OUT_FOLDERS, _left_out

    by_parts = bool(_LEFT_OUT_FOLDERS & set(PurePosixPath(path).parts))
    assert _left_out(path, "/top", ()) == by_parts


# A fast path held to its reference: see helpers.fast_path_examples.
@given(name=st.text(min_size=1), how=st.sampled_from(["imported", "read"]))
@settings(max_examples=fast_path_examples())
def test_a_record_line_is_the_text_json_dumps_makes(name: str, how: str) -> None:
    from three_ledger.plugin import measure

    read, write = os.pipe()
    try:
        measure._Recorder(("/root",), write).note(f"/root/{name}", how)
        os.close(write)
        with os.fdopen(read, "rb") as lines:
            written = lines.read().decode()
    finally:
        for descriptor in (read, write):
            with contextlib.suppress(OSError):
                os.close(descriptor)
    # Recorded normalised, relative to ROOT (`a/../b` is `b`), or not at all once outside it.
    full = os.path.normpath(f"/root/{name}")
    inside = full.startswith("/root/")
    assert written == (json.dumps({"how": how, "path": full[6:]}) + "\n" if inside else "")


def test_a_short_write_is_finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write(2) cut short (a signal, a full disk that frees up) is carried on from where it
    stopped: a cut line would be no record of its file."""
    from three_ledger.plugin import measure

    real = os.write
    calls: list[int] = []

    def short(descriptor: int, data: bytes) -> int:
        calls.append(len(data))
        return real(descriptor, bytes(data[:3]))

    descriptor = os.open(tmp_path / "record", os.O_WRONLY | os.O_CREAT)
    try:
        with monkeypatch.context() as patched:
            patched.setattr(os, "write", short)
            measure._write(descriptor, b'{"how": "read"}\n')
    finally:
        os.close(descriptor)
    assert (tmp_path / "record").read_bytes() == b'{"how": "read"}\n'
    assert len(calls) == 6


def test_the_header_is_the_text_json_dumps_makes(tmp_path: Path, root: Path) -> None:
    """The header is made by hand, without `json`: the text `json.dumps` makes of it."""
    measurement = measured_child(tmp_path / "private", root, "import helper\n")
    [path] = measurement.records.glob("*.jsonl")
    header = path.read_text().splitlines()[0]
    assert header == json.dumps(json.loads(header))
    assert set(json.loads(header)) == {"pid", "python", "prefixes", "loaded_before"}


def test_a_measured_python_imports_nothing_the_hook_does_not_need(
    tmp_path: Path, root: Path
) -> None:
    """Every Python process of the run imports the hook before its first line: a subprocess
    that a test starts pays for what it imports. Not `json`, `re`, `enum` or `typing`, nor
    `importlib.util` with `contextlib`, `functools` and `collections` under it."""
    code = (
        "import sys\n"
        "heavy = {'json', 're', 'enum', 'typing', 'importlib.util', 'contextlib', 'functools',\n"
        "         'collections'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
        "assert '_json' in sys.modules\n"
    )
    measurement = measured_child(tmp_path / "private", root, code)
    assert read_measured(measurement, root) == {}
