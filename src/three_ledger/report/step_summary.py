"""The Markdown report of a decision, for `merge --summary-md`, `gate` and GitHub's step summary.

Read at a glance: the posture, row and reason come first, then what to do next, then one
row per property. Tables stay narrow (at most four columns, digests cut to 12 hex digits,
long ids given break points), so nothing scrolls sideways at 1,000 px; the full digests
sit in a `<details>` block. Every id, path and reason is escaped: they come from the change
under review.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import field

from three_ledger.flake.report import OWNERS_HEADING
from three_ledger.frozen import frozen
from three_ledger.ledgers import FixtureLedger, PropertyLedger, encode
from three_ledger.merge_table import Evidence, FlakePinView, Reading, Verdict
from three_ledger.other_ledgers import (
    CandidateEvidence,
    DualPinLedger,
    FlakeEvidenceLedger,
    FlakeLedger,
)
from three_ledger.report.findings import tests_counted
from three_ledger.report.junit_verdict import NOT_EVIDENCE
from three_ledger.vocabulary import Posture, Status, VetVerdict

SHORT_HEX = 12
# Every character that can start inline Markdown on GitHub: code, emphasis, strikethrough,
# links, images, raw HTML, entities, table cells, @mentions, #references, :emoji:, $math$.
_MARKUP = re.compile(r"([\\`*_~\[\]!<>&|@#:$])")
# `www.` starts a link of its own in GitHub's Markdown.
_WWW = re.compile(r"(?i)\b(www)\.")
# After these a long id or path may wrap (a `<wbr>` is an invisible break point).
_BREAK_AFTER = re.compile(r"(\\[_:]|[./,;=-])")
# GitHub's sanitizer may drop `<wbr>`. So that a table cell can still wrap then, no run of
# characters without a space is longer than this: a longer one gets zero-width spaces
# (U+200B, which the sanitizer keeps), as few as fit, at the first kind of place it has:
# between path parts and before `::` and `[` (how node ids are built); then after dots,
# underscores, dashes and the like; then every LONGEST_RUN characters.
LONGEST_RUN = 40
ZERO_WIDTH_SPACE = "\u200b"
_RUN = re.compile(r"[^\s\u200b]+")
_WRAP_AT = (re.compile(r"(?<=/)|(?=::)|(?=\[)"), re.compile(r"(?<=[._,;=:-])"))
# A heading keeps the reason short; the whole reason follows when it was cut.
HEADING_REASON_CHARS = 160
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_HEX_DIGEST = re.compile(r"\b[0-9a-f]{64}\b")
MAX_PROBLEMS = 20
# Failing tests shown per property before "and N more".
FIRST_TESTS = 3

_POSTURE_MARK = {Posture.REJECT: "❌", Posture.HUMAN_REVIEW: "🟡", Posture.REVIEW: "🔎"}
NOT_EVIDENCE_MARK = "🚫"
STATUS_MARK = {
    Status.PASS: "✅",
    Status.FAIL: "❌",
    Status.ERROR: "💥",
    Status.SKIP: "⚠️",
    Status.MISSING: "❓",
}

# What to do next, for each row of the merge table (0: gate decided before the table).
NEXT_STEP = {
    1: "Restore the fixture files to the pinned bytes, or change the fixture pin (and its "
    "reviewed digest) in a change of its own. `three-ledger explain` names the files that moved.",
    2: "Re-run the gate: the property ledger is missing or was scored on other fixture bytes. "
    "The properties step's log says why.",
    3: "Report a writer bug: two ledgers carry one `recorded_at`. Re-run the gate.",
    4: "Take the pin edit out of this change and propose it in a change of its own, for the "
    "pin owners to review.",
    5: "Review the oracle edit in a change of its own; then re-run this change against it.",
    6: "File the fixture drift: the pins disagree on the properties listed below. Find which "
    "fixture bytes the code mishandles; a disagreement is never a flake.",
    7: "Fix the code so that every property below holds. A failing property is never a flake.",
    8: "A person reads the diff. One fixture pin is weaker evidence: a second pin lets the "
    "gate answer `review`.",
    9: "A person reads the diff. Flake notes, if any, are listed below: a flake note is not a "
    "pass.",
}
NEXT_STEP_UNUSABLE = (
    "Fix the gate's configuration (the reason above names what is missing); "
    "`three-ledger check-pins` checks the pins folder."
)
NEXT_STEP_PIN_CHANGE = (
    "The pin owners (CODEOWNERS on the pins folder) review this pin change. Merge it on its "
    "own; changes that rely on it are scored once it has landed."
)
NEXT_STEP_PIN_CHANGE_UNVETTED = (
    "The pin owners (CODEOWNERS on the pins folder) review this pin change, knowing vet did "
    "not pass on it (the reason says why). Where its properties do not hold on this tree (new "
    "golden files before the fix that produces them), merged alone it makes every later change "
    "a reject at row 7: land the change that makes them hold right after it, scored against it."
)
NEXT_STEP_TEST_CHANGE = (
    "The test owners (CODEOWNERS on the tests, conftests and pytest's settings) review this "
    "test change. Merge it on its own; product changes are scored against it once it has landed."
)
NEXT_STEP_PIN_REFUSED = "Fix the pins until `three-ledger check-pins` passes."


@frozen
class StepRow:
    """One gate step as the summary shows it."""

    name: str
    exit_text: str
    ledger: str
    ok: bool


@frozen
class VetRow:
    """What `vet` found for one property on one fixture pin (gate vets pins that changed)."""

    pin_id: str
    property_id: str
    verdict: VetVerdict
    # Counted as a gate: some mutant of its own fixtures made it fail.
    gate: bool
    finding: str


@frozen
class FlakeEvidenceNote:
    """What `gate --flake-evidence` found (its ledger), or why it found nothing."""

    ledger: FlakeEvidenceLedger | None
    # Why there is no ledger: no candidates, or flake-evidence's own failure.
    note: str


@frozen
class SummaryInput:
    verdict: Verdict
    # None when gate decided before the merge table (row 0).
    evidence: Evidence | None
    title: str = "three-ledger"
    # What decided, in a few words, for the headline when the reason would bury it (a moved
    # fixture by its path); "" to head with the reason itself.
    cause: str = ""
    claims: Mapping[str, str] = field(default_factory=dict)
    failing_tests: Mapping[str, Sequence[str]] = field(default_factory=dict)
    flake_owners: Mapping[str, str] = field(default_factory=dict)
    steps: Sequence[StepRow] = ()
    # Property ids to list as missing when no property ledger could be read.
    pinned_ids: Sequence[str] = ()
    pin_change: Sequence[str] | None = None
    # A change to tests alone, sent to their owners unscored: each path with what it is.
    test_change: Sequence[str] | None = None
    # What the steps refused for, one line each (check-pins lists every problem).
    problems: Sequence[str] = ()
    vet: Sequence[VetRow] = ()
    # None: flake-evidence was not asked for.
    flake_evidence: FlakeEvidenceNote | None = None


def flake_owners(view: FlakePinView | None) -> dict[str, str]:
    """The owner of each flake pin entry that names one, for the flake notes table."""
    if view is None or view.pin is None:
        return {}
    return {entry.test_id: entry.owner for entry in view.pin.flakes if entry.owner}


def text(value: str) -> str:
    """VALUE as literal Markdown text inside a line: every character that starts markup escaped,
    and long runs made wrappable."""
    one_line = wrappable(" ".join(_CONTROL.sub(" ", value).split()))
    return _WWW.sub(r"\1\\.", _MARKUP.sub(r"\\\1", one_line))


def wrappable(value: str) -> str:
    """VALUE with zero-width spaces in every run longer than LONGEST_RUN (see `_WRAP_AT`)."""
    return _RUN.sub(lambda run: ZERO_WIDTH_SPACE.join(_segments(run.group(0), 0)), value)


def _segments(run: str, level: int) -> list[str]:
    """RUN cut into pieces of at most LONGEST_RUN characters, at places of LEVEL or deeper."""
    if len(run) <= LONGEST_RUN:
        return [run]
    if level == len(_WRAP_AT):
        return [run[start : start + LONGEST_RUN] for start in range(0, len(run), LONGEST_RUN)]
    segments: list[str] = []
    for piece in _WRAP_AT[level].split(run):
        for segment in _segments(piece, level + 1):
            if segments and len(segments[-1]) + len(segment) <= LONGEST_RUN:
                segments[-1] += segment
            elif segment:
                segments.append(segment)
    return segments


def breakable(value: str) -> str:
    """Escaped VALUE with invisible break points after dots, slashes, underscores, dashes."""
    return _BREAK_AFTER.sub(r"\1<wbr>", text(value))


def code(value: str) -> str:
    return f"<code>{breakable(value)}</code>"


def short(digest: str) -> str:
    return digest[:SHORT_HEX]


def shorten_digests(value: str) -> str:
    return _HEX_DIGEST.sub(lambda match: short(match.group(0)) + "…", value)


def render(summary: SummaryInput) -> str:
    verdict = summary.verdict
    mark = _POSTURE_MARK[verdict.posture]
    reason = shorten_digests(verdict.reason)
    said = shorten_digests(summary.cause) or reason
    cut = said if len(said) <= HEADING_REASON_CHARS else said[:HEADING_REASON_CHARS] + "…"
    blocks = [
        (
            f"### {mark} {text(summary.title)}: {verdict.posture.value} (row {verdict.row}): "
            f"{text(cut)}"
        ),
        f"**Reason:** {text(reason)}" if cut != reason else "",
        f"**What to do next:** {_next_step(summary)}",
        *_test_change(summary),
        *_pin_change(summary),
        *_problems(summary),
        *_sandbox(summary),
        *_vet(summary),
        *_properties(summary),
        *_unpinned_failures(summary),
        *_flakes(summary),
        *_flake_evidence(summary),
        *_steps(summary),
        *_ledgers(summary),
        *_digests(summary),
    ]
    return "\n\n".join(block for block in blocks if block) + "\n"


def _next_step(summary: SummaryInput) -> str:
    verdict = summary.verdict
    if verdict.row in NEXT_STEP:
        return NEXT_STEP[verdict.row]
    if summary.test_change is not None and verdict.posture is not Posture.REJECT:
        return NEXT_STEP_TEST_CHANGE
    if summary.pin_change is not None:
        if verdict.posture is Posture.REJECT:
            return NEXT_STEP_PIN_REFUSED
        return NEXT_STEP_PIN_CHANGE_UNVETTED if _vet_failed(summary) else NEXT_STEP_PIN_CHANGE
    return NEXT_STEP_UNUSABLE


def _vet_failed(summary: SummaryInput) -> bool:
    """Whether a vet of the gate's ran and did not pass (a skipped one did not run)."""
    return any(
        step.name.startswith("vet") and step.exit_text != "-" and not step.ok
        for step in summary.steps
    )


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _pin_change(summary: SummaryInput) -> list[str]:
    if summary.pin_change is None:
        return []
    items = "\n".join(f"- {code(path)}" for path in summary.pin_change)
    return ["**Pins changed** (not scored: pins move in reviewed changes of their own):", items]


def _test_change(summary: SummaryInput) -> list[str]:
    if summary.test_change is None:
        return []
    items = "\n".join(f"- {text(line)}" for line in summary.test_change)
    return ["**Tests changed** (not scored: what judges the change is what changed):", items]


def _problems(summary: SummaryInput) -> list[str]:
    if not summary.problems:
        return []
    shown = summary.problems[:MAX_PROBLEMS]
    items = "\n".join(f"- {text(problem)}" for problem in shown)
    more = len(summary.problems) - len(shown)
    if more > 0:
        items += f"\n- and {more} more (see the step logs)"
    return ["**Problems found:**", items]


def _sandbox(summary: SummaryInput) -> list[str]:
    """A warning for each layer of the test child's sandbox that did not hold."""
    prop = _property_ledger(summary)
    missing = prop.sandbox.missing() if prop is not None else {}
    if not missing:
        return []
    items = "\n".join(f"- {code(name)}: {text(state)}" for name, state in missing.items())
    heading = (
        f"**⚠️ Sandbox:** the test run went without {len(missing)} of its layers "
        "(docs/ci.md says what turns each on):"
    )
    return [heading, items]


def _vet(summary: SummaryInput) -> list[str]:
    if not summary.vet:
        return []
    rows = [
        [
            "✅" if row.gate else "❌",
            code(row.property_id),
            f"{text(row.verdict)} on {code(row.pin_id)}",
            text(row.finding),
        ]
        for row in summary.vet
    ]
    heading = "**vet** (can each property fail on the changed pins' fixtures?)"
    return [heading, _table(["", "Property", "Verdict", "Finding"], rows)]


def _property_ledger(summary: SummaryInput) -> PropertyLedger | None:
    return summary.evidence.prop.record if summary.evidence is not None else None


def _properties(summary: SummaryInput) -> list[str]:
    prop = _property_ledger(summary)
    statuses = dict(prop.status_by_id) if prop is not None else {}
    ids = list(statuses) or list(summary.pinned_ids)
    if not ids:
        return []
    # Not passing first, in the ledger's order; then the passes.
    ordered = sorted(ids, key=lambda prop_id: statuses.get(prop_id) == Status.PASS)
    rows = [
        _property_row(summary, prop_id, statuses.get(prop_id, Status.MISSING))
        for prop_id in ordered
    ]
    heading = "**Properties**" if prop is not None else "**Properties** (no property ledger)"
    if prop is not None and prop.oracle_moved:
        heading = f"**Properties** ({NOT_EVIDENCE}: what judged the change is what changed)"
    return [heading, _table(["", "Property", "Status", "Claim and failing tests"], rows)]


def _failing_tests(summary: SummaryInput, prop_id: str) -> list[str]:
    """The tests behind a miss, each with how it ended: as given, else from the ledger."""
    if prop_id in summary.failing_tests:
        return [code(test_id) for test_id in summary.failing_tests[prop_id]]
    prop = _property_ledger(summary)
    tests = prop.failing_tests.get(prop_id, ()) if prop is not None else ()
    return [f"{code(test.id)} ({text(_how(test.outcome, test.reason))})" for test in tests]


def _how(outcome: str, reason: str | None) -> str:
    return f"{outcome}: {reason}" if reason else outcome


def _unpinned_failures(summary: SummaryInput) -> list[str]:
    prop = _property_ledger(summary)
    if prop is None or not prop.unpinned_failures.count:
        return []
    unpinned = prop.unpinned_failures
    items = "\n".join(f"- {code(test_id)}" for test_id in unpinned.first_ids[:MAX_PROBLEMS])
    more = unpinned.count - min(len(unpinned.first_ids), MAX_PROBLEMS)
    if more > 0:
        items += f"\n- and {more} more"
    heading = (
        f"**Unpinned failures** ({unpinned.count} outside every property: they do not change "
        "the posture; pin a property or a flake entry for them)"
    )
    return [heading, items]


def _property_row(summary: SummaryInput, prop_id: str, status: Status) -> list[str]:
    shown = f"**{status}**" if status != Status.PASS else status
    prop = _property_ledger(summary)
    mark = STATUS_MARK[status]
    if prop is not None and prop.oracle_moved:
        # Never a green mark for a run whose oracles moved: its statuses are not evidence.
        mark, shown = NOT_EVIDENCE_MARK, f"{NOT_EVIDENCE} (recorded {status})"
    counted = tests_counted(prop, prop_id) if prop is not None else ""
    if counted:
        shown = f"{shown}, {counted}"
    lines = [text(summary.claims.get(prop_id, ""))]
    reason = prop.missing_reasons.get(prop_id) if prop is not None else None
    if reason:
        lines.append(f"missing: {text(shorten_digests(reason))}")
    tests = _failing_tests(summary, prop_id)
    if tests:
        first = tests[:FIRST_TESTS]
        given = summary.failing_tests.get(prop_id)
        total = len(given) if given is not None else prop.failing_count(prop_id) if prop else 0
        more = f" and {total - len(first)} more" if total > len(first) else ""
        lines.append(f"failing: {', '.join(first)}{more}")
    return [mark, code(prop_id), shown, "<br>".join(line for line in lines if line)]


def _flakes(summary: SummaryInput) -> list[str]:
    evidence = summary.evidence
    notes = [r.record for r in evidence.flakes if r.record is not None] if evidence else []
    if not notes:
        return []
    rows = [
        [
            code(note.test_id),
            text(note.observed),
            text(summary.flake_owners.get(note.test_id, "")),
            text(note.review_by),
        ]
        for note in notes
    ]
    heading = "**Flake notes** (a flake note is not a pass)"
    return [heading, _table(["Test", "Observed", "Owner", "Review by"], rows)]


def _flake_evidence(summary: SummaryInput) -> list[str]:
    """Each candidate's verdict and intervals, the proposals to paste, and apart from them the
    evidence on a property's tests: none of it changes the posture."""
    found = summary.flake_evidence
    if found is None:
        return []
    heading = (
        "**Flake evidence** (reruns in the sandbox; evidence for people: only a flake note it "
        "contradicts moves the posture)"
    )
    ledger = found.ledger
    if ledger is None:
        return [heading, text(found.note)]
    seconds = ledger.duration_ms / 1000
    said = (
        f"{len(ledger.candidates)} candidate(s), {ledger.runs} reruns in {seconds:.1f} s "
        f"(budget {ledger.budget_s} s); intervals at {ledger.confidence}"
    )
    ours = [c for c in ledger.candidates if not c.property_ids]
    theirs = [c for c in ledger.candidates if c.property_ids]
    blocks = [heading, text(said)]
    if ours:
        blocks.append(_table(["Test", "Verdict", "Reruns"], [_candidate_row(c) for c in ours]))
    proposals = [c.proposal for c in ours if c.proposal is not None]
    if proposals:
        pasted = "\n".join(json.dumps(encode(p)) for p in proposals)
        said = (
            "Proposed flake pin entries, for a person to paste into the flake pin (fill in every "
            "FILL-IN and add an owner: the schema refuses FILL-IN):"
        )
        blocks += [said, _fenced(pasted)]
    if theirs:
        rows = [_candidate_row(c) for c in theirs]
        blocks += [f"**{text(OWNERS_HEADING)}**", _table(["Test", "Verdict", "Reruns"], rows)]
    return blocks


def _candidate_row(candidate: CandidateEvidence) -> list[str]:
    verdict = [f"**{text(candidate.verdict)}**"]
    if candidate.property_ids:
        verdict.append(f"answers for {', '.join(code(p) for p in candidate.property_ids)}")
    if candidate.polluter is not None:
        verdict.append(f"likely polluter: {code(candidate.polluter)}")
    if candidate.inputs_changed:
        changed = ", ".join(code(path) for path in candidate.inputs_changed)
        verdict.append(f"changed its own inputs (restored in the copy): {changed}")
    reruns = [
        f"{text(mode)}: {text(tally.bound or 'no run reached it')}"
        + (f", {tally.broken} broke as a whole" if tally.broken else "")
        for mode, tally in candidate.modes.items()
    ]
    if candidate.unfinished is not None:
        reruns.append(f"unfinished: {text(candidate.unfinished)}")
    return [code(candidate.id), "<br>".join(verdict), "<br>".join(reruns)]


def _fenced(content: str) -> str:
    """CONTENT as a code block whose fence no run of backticks inside it can close."""
    longest = max((len(run) for run in re.findall("`+", content)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}json\n{content}\n{fence}"


def _steps(summary: SummaryInput) -> list[str]:
    if not summary.steps:
        return []
    rows = [
        [
            ("✅ " if step.ok else "❌ ") + breakable(step.name),
            text(step.exit_text),
            code(step.ledger) if step.ledger else "—",
        ]
        for step in summary.steps
    ]
    return ["**Steps**", _table(["Step", "Exit", "Ledger"], rows)]


@frozen
class _LedgerLine:
    kind: str
    path: str
    state: str
    digests: tuple[tuple[str, str], ...] = ()


def _ledger_lines(evidence: Evidence) -> list[_LedgerLine]:
    lines = [_fixture_line(evidence.fixture), _property_line(evidence.prop)]
    if evidence.dual_pin is not None:
        lines.append(_dual_line(evidence.dual_pin))
    lines += [_flake_line(reading) for reading in evidence.flakes]
    return lines


def _fixture_line(reading: Reading[FixtureLedger]) -> _LedgerLine:
    fixture = reading.record
    if fixture is None:
        return _LedgerLine(
            "fixture", str(reading.path), f"unusable: {reading.problem or 'not read'}"
        )
    state = f"digest {short(fixture.digest)} (pin {fixture.pin_id})"
    return _LedgerLine(
        "fixture", str(reading.path), state, ((f"fixture {fixture.pin_id}", fixture.digest),)
    )


def _property_line(reading: Reading[PropertyLedger]) -> _LedgerLine:
    prop = reading.record
    if prop is None:
        return _LedgerLine(
            "property", str(reading.path), f"unusable: {reading.problem or 'not read'}"
        )
    failing = len(prop.failing_ids())
    passing = len(prop.status_by_id) - failing
    state = f"scored on {short(prop.fixture_digest)}: {passing} pass, {failing} not pass"
    if prop.oracle_moved:
        state += f"; oracles moved: {', '.join(prop.oracle_changes)}"
    return _LedgerLine("property", str(reading.path), state)


def _dual_line(reading: Reading[DualPinLedger]) -> _LedgerLine:
    dual = reading.record
    if dual is None:
        return _LedgerLine(
            "dual-pin", str(reading.path), f"unusable: {reading.problem or 'not read'}"
        )
    if not dual.run:
        return _LedgerLine("dual-pin", str(reading.path), "not run (one pin)")
    split = ", ".join(
        f"{key}: {d.left} vs {d.right}" for key, d in sorted(dual.differences.items())
    )
    state = f"drift: {split}" if dual.drift else f"{dual.left_pin_id} and {dual.right_pin_id} agree"
    digests = (
        (f"dual-pin left {dual.left_pin_id}", dual.left_digest),
        (f"dual-pin right {dual.right_pin_id}", dual.right_digest),
    )
    return _LedgerLine("dual-pin", str(reading.path), state, digests)


def _flake_line(reading: Reading[FlakeLedger]) -> _LedgerLine:
    flake = reading.record
    if flake is None:
        return _LedgerLine("flake", str(reading.path), f"unusable: {reading.problem or 'not read'}")
    state = f"{flake.test_id}: {flake.observed} on {short(flake.fixture_digest)}"
    return _LedgerLine("flake", str(reading.path), state)


def _ledgers(summary: SummaryInput) -> list[str]:
    if summary.evidence is None:
        return []
    rows = [
        [text(line.kind), code(line.path), text(shorten_digests(line.state))]
        for line in _ledger_lines(summary.evidence)
    ]
    return ["**Ledgers**", _table(["Ledger", "File", "State"], rows)]


def _digests(summary: SummaryInput) -> list[str]:
    if summary.evidence is None:
        return []
    pairs = [pair for line in _ledger_lines(summary.evidence) for pair in line.digests]
    if not pairs:
        return []
    items = "\n".join(f"- {text(label)}: `{digest}`" for label, digest in pairs)
    return [f"<details><summary>Full digests</summary>\n\n{items}\n\n</details>"]
