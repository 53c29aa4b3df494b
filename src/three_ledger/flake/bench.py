"""Where `flake-evidence` reruns: a scratch copy of ROOT, each run in a fresh process inside
the sandbox of `properties`, with the same staged plugin, tripwire and network ban.

Before the first run the copy's pinned fixtures and oracle files are hashed; after each run
they are hashed again, and whatever a run changed, added or removed is recorded and put back
from a pristine copy, so that every run starts from the bytes `properties` scored.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from three_ledger.digest import live_digest
from three_ledger.errors import InfraFailure
from three_ledger.frozen import frozen
from three_ledger.plugin.wire import ROOT_ENV, RUN_IDS_ENV
from three_ledger.results import TestResult
from three_ledger.run import tripwire
from three_ledger.run.child import Child, exit_meaning, read_plugin_results, run_child
from three_ledger.run.observation import ScoredRun, confine_run
from three_ledger.run.preflight import Preflight
from three_ledger.run.sandbox import Probe
from three_ledger.run.staging import stage_plugin
from three_ledger.vet import scratch
from three_ledger.vocabulary import Enforcement


@frozen
class Rerun:
    """One rerun: each result by node id, or why the run broke as a whole; and the inputs
    it changed in the copy (already restored)."""

    results: dict[str, TestResult]
    broken: str | None
    changed: tuple[str, ...]


@frozen
class Setting:
    """What every rerun shares."""

    checked: Preflight
    enforcement: Enforcement
    probe: Probe
    command: Sequence[str]
    keep_env: tuple[str, ...]
    log_path: Path


class Bench:
    def __init__(self, setting: Setting, private: Path) -> None:
        self.setting = setting
        self.private = private
        self.tree = private / "tree"
        self.pristine = private / "pristine"
        self.plugin = stage_plugin(private)
        self.runs = 0
        self.inputs: dict[str, str] = {}
        # The sandbox's layers as the last rerun had them.
        self.layers: dict[str, str] = {}
        self._log: BinaryIO | None = None
        # Where the command's output goes besides the log: nowhere (the report is the output).
        self._quiet: BinaryIO | None = None

    @classmethod
    @contextlib.contextmanager
    def opened(cls, setting: Setting, root: Path, private: Path) -> Iterator[Bench]:
        """Copy ROOT, check the copy is the scored tree, and keep the run log open."""
        checked = setting.checked
        scratch.copy_tree(root, private / "tree")
        copied = live_digest(private / "tree", checked.fixture_pin).digest
        if copied != checked.digest:
            raise InfraFailure(
                f"the scratch copy of {root} has digest {copied}, not {checked.digest}: "
                "the tree changed while it was copied"
            )
        bench = cls(setting, private)
        bench.inputs = bench.hashed_inputs()
        for path in bench.inputs:
            target = bench.pristine / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(bench.tree / path, target)
        setting.log_path.parent.mkdir(parents=True, exist_ok=True)
        with setting.log_path.open("wb") as log, open(os.devnull, "wb") as quiet:
            bench._log, bench._quiet = log, quiet
            yield bench

    def input_roots(self) -> list[str]:
        """The folders and files whose bytes judge a run: the pin's folders, oracle_paths."""
        checked = self.setting.checked
        return [*checked.fixture_pin.fixtures_dirs, *checked.properties_pin.oracle_paths]

    def hashed_inputs(self) -> dict[str, str]:
        """sha256 of every file under the input roots of the copy, by relative path."""
        hashes: dict[str, str] = {}
        for entry in self.input_roots():
            start = self.tree / entry
            if start.is_file():
                hashes[entry] = _sha256(start)
                continue
            for folder, folders, files in os.walk(start):
                folders[:] = [name for name in folders if name not in scratch.SKIPPED_FOLDERS]
                for name in files:
                    path = Path(folder) / name
                    if not path.is_symlink():
                        hashes[path.relative_to(self.tree).as_posix()] = _sha256(path)
        return hashes

    def restore(self) -> tuple[str, ...]:
        """The inputs a run changed, added or removed, each put back as it was."""
        now = self.hashed_inputs()
        changed = sorted(
            path for path in {*now, *self.inputs} if now.get(path) != self.inputs.get(path)
        )
        for path in changed:
            target = self.tree / path
            if path in self.inputs:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(self.pristine / path, target)
            else:
                target.unlink()
        return tuple(changed)

    def rerun(self, ids: Sequence[str], label: str) -> Rerun:
        """Run exactly IDS, in order, once, in a fresh process."""
        self.runs += 1
        written = self.private / f"run-{self.runs}"
        written.mkdir()
        ids_path = written / "ids.json"
        ids_path.write_text(json.dumps(list(ids)), encoding="utf-8")
        results_path = written / "results.jsonl"
        record = tripwire.record_path(written)
        run_log = self.private / "run.log"
        setting = self.setting
        run = ScoredRun(setting.command, self.tree, 1800.0, run_log, shard_ids=ids_path)
        confinement = confine_run(run, setting.checked, setting.probe, self.private, [written])
        child = Child(
            command=setting.command,
            root=self.tree,
            fixture_pin=setting.checked.fixture_pin,
            enforcement=setting.enforcement,
            timeout_s=run.timeout_s,
            log_path=run_log,
            plugin=self.plugin,
            results_path=results_path,
            plugins=setting.checked.properties_pin.plugins,
            extra_env={
                **tripwire.environment(record, setting.checked.properties_pin.product_paths),
                RUN_IDS_ENV: str(ids_path),
                ROOT_ENV: str(self.tree.resolve()),
            },
            console=self._quiet,
            keep_env=setting.keep_env,
            confinement=confinement,
            caches=written / "caches",
        )
        ran = run_child(child)
        self._keep_log(label, run_log)
        failure = ran.failure()
        if failure is not None and ran.interrupted_by is not None:
            raise InfraFailure(f"{failure}; no flake evidence ledger written")
        broken = failure
        results: dict[str, TestResult] = {}
        if broken is None and ran.exit_code not in (0, 1):
            assert ran.exit_code is not None
            broken = exit_meaning(ran.exit_code, setting.enforcement, confinement)
        if broken is None:
            try:
                recorded = read_plugin_results(results_path, setting.log_path)
                own, _ = tripwire.checked_and_removed(recorded, tripwire.read_record(record))
                results = {result.id: result for result in own}
            except InfraFailure as not_evidence:
                broken = not_evidence.message
        changed = self.restore()
        self.layers = dict(confinement.layers)
        shutil.rmtree(written, ignore_errors=True)
        return Rerun(results, broken, changed)

    def _keep_log(self, label: str, run_log: Path) -> None:
        assert self._log is not None  # opened
        self._log.write(f"=== flake-evidence run {self.runs}: {label} ===\n".encode())
        with contextlib.suppress(FileNotFoundError), run_log.open("rb") as stream:
            shutil.copyfileobj(stream, self._log)
        self._log.write(b"\n")
        self._log.flush()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
