"""JUnit XML reports: safe parsing, stable ids, and hook testcases counted against their tests.

SPEC section 6 gives the id rule (`file::name`, else `classname::name`; `classname.name`
matches too). `docs/runners.md` shows what each supported reporter writes and how the
rules below read it.
"""

from __future__ import annotations

import os
import re
import stat
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from three_ledger.errors import InfraFailure
from three_ledger.frozen import frozen
from three_ledger.results import TestResult, merge_worst, normalised
from three_ledger.vocabulary import Outcome, worst

# JUnit files larger than this are refused unread: no honest test run needs more.
MAX_JUNIT_BYTES = 64 * 1024 * 1024

# What an empty testcase name is scored as: `<unnamed 1>`, `<unnamed 2>`, ... per owner.
UNNAMED = "<unnamed {}>"

# mocha names a failing hook `"after each" hook for "TITLE"`, `"before all" hook: NAME for
# "TITLE"` or `"after all" hook in "SUITE"`; mocha-junit-reporter puts the suite path before it.
_MOCHA_HOOK = re.compile(
    r'"(?:before|after) (?P<scope>each|all)" hook(?:: .*?)? (?P<link>for|in) "(?P<target>.*)"\Z',
    re.DOTALL,
)
# jest-junit's testcase for a failing afterAll/beforeAll that it cannot tie to a test.
_JEST_SUITE_FAILURE = "Test execution failure: could be caused by test hooks"
# vitest joins describe titles with this; a failing describe-level hook is a testcase
# named after the describe.
_VITEST_SEPARATOR = " > "
_COUNTING = frozenset({Outcome.FAIL, Outcome.ERROR})


@frozen
class Case:
    """One testcase element, its attributes normalised; `suite` indexes its <testsuite>."""

    suite: int
    suite_name: str
    classname: str
    name: str
    file: str
    outcome: Outcome
    # Whether its `fail` is an expected failure: each failing child a `pytest.xfail` skip.
    xfail: bool = False

    @property
    def owner(self) -> str:
        return self.file or self.classname


# The elements whose `timestamp` attribute says when the runner ran them.
_STAMPED = frozenset({"testsuites", "testsuite", "testcase"})


@frozen
class Reading:
    """What a report says: merged results, and warnings for the user (unnamed testcases)."""

    results: list[TestResult]
    warnings: list[str]
    # Every `timestamp` attribute, as written, in document order: when the runner says it ran.
    timestamps: tuple[str, ...] = ()


def parse_report(label: str, data: bytes, root: Path | None = None) -> Reading:
    """Read report DATA; LABEL starts every message. An absolute `file` under ROOT is made
    relative to it, so that ids (and the selectors naming them) do not depend on the machine.

    Refused (InfraFailure): a DOCTYPE or ENTITY declaration, malformed XML, a root other than
    testsuites/testsuite, no testcase. Nothing is ever fetched.
    """
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise InfraFailure(f"{label}: DOCTYPE and ENTITY declarations are refused")
    document = _parse_xml(label, data)
    if document.tag not in ("testsuites", "testsuite"):
        raise InfraFailure(
            f"{label}: root element is <{document.tag}>, not testsuites or testsuite"
        )
    cases = list(_cases(document, root))
    if not cases:
        raise InfraFailure(f"{label}: no testcase, so no results could be read")
    _refuse_unwritten_failures(label, document)
    written = len(cases)
    cases.extend(hook_consequences(cases))
    named, warnings = name_unnamed(label, cases)
    results = [case_result(case) for case in named]
    united = merged(results)
    # Of the testcases the runner wrote: a hook's consequences merge with their tests by design.
    if (shared := written - len(merged(results[:written]))) > 0:
        warnings.append(
            f"{label}: {shared} testcase(s) share their id with another and count as one test "
            "each, with the worst outcome (a runner that writes one classname for every "
            "testcase, as node's does, tells tests apart by their titles alone)"
        )
    return Reading(united, warnings, _timestamps(document))


def _timestamps(document: ET.Element) -> tuple[str, ...]:
    stamps = (element.get("timestamp") for element in document.iter() if element.tag in _STAMPED)
    return tuple(stamp for stamp in stamps if stamp)


class _DoctypeFound(Exception):
    """Raised from inside the parser when a DOCTYPE starts."""


class _RefusingTreeBuilder(ET.TreeBuilder):
    # Second line of defence: the byte check above misses a DOCTYPE in UTF-16 or UTF-32.
    def doctype(self, name: str, pubid: str, system: str) -> None:
        raise _DoctypeFound


def _parse_xml(label: str, data: bytes) -> ET.Element:
    # Comments kept: node's tally is written as comments (`_refuse_unwritten_failures`).
    parser = ET.XMLParser(target=_RefusingTreeBuilder(insert_comments=True))
    try:
        parser.feed(data)
        document: ET.Element = parser.close()
    except _DoctypeFound:
        raise InfraFailure(f"{label}: DOCTYPE and ENTITY declarations are refused") from None
    except ET.ParseError as error:
        raise InfraFailure(f"{label}: malformed XML ({error})") from None
    except LookupError as error:  # the XML declaration names an encoding Python does not know
        raise InfraFailure(f"{label}: malformed XML ({error})") from None
    return document


# node's junit reporter ends the report with its tally, one comment a count: `<!-- fail 2 -->`.
_NODE_TALLY = re.compile(r"\s*(tests|suites|pass|fail|cancelled|skipped|todo) (\d+)\s*\Z")
# The failures node counts as cancelled, not failed: a subtest its parent ended, a timeout.
_NODE_CANCELLED = frozenset({"cancelledByParent", "testTimeoutFailure"})


def _refuse_unwritten_failures(label: str, document: ET.Element) -> None:
    """Refuse a report of node's test runner whose own tally counts failures it did not write.

    node writes a test with subtests as a <testsuite> of its subtests, with no outcome of its
    own: when its own body fails after its subtests passed, the report holds no trace of
    that failure. The tally at its end still counts it (`fail`). Each failed test the report
    can account for is a failing testcase, or a <testsuite> that holds one (a test failed
    through its subtest, or a describe, which node writes alike: each counts, so that no
    honest report is refused). A tally that counts more failures than that lost some. The
    tally's `tests` cannot say how many tests have subtests: node writes a describe with no
    test in it (empty, or skipped) as a <testcase>, and counts it as a suite. Reports
    without node's tally are not judged here.
    """
    tally: dict[str, int] = {}
    for child in document:
        # A comment's tag is the factory ET.Comment itself (typeshed types every tag a str).
        tag: object = child.tag
        if tag is ET.Comment and (found := _NODE_TALLY.match(child.text or "")):
            tally[found[1]] = int(found[2])  # the last wins: the tally ends the report
    if not {"tests", "suites", "pass", "fail", "cancelled"} <= tally.keys():
        return
    failed = sum(1 for case in document.iter("testcase") if _failed_for_node(case))
    accounted = failed + _suites_holding_a_failure(document)
    if tally["fail"] > accounted:
        raise InfraFailure(
            f"{label}: node's tally counts {tally['fail']} failed test(s) and the report shows "
            f"at most {accounted}: a test with subtests failed in its own body, which node's "
            "junit reporter does not write (put that test's assertions in a subtest of their "
            "own; docs/runners.md)"
        )


def _suites_holding_a_failure(document: ET.Element) -> int:
    """How many <testsuite> elements hold a failing testcase at any depth: one walk,
    iterative, as `_testcases` (a report may nest deeper than Python's stack)."""
    holding = 0
    # (children left, whether a failing testcase was seen below, whether it is a testsuite)
    stack: list[tuple[Iterator[ET.Element], list[bool], bool]] = [(iter(document), [False], False)]
    while stack:
        children, seen, is_suite = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            if seen[0]:
                holding += is_suite
                if stack:
                    stack[-1][1][0] = True
            continue
        if child.tag == "testcase":
            if any(grand.tag in ("failure", "error") for grand in child):
                seen[0] = True
        else:
            stack.append((iter(child), [False], child.tag == "testsuite"))
    return holding


def _failed_for_node(case: ET.Element) -> bool:
    """Whether node counts testcase CASE in its `fail`: a failure that is no todo's and no
    cancellation."""
    children = list(case)
    if any(child.tag == "skipped" for child in children):
        return False
    return any(
        child.tag in ("failure", "error") and child.get("type") not in _NODE_CANCELLED
        for child in children
    )


def _cases(document: ET.Element, root: Path | None) -> Iterator[Case]:
    """Every testcase in document order, wherever it is, with its innermost <testsuite>."""
    suite_names: dict[int, str] = {}
    for index, suite, element in _testcases(document):
        if index not in suite_names:
            suite_names[index] = normalised(suite.get("name") or "")
        outcomes = [(_child_outcome(child), _is_xfail(child)) for child in element]
        outcome = worst(outcome for outcome, _ in outcomes)
        yield Case(
            suite=index,
            suite_name=suite_names[index],
            classname=normalised(element.get("classname") or ""),
            name=normalised(element.get("name") or ""),
            file=_relative_file(normalised(element.get("file") or ""), root),
            outcome=outcome,
            xfail=outcome is Outcome.FAIL
            and all(xfail for one, xfail in outcomes if one is Outcome.FAIL),
        )


def _testcases(document: ET.Element) -> Iterator[tuple[int, ET.Element, ET.Element]]:
    """(index of the innermost testsuite, that testsuite, testcase), in document order.

    Iterative, not recursive: a report may nest elements deeper than Python's stack.
    """
    suites = 0
    stack: list[tuple[Iterator[ET.Element], int, ET.Element]] = [(iter(document), 0, document)]
    while stack:
        children, index, suite = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            continue
        if child.tag == "testcase":
            yield index, suite, child
        if child.tag == "testsuite":
            suites += 1
            stack.append((iter(child), suites, child))
        else:
            stack.append((iter(child), index, suite))


def _relative_file(file: str, root: Path | None) -> str:
    if root is None or not os.path.isabs(file):
        return file
    for base in dict.fromkeys((os.path.abspath(root), os.path.realpath(root))):
        relative = os.path.relpath(os.path.normpath(file), base)
        if relative != ".." and not relative.startswith("../"):
            return Path(relative).as_posix()
    return file


_CHILD_OUTCOMES = {
    "failure": Outcome.FAIL,
    "error": Outcome.ERROR,
    "skipped": Outcome.SKIP,
    # nextest's retries: a test that failed on any attempt is not a pass.
    "flakyFailure": Outcome.FAIL,
    "rerunFailure": Outcome.FAIL,
    "flakyError": Outcome.ERROR,
    "rerunError": Outcome.ERROR,
}


def _is_xfail(child: ET.Element) -> bool:
    return child.tag == "skipped" and child.get("type") == "pytest.xfail"


def _child_outcome(child: ET.Element) -> Outcome:
    if _is_xfail(child):
        # As in the plugin: an expected failure is still a failure.
        return Outcome.FAIL
    # system-out, properties and other children say nothing about the outcome.
    return _CHILD_OUTCOMES.get(str(child.tag), Outcome.PASS)


# --- ids -----------------------------------------------------------------------------------------


def case_result(case: Case) -> TestResult:
    """The result of CASE: id `owner::name`, aliases `classname.name` and `classname::name`.

    Its groups (what a selector may name to select it along with others) are its file and its
    classname: prefix matching stops there, never at a `::` inside a title.
    """
    test_id = f"{case.owner}::{case.name}" if case.owner else case.name
    aliases = []
    if case.classname:
        aliases.append(f"{case.classname}.{case.name}")
        if case.file:
            aliases.append(f"{case.classname}::{case.name}")
    groups = tuple(dict.fromkeys(owner for owner in (case.file, case.classname) if owner))
    return TestResult(
        test_id, (), case.outcome, aliases=tuple(aliases), groups=groups, xfail=case.xfail
    )


def merged(results: Sequence[TestResult]) -> list[TestResult]:
    """One result per id and aliases, worst outcome first-seen order.

    pytest writes a call failure and a teardown error as two testcases of one test: they
    merge. mocha's xunit gives two tests of one title in one file the same id but not the
    same classname: they stay two results, each selectable by `classname::name`.
    """
    groups: dict[tuple[str, tuple[str, ...]], list[TestResult]] = {}
    for result in results:
        groups.setdefault((result.id, result.aliases), []).append(result)
    return [group[0] if len(group) == 1 else merge_worst(group)[0] for group in groups.values()]


def name_unnamed(label: str, cases: Sequence[Case]) -> tuple[list[Case], list[str]]:
    """Each testcase with an empty name gets `<unnamed N>`, N counting per owner in order."""
    counts: dict[str, int] = {}
    named: list[Case] = []
    warnings: list[str] = []
    for case in cases:
        if case.name.strip():
            named.append(case)
            continue
        counts[case.owner] = counts.get(case.owner, 0) + 1
        renamed = replace(case, name=UNNAMED.format(counts[case.owner]))
        named.append(renamed)
        where = f"of {case.owner!r} " if case.owner else ""
        warnings.append(
            f"{label}: a testcase {where}has no name; it is scored as "
            f"{case_result(renamed).id!r} (give the test a title to select it reliably)"
        )
    return named, warnings


# --- hooks ---------------------------------------------------------------------------------------


@frozen
class _MochaHook:
    title: str  # the hook's own title, as it ends the name or classname
    each: bool  # "before each"/"after each": it ran for one test
    target: str | None  # the title of the test it ran for, when mocha names one


def hook_consequences(cases: Sequence[Case]) -> list[Case]:
    """Copies of the tests each failing hook testcase ran for, carrying the hook's outcome.

    Merged by id with the tests themselves, they make a failing setup or teardown count
    against those tests. Where the report names a test that it does not hold (mocha skips the
    rest of a describe after a failing `beforeEach`), the copy stands for that test. The hook
    testcase itself is kept as a result too. Each testcase is classified once, and only the
    failing hooks look at the others, so a large report costs little more than its parse.
    """
    mocha_hooks = [_mocha_hook(case) for case in cases]
    tests = [
        case
        for case, mocha in zip(cases, mocha_hooks, strict=True)
        if mocha is None and _JEST_SUITE_FAILURE not in case.name
    ]
    failing = [
        (hook, mocha)
        for hook, mocha in zip(cases, mocha_hooks, strict=True)
        if hook.outcome in _COUNTING
    ]
    # Indexes built only when a failing testcase needs them: most reports need neither.
    by_title = _by_title(tests) if any(mocha for _, mocha in failing) else {}
    describes = _vitest_describes(tests) if any(not mocha for _, mocha in failing) else set()
    consequences: list[Case] = []
    for hook, mocha in failing:
        if mocha is not None:
            # A hook that ran for one test can only concern the tests of that title.
            one_test = mocha.each and mocha.target is not None
            pool = by_title.get(mocha.target or "", []) if one_test else tests
            consequences.extend(_mocha_consequences(hook, mocha, pool))
        elif _suite_level(hook, describes):
            governed = (case for case in tests if case is not hook and _governs(hook, case))
            consequences.extend(
                replace(case, outcome=hook.outcome, xfail=False) for case in governed
            )
    return consequences


def _by_title(tests: Sequence[Case]) -> dict[str, list[Case]]:
    """The tests by each of their name and classname (one holds the title in every mocha
    reporter)."""
    titles: dict[str, list[Case]] = {}
    for case in tests:
        for text in dict.fromkeys((case.name, case.classname)):
            titles.setdefault(text, []).append(case)
    return titles


def _vitest_describes(tests: Sequence[Case]) -> set[tuple[int, str, str]]:
    """(suite, classname, describe path) of every describe that holds a test, vitest-style."""
    describes: set[tuple[int, str, str]] = set()
    for case in tests:
        parts = case.name.split(_VITEST_SEPARATOR)
        for depth in range(1, len(parts)):
            describes.add((case.suite, case.classname, _VITEST_SEPARATOR.join(parts[:depth])))
    return describes


def _suite_level(hook: Case, describes: set[tuple[int, str, str]]) -> bool:
    """Whether HOOK is a failure of a whole file, package or describe, not of one test."""
    return (
        _JEST_SUITE_FAILURE in hook.name  # jest-junit: a failing afterAll, describe unknown
        or (hook.classname == "" and hook.name == "TestMain")  # gotestsum: a package's TestMain
        or hook.name == hook.classname == hook.suite_name  # vitest: the file itself failed
        or (hook.suite, hook.classname, hook.name) in describes  # vitest: a describe's hook
    )


def _governs(hook: Case, case: Case) -> bool:
    """Whether the suite-level failure HOOK (see `_suite_level`) covers the test CASE."""
    if case.suite != hook.suite:
        return False
    if _JEST_SUITE_FAILURE in hook.name or hook.name == hook.classname == hook.suite_name:
        return True
    if hook.classname == "" and hook.name == "TestMain":
        return True
    return case.classname == hook.classname and case.name.startswith(hook.name + _VITEST_SEPARATOR)


def _mocha_hook(case: Case) -> _MochaHook | None:
    for text in (case.name, case.classname):
        if '" hook' not in text:  # the regular expression costs more than this test
            continue
        match = _MOCHA_HOOK.search(text)
        if match is not None:
            each = match["scope"] == "each"
            target = match["target"] if match["link"] == "for" else None
            return _MochaHook(match.group(0), each, target)
    return None


def _mocha_consequences(hook: Case, mocha: _MochaHook, tests: Sequence[Case]) -> list[Case]:
    governed = [
        case
        for case in tests
        if (not hook.file or not case.file or case.file == hook.file)
        and _in_scope(hook.name, case.name, mocha)
        and _in_scope(hook.classname, case.classname, mocha)
    ]
    consequences = [replace(case, outcome=hook.outcome, xfail=False) for case in governed]
    if not governed and mocha.target is not None:
        # The test never reached the report: stand in for it, named as the report would.
        consequences.append(
            replace(
                hook,
                name=_as_test(hook.name, mocha.title, mocha.target),
                classname=_as_test(hook.classname, mocha.title, mocha.target),
            )
        )
    return consequences


def _in_scope(hook_text: str, case_text: str, mocha: _MochaHook) -> bool:
    """Whether one attribute of a test is compatible with the same attribute of the hook.

    The attribute that ends with the hook's title holds the suite path before it (empty in
    jenkinsMode and xunit, the describe titles in mocha-junit-reporter's default); the other
    holds the suite path itself (or, in the default, the hook's title again).
    """
    if not hook_text.endswith(mocha.title):
        return (
            hook_text == ""
            or case_text == hook_text
            or case_text.startswith((hook_text + " ", hook_text + "."))
        )
    prefix = hook_text[: -len(mocha.title)]
    if not mocha.each or mocha.target is None:
        return case_text.startswith(prefix)
    if not prefix:
        return case_text == mocha.target
    return case_text.startswith(prefix) and (
        case_text == prefix + mocha.target or case_text.endswith(" " + mocha.target)
    )


def _as_test(text: str, hook_title: str, target: str) -> str:
    return text[: -len(hook_title)] + target if text.endswith(hook_title) else text


def read_junit_report(path: Path, root: Path | None = None) -> Reading:
    """Read a JUnit XML report (SPEC 6): its results merged worst-first per id, and its
    warnings (unnamed testcases, ids shared); see `parse_report`.

    Refused (InfraFailure): a DOCTYPE or ENTITY declaration, more than 64 MiB, malformed XML,
    a root other than testsuites/testsuite, no testcase. Nothing is ever fetched. JUnit cannot
    tell a non-strict xpass from a pass (pytest writes both as a plain testcase).
    """
    label = f"JUnit XML {path}"
    return parse_report(label, _read_bounded(path, label), root)


def _read_bounded(path: Path, label: str) -> bytes:
    try:
        status = path.stat()
        if not stat.S_ISREG(status.st_mode):
            raise InfraFailure(f"{label}: not a regular file")
        if status.st_size > MAX_JUNIT_BYTES:
            raise InfraFailure(f"{label}: {status.st_size} bytes, over the 64 MiB limit")
        with path.open("rb") as stream:
            # Bounded read as well: the file may grow between stat and open.
            data = stream.read(MAX_JUNIT_BYTES + 1)
    except FileNotFoundError:
        raise InfraFailure(f"{label}: missing, so no results could be read") from None
    except OSError as error:
        raise InfraFailure(f"{label}: {error.strerror}, so no results could be read") from None
    if len(data) > MAX_JUNIT_BYTES:
        raise InfraFailure(f"{label}: over the 64 MiB limit")
    return data
