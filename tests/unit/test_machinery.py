"""The machinery audit's judgement (plugin/machinery.py, plugin/makers.py), in this process:
changes made with monkeypatch to pytest's own modules and classes, and to a plugin manager of
the test's own, are found and named by who made them, or let pass where pytest, pluggy or an
installed plugin made them. The audit is built here without its audit hook (`start()` would
arm one in this process for good); events are handed to it as the hook would."""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from three_ledger.plugin import machinery, versions
from three_ledger.plugin.makers import Maker, Trust, stack

PRODUCT = """def show_test_item(item):
    return None


class Quiet:
    def pytest_runtest_logreport(self, report):
        pass


def before(name, impls, kwargs):
    pass


def after(outcome, name, impls, kwargs):
    pass


def frames():
    import sys
    return sys._getframe(0)


class Lookalike:
    def __init__(self, real):
        self.real = real

    def __getattr__(self, name):
        return getattr(self.real, name)


class Relay:
    def __init__(self, real):
        self.real = real

    def __get__(self, instance, owner=None):
        return self.real.__get__(instance, owner)

    def __set__(self, instance, value):
        self.real.__set__(instance, value)


class Plain:
    pass


def answer(self, instance, owner=None):
    return "passed"


class Swallow(str):
    def __set__(self, instance, value):
        pass


def home(cls):
    return cls("/nowhere")


class Carrier:
    # Runs code of its own, carrying pytest's: a `__func__` and a `__code__`.
    def __init__(self, real):
        self.__func__ = real
        self.__code__ = real.__code__

    def __call__(self, *args, **kwargs):
        return None


def keep(self, value):
    pass
"""


@pytest.fixture
def product(tmp_path: Path) -> ModuleType:
    """A module of the project under test: its file lies under ROOT (tmp_path)."""
    path = tmp_path / "product.py"
    path.write_text(PRODUCT)
    spec = importlib.util.spec_from_file_location("product", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=["by version", "by value"])
def audit(
    request: pytest.FixtureRequest,
    pytestconfig: pytest.Config,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[machinery.Audit, list[str]]:
    """An audit bound to a trust rule whose ROOT is tmp_path; each test runs twice, with the
    dict versions this interpreter keeps and as on one that keeps none (`versions.py`)."""
    if request.param == "by value":
        monkeypatch.setattr(versions, "VERSIONS", None)
    elif versions.VERSIONS is None:
        pytest.skip("this interpreter keeps no dict versions the audit can read")
    found: list[str] = []
    audit = machinery.Audit()
    audit.bind(Trust(pytestconfig, [str(tmp_path)]), lambda finding: found.append(str(finding)))
    return audit, found


Audited = tuple[machinery.Audit, list[str]]


def test_a_function_replaced_by_the_project_is_found_naming_it(
    audit: Audited, product: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks, found = audit
    runner = sys.modules["_pytest.runner"]
    monkeypatch.setattr(runner, "show_test_item", product.show_test_item)
    checks.check_report()  # on the report path: compared after every report
    assert found == ["_pytest.runner.show_test_item replaced, by product (product.py:1)"]
    checks.check_all()
    assert len(found) == 1  # reported once


def test_a_class_attribute_the_project_adds_is_found(
    audit: Audited, product: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks, found = audit
    report = sys.modules["_pytest.reports"].TestReport
    monkeypatch.setattr(report, "extra", classmethod(product.frames), raising=False)
    checks.check_all()
    assert found == ["_pytest.reports.TestReport.extra added, by product (product.py:18)"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (lambda: functools.partial(print), ["replaced, by functools"]),
        (lambda: None, []),  # data: a callable set to None calls nothing
        (lambda: sys.modules["_pytest.runner"].call_and_report, []),  # pytest's own
    ],
    ids=["a partial", "data", "pytest's own code"],
)
def test_what_a_value_is_decides(
    audit: Audited,
    monkeypatch: pytest.MonkeyPatch,
    value: Callable[[], object],
    expected: list[str],
) -> None:
    checks, found = audit
    monkeypatch.setattr(sys.modules["_pytest.runner"], "show_test_item", value())
    checks.check_all()
    assert [finding.split(" ", 1)[1].rsplit(" (", 1)[0] for finding in found] == expected


def test_a_value_is_judged_by_the_code_it_runs_not_by_the_code_it_carries(
    audit: Audited, product: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An object of the project's class that holds pytest's function as its `__func__` and
    that function's `__code__` runs its own `__call__`; a property with pytest's getter runs
    the project's setter on every write. Each is the project's, whatever else it holds."""
    checks, found = audit
    runner = sys.modules["_pytest.runner"]
    report = sys.modules["_pytest.reports"].BaseReport
    monkeypatch.setattr(runner, "show_test_item", product.Carrier(runner.show_test_item))
    monkeypatch.setattr(report, "passed", property(vars(report)["passed"].fget, product.keep))
    checks.check_report()  # both on the report path: compared after every report
    line = product.keep.__code__.co_firstlineno
    assert sorted(found) == [
        f"_pytest.reports.BaseReport.passed replaced, by product (product.py:{line})",
        "_pytest.runner.show_test_item replaced, by product (<product>)",
    ]


def test_the_standard_library_is_sysconfigs(pytestconfig: pytest.Config, tmp_path: Path) -> None:
    """The trust rule's standard library is the folder `sysconfig` names, found without it."""
    import json
    import sysconfig

    trust = Trust(pytestconfig, [str(tmp_path)])
    assert trust.stdlib == (os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep,)
    assert os.path.realpath(json.__file__).startswith(trust.stdlib)


def test_a_module_a_namespace_binds_replaced_by_anything_is_found(
    audit: Audited, product: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`_pytest.runner.os` replaced by a look-alike of it, or by another module: every call
    the runner makes through it would run the project's code, before and after each phase
    of each test, so it is a change to the machinery as a replaced function is."""
    checks, found = audit
    runner = sys.modules["_pytest.runner"]
    monkeypatch.setattr(runner, "os", product.Lookalike(runner.os))
    # What the runner takes from it while this very test runs.
    monkeypatch.setattr(product, "BdbQuit", runner.bdb.BdbQuit, raising=False)
    monkeypatch.setattr(runner, "bdb", product)
    checks.check_report()  # on the report path: compared after every report
    assert sorted(found) == [
        "_pytest.runner.bdb replaced, by product (product.py)",
        "_pytest.runner.os replaced, by product (<product>)",
    ]


def test_a_descriptor_replaced_by_a_descriptor_of_the_project_is_found(
    audit: Audited, product: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`HookImpl.function` is a slot: its descriptor answers every `impl.function` pluggy
    reads to call a hook. One of the project's in its place (here one that relays to the
    slot, so that this very run keeps working) could answer pluggy one function and the
    audit another."""
    checks, found = audit
    impl = sys.modules["pluggy._impl"].HookImpl
    monkeypatch.setattr(impl, "function", product.Relay(vars(impl)["function"]))
    checks.check_report()  # on the report path: compared after every report
    assert found == ["pluggy._impl.HookImpl.function replaced, by product (<product>)"]


def test_an_object_whose_class_gains_a_get_is_a_descriptor_from_then_on() -> None:
    """Whether a value is watched is asked afresh of a class defined in Python: it can be
    given `__get__` after its instance was judged, and its instances are descriptors then."""

    class Later:
        pass

    value = Later()
    assert not machinery._watched(value)
    Later.__get__ = lambda self, instance, owner=None: None  # type: ignore[attr-defined]
    assert machinery._watched(value)
    assert not machinery._watched(3)
    assert machinery._watched(vars(sys.modules["pluggy._impl"].HookImpl)["function"])


def test_an_object_whose_class_is_given_get_after_it_was_put_in_place_is_found(
    audit: Audited, product: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An object of the project's put on `TestReport` while its class has no `__get__` is
    data; its class is watched from then on, and the `__get__` given to it later, which
    would make the object answer every report's `outcome`, is a finding."""
    checks, found = audit
    report = sys.modules["_pytest.reports"].TestReport
    monkeypatch.setattr(report, "outcome", product.Plain(), raising=False)
    checks.check_all()
    assert found == []  # data, for now
    monkeypatch.setattr(product.Plain, "__get__", product.answer, raising=False)
    checks.check_all()
    assert found == ["product.Plain.__get__ added, by product (product.py:46)"]


def test_a_descriptor_without_get_is_watched(product: ModuleType) -> None:
    """An object whose class has `__set__` alone takes every write of its name from the
    instances, and every read then gives the object itself: a `str` of the project's that
    says "passed" in place of `TestReport.outcome` would force every report."""
    assert machinery._watched(product.Swallow("passed"))
    assert not machinery._watched(product.Plain())
    assert not machinery._watched("passed")


def test_a_class_watched_for_its_objects_is_judged_on_the_descriptor_protocol_alone(
    audit: Audited, product: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pathlib.Path` is watched because pytest holds paths as data: a test of the project
    that replaces `Path.home` changes no pytest object and is no finding."""
    checks, found = audit
    assert any(ns.label == "pathlib.Path" for ns in checks.namespaces.values())
    monkeypatch.setattr(Path, "home", classmethod(product.home))
    checks.check_all()
    assert found == []


def test_a_pytest_module_bound_by_pytest_is_no_finding(
    audit: Audited, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Importing a submodule binds it on its package: pytest's own module, put in place by
    the import system, is judged by its file and let pass."""
    checks, found = audit
    package = sys.modules["_pytest"]
    monkeypatch.setattr(package, "late_submodule", sys.modules["_pytest.runner"], raising=False)
    monkeypatch.setattr(sys.modules["_pytest.runner"], "os", sys.modules["os"])  # the same
    checks.check_all()
    assert found == []


def test_an_assignment_the_audit_hook_reports_is_judged_by_the_stack(
    audit: Audited, product: ModuleType
) -> None:
    checks, found = audit
    function = sys.modules["_pytest.runner"].show_test_item
    event = (function, "__code__", function.__code__)
    # As CPython calls the hook: from inside the assignment, made by the project's code.
    product_frame = product.frames()
    checks.events.append(("_pytest.runner.show_test_item.__code__ set", stack(product_frame)))
    checks.check_report()
    assert found == ["_pytest.runner.show_test_item.__code__ set, by product (product.py:20)"]

    # Before the run is bound, the hook keeps the event and the stack that made it.
    unbound = machinery.Audit()
    unbound.audit_hook("object.__setattr__", event)
    unbound.audit_hook("open", ("x", "r", 0))  # other events are not looked at
    [(what, frames)] = unbound.events
    assert what == "_pytest.runner.show_test_item.__code__ set"
    assert frames[0][1] == __file__


def test_an_assignment_pytest_makes_itself_is_no_finding(audit: Audited) -> None:
    checks, found = audit
    checks.events.append(("_pytest.python.Function.__doc__ set", ()))  # no frame but pytest's
    checks.check_all()
    assert found == []


def test_registrations_are_judged_by_who_called_register(
    audit: Audited, product: ModuleType
) -> None:
    checks, found = audit
    manager = pytest.PytestPluginManager()
    checks.watch_hooks(manager)
    quiet = product.Quiet()
    manager.register(quiet, "quiet")
    checks.registered(quiet, manager, stack(product.frames()))
    assert found == [
        "pytest_runtest_logreport of plugin quiet registered, by product (product.py:20)"
    ]
    checks.check_all()  # accounted for: not reported again as added
    assert len(found) == 1


def test_hooks_added_past_register_removed_or_traced_are_found(
    audit: Audited, product: ModuleType
) -> None:
    checks, found = audit
    manager = pytest.PytestPluginManager()
    checks.watch_hooks(manager)
    manager.register(product.Quiet(), "quiet")  # no pytest_plugin_registered reached the audit
    checks.check_all()
    manager.unregister(name="quiet")
    checks.check_all()
    manager.add_hookcall_monitoring(product.before, product.after)
    checks.check_report()
    assert found == [
        "hook implementation pytest_runtest_logreport of quiet added, by product (product.py:6)",
        "hook implementation pytest_runtest_logreport of quiet removed",
        "pluggy's hook runner replaced, by product (product.py:14)",
    ]


def test_pluggys_own_tracing_is_no_finding(audit: Audited) -> None:
    checks, found = audit
    manager = pytest.PytestPluginManager()
    checks.watch_hooks(manager)
    manager.enable_tracing()  # what pytest --debug does
    checks.check_all()
    assert found == []


def test_a_disarmed_audit_watches_nothing(audit: Audited, product: ModuleType) -> None:
    checks, found = audit
    checks.disarm()
    checks.audit_hook("object.__setattr__", (product.show_test_item, "__code__", None))
    assert (checks.events, checks.watched_ids, found) == ([], {}, [])


def test_the_report_path_is_compared_after_each_report_and_the_rest_in_turns(
    audit: Audited,
) -> None:
    checks, _ = audit
    hot = {namespace.label for namespace in checks.hot.namespaces}
    assert {"_pytest.runner", "_pytest.reports.TestReport", "pluggy._manager"} <= hot
    assert "_pytest.fixtures" not in hot
    cold: list[Any] = [ns.label for chunk in checks.cold for ns in chunk.namespaces]
    assert "_pytest.fixtures" in cold
    assert all(chunk.size() <= machinery.SLICE * 4 for chunk in checks.cold)


class _Distribution:
    """An installed plugin's metadata, as `importlib.metadata` gives it: entry points, and
    files that count each time they are read."""

    def __init__(self, entry_point: str, files: list[str]) -> None:
        self.entry_points = [SimpleNamespace(group="pytest11", value=entry_point)]
        self._files = [PurePosixPath(file) for file in files]
        self.files_read = 0

    @property
    def files(self) -> list[PurePosixPath]:
        self.files_read += 1
        return self._files


def test_installed_plugins_are_named_by_entry_point_or_files_read_only_when_needed(
    pytestconfig: pytest.Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A maker's top-level package is an installed plugin's if an entry point names it or the
    plugin's files install it; the files (a RECORD to parse) are read only for the latter."""
    dist = _Distribution(
        "speedy_plugin.hooks",
        ["speedy_helpers/__init__.py", "speedy_single.py", "speedy-1.0.dist-info/RECORD"],
    )
    manager = pytestconfig.pluginmanager
    monkeypatch.setattr(manager, "list_plugin_distinfo", lambda: [(object(), dist)])
    trust = Trust(pytestconfig, [str(tmp_path)])

    def maker(module: str) -> Maker:
        return Maker(module, f"/site-packages/{module}.py", f"{module}.py")

    assert trust.may_change(maker("speedy_plugin.hooks"))
    assert dist.files_read == 0
    assert trust.may_change(maker("speedy_helpers.patch"))
    assert trust.may_change(maker("speedy_single"))
    assert not trust.may_change(maker("speedy"))
    assert not trust.may_change(maker("elsewhere.module"))
    assert dist.files_read == 1
    # pytest and pluggy judge their own changes elsewhere: never as a plugin, whatever lists them.
    monkeypatch.setattr(dist, "_files", [PurePosixPath("pluggy/__init__.py")])
    assert not trust.may_change(maker("pluggy.fake"))


def test_a_version_moved_by_a_change_put_back_costs_one_comparison(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A namespace whose version moved is compared value by value; found unchanged (a value
    set and put back), its new version is kept, and the next check reads no value again."""
    if versions.VERSIONS is None:
        pytest.skip("this interpreter keeps no dict versions the audit can read")
    module = ModuleType("watched")
    vars(module)["run"] = print
    group = machinery._Group([machinery._Namespace("watched", vars(module))])
    compared: list[str] = []
    same = machinery._Namespace.same

    def counted(namespace: machinery._Namespace) -> bool:
        compared.append(namespace.label)
        return same(namespace)

    monkeypatch.setattr(machinery._Namespace, "same", counted)
    assert group.unchanged()
    assert compared == []
    vars(module)["run"] = len
    vars(module)["run"] = print
    assert group.unchanged()
    assert compared == ["watched"]
    assert group.unchanged()
    assert compared == ["watched"]
    vars(module)["run"] = len
    assert not group.unchanged()


class _EqualToAll(type):
    """A metaclass whose classes answer `hash` and `==` as the project likes."""

    def __hash__(cls) -> int:
        return 1

    def __eq__(cls, other: object) -> bool:
        return True


class _Answers(metaclass=_EqualToAll):
    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        return True


def test_identity_keys_are_distinct_whatever_a_class_defines() -> None:
    """The audit's tables key objects by identity: what a class says of `hash` or `==` (or a
    class that has no hash) changes nothing, and no two live objects share a key."""
    things: list[object] = [
        _Answers,
        _EqualToAll,
        type,
        [],
        {},
        object(),
        *(_Answers() for _ in range(5000)),
    ]
    things += [[] for _ in range(5000)]
    keys = [machinery._key(thing) for thing in things]
    assert len(set(keys)) == len(things)
    assert keys == [machinery._key(thing) for thing in things]
    if sys.implementation.name == "cpython":
        assert machinery._key is object.__hash__


def test_identity_keys_are_ids_where_the_address_hash_is_not_proven(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "implementation", SimpleNamespace(name="pypy"))
    assert machinery._identity_key() is id
    monkeypatch.undo()
    # A hash that is not the rotated address is not taken either.
    other = type("Other", (), {"__hash__": lambda self: 7})
    monkeypatch.setattr(machinery, "object", other, raising=False)
    assert machinery._identity_key() is id


def test_arming_raises_no_id_event() -> None:
    """`builtins.id` is an audit event, which every audit hook of the run (the closed oracle
    set's) is called for: arming keys its thousands of values without it. Counted in a
    process of its own, since an audit hook cannot be removed; dict versions off, whose
    reader takes each namespace's address from `id`."""
    if sys.implementation.name != "cpython":
        pytest.skip("elsewhere the audit's tables are keyed by `id`")
    code = (
        "import sys\n"
        "import _pytest.config, _pytest.main, _pytest.python, _pytest.runner, pluggy\n"
        "from three_ledger.plugin import machinery, versions\n"
        "versions.VERSIONS = None\n"
        "counted = []\n"
        "sys.addaudithook(lambda event, args: event == 'builtins.id' and counted.append(1))\n"
        "audit = machinery.Audit()\n"
        "print(len(audit.namespaces), len(counted))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    namespaces, events = map(int, done.stdout.split())
    assert namespaces > 100
    assert events == 0
