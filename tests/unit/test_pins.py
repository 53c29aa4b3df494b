"""Pin validation: every rule of SPEC 3, each refusal naming the file and the JSON path."""

from __future__ import annotations

import datetime
import hashlib
import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import RunCli, fixture_pin, make_tree, write_json
from three_ledger.errors import Refused
from three_ledger.pins import (
    load_fixture_pin,
    load_flake_pin,
    load_properties_pin,
    small_sha256,
)
from three_ledger.selection import TestsRequirement

GOOD_FIXTURE_PIN = {
    "pin_id": "fixpin-a",
    "algorithm": "sha256",
    "files": ["fixtures/a.json", "fixtures/b.json"],
}


@pytest.mark.parametrize(
    ("change", "where", "fragment"),
    [
        ({"algorithm": None}, "$", "'algorithm' is a required property"),
        ({"algorithm": "md5"}, "$.algorithm", "'sha256' was expected"),
        ({"fixture_dir": "fixtures"}, "$", "'fixture_dir' was unexpected"),
        ({"files": []}, "$.files", "should be non-empty"),
        ({"files": ["fixtures/a.json", "fixtures/a.json"]}, "$.files", "non-unique"),
        ({"files": ["/fixtures/a.json"]}, "$.files[0]", "absolute"),
        ({"files": ["fixtures\\a.json"]}, "$.files[0]", "backslash"),
        ({"files": ["fixtures/../x.json"]}, "$.files[0]", "'..'"),
        ({"files": ["fixtures/a\u0000.json"]}, "$.files[0]", "control character"),
        ({"files": ["fixtures/cafe\u0301.json"]}, "$.files[0]", "NFC"),
        ({"files": ["fixtures/A.json", "fixtures/a.json"]}, "$.files", "differ only in case"),
        ({"files": ["other/a.json"]}, "$.files[0]", "not under fixtures_dir"),
        ({"files": [7]}, "$.files[0]", "7 is not of type 'string'"),
        ({"pin_id": "bad id"}, "$.pin_id", "does not match"),
        ({"pin_id": "fixpin\n"}, "$.pin_id", "does not match"),
        ({"digest": "ABC"}, "$.digest", "does not match"),
        ({"fixtures_dir": "../up"}, "$.fixtures_dir", "'..'"),
        # `fixtures_dirs`: each folder closed, none inside another, all under ROOT.
        ({"fixtures_dirs": []}, "$.fixtures_dirs", "should be non-empty"),
        ({"fixtures_dirs": "fixtures"}, "$.fixtures_dirs", "is not of type 'array'"),
        ({"fixtures_dir": "fixtures", "fixtures_dirs": ["fixtures"]}, "$", "both given"),
        ({"fixtures_dirs": ["fixtures", "fixtures"]}, "$.fixtures_dirs", "non-unique"),
        (
            {"fixtures_dirs": ["fixtures", "fixtures/sub"]},
            "$.fixtures_dirs[1]",
            "'fixtures/sub' overlaps $.fixtures_dirs[0] 'fixtures'",
        ),
        (
            {"fixtures_dirs": ["fixtures/sub", "fixtures"]},
            "$.fixtures_dirs[0]",
            "'fixtures/sub' overlaps $.fixtures_dirs[1] 'fixtures'",
        ),
        (
            {"fixtures_dirs": ["fixtures", "Fixtures"]},
            "$.fixtures_dirs[1]",
            "'Fixtures' overlaps $.fixtures_dirs[0] 'fixtures'",
        ),
        ({"fixtures_dirs": ["fixtures", "../up"]}, "$.fixtures_dirs[1]", "'..'"),
        ({"fixtures_dirs": ["/abs"]}, "$.fixtures_dirs[0]", "absolute"),
        ({"fixtures_dirs": [""]}, "$.fixtures_dirs[0]", "should be non-empty"),
        (
            {"fixtures_dirs": ["fixtures", "more"], "files": ["fixtures/a.json", "else/b.json"]},
            "$.files[1]",
            "is not under fixtures_dirs 'fixtures', 'more'",
        ),
    ],
)
def test_fixture_pin_refusals_name_file_and_path(
    run_cli: RunCli, tmp_path: Path, change: dict[str, Any], where: str, fragment: str
) -> None:
    document = {**GOOD_FIXTURE_PIN, **change}
    document = {key: value for key, value in document.items() if value is not None}
    pin = write_json(tmp_path / "pins/fixtures.json", document)
    make_tree(tmp_path, {"fixtures/a.json": b"", "fixtures/b.json": b""})
    out = tmp_path / "out/l.json"
    result = run_cli("digest", "--pin", pin, "--root", tmp_path, "--out", out)
    assert result.code == 2
    assert not out.exists()
    line = result.first_error_line
    assert f"{pin}: {where}: " in line
    assert fragment in line
    assert len(result.err.splitlines()) == 1


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b"\xff\xfe{}", "not valid UTF-8"),
        (b'{"pin_id": "a", "pin_id": "b"}', "duplicate key 'pin_id'"),
        (b'{"files": [NaN]}', "NaN is not a JSON number"),
        (b"{", "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"[]", "is not of type 'object'"),
    ],
)
def test_malformed_pin_bytes(tmp_path: Path, raw: bytes, fragment: str) -> None:
    pin = tmp_path / "pins/fixtures.json"
    pin.parent.mkdir()
    pin.write_bytes(raw)
    with pytest.raises(Refused, match=fragment) as caught:
        load_fixture_pin(pin)
    assert str(pin) in caught.value.message


def test_fixture_pin_defaults(tmp_path: Path) -> None:
    pin = load_fixture_pin(fixture_pin(tmp_path, ["fixtures/a.json"]))
    assert (pin.fixtures_dirs, pin.digest, pin.files) == (("fixtures",), None, ("fixtures/a.json",))
    assert not pin.listed
    assert pin.domain_path("a.json") == "fixtures/a.json"


def test_fixtures_dirs_names_each_folder_and_domains_are_relative_to_root(tmp_path: Path) -> None:
    path = write_json(
        tmp_path / "pins/fixtures.json",
        {
            "pin_id": "fixpin-two",
            "algorithm": "sha256",
            "fixtures_dirs": ["tests/spec", "tests/port/fixtures"],
            "files": ["tests/spec/a.json", "tests/port/fixtures/b.md"],
        },
    )
    pin = load_fixture_pin(path)
    assert (pin.fixtures_dirs, pin.first_dir, pin.listed) == (
        ("tests/spec", "tests/port/fixtures"),
        "tests/spec",
        True,
    )
    assert pin.domain_path("tests/spec/a.json") == "tests/spec/a.json"


def test_a_list_of_one_folder_is_the_same_closed_world_with_root_relative_domains(
    tmp_path: Path,
) -> None:
    one = {"pin_id": "p", "algorithm": "sha256", "files": ["data/a.json"]}
    single = load_fixture_pin(write_json(tmp_path / "a.json", {**one, "fixtures_dir": "data"}))
    listed = load_fixture_pin(write_json(tmp_path / "b.json", {**one, "fixtures_dirs": ["data"]}))
    assert single.fixtures_dirs == listed.fixtures_dirs == ("data",)
    assert (single.domain_path("a.json"), listed.domain_path("data/a.json")) == (
        "data/a.json",
        "data/a.json",
    )


def properties_document(**change: Any) -> dict[str, Any]:
    prop = {
        "id": "orders.total.non_negative",
        "claim": "Totals are zero or more.",
        "domain": ["a.json"],
        "test": "properties/test_orders.py::test_total",
    }
    prop.update(change.pop("prop", {}))
    return {"pin_id": "proppin", "fixture_pins": ["fixpin-a"], "properties": [prop], **change}


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        (properties_document(prop={"ID": 1}), "'ID' was unexpected"),
        (properties_document(prop={"claim": "two\nlines"}), "$.properties[0].claim"),
        (properties_document(prop={"domain": []}), "$.properties[0].domain"),
        (properties_document(prop={"id": "Upper.Case"}), "$.properties[0].id"),
        (properties_document(prop={"domain": ["../x.json"]}), "$.properties[0].domain[0]"),
        (properties_document(network="sometimes"), "$.network"),
        (properties_document(properties=[]), "$.properties"),
        (properties_document(oracle_path=["tests"]), "'oracle_path' was unexpected"),
        (properties_document(prop={"min_tests": 0}), "$.properties[0].min_tests"),
        (properties_document(prop={"min_tests": "42"}), "$.properties[0].min_tests"),
        (properties_document(prop={"min_tests": True}), "$.properties[0].min_tests"),
        (properties_document(prop={"min_tests": 4.5}), "$.properties[0].min_tests"),
        (properties_document(prop={"tests_sha256": "AB" * 32}), "$.properties[0].tests_sha256"),
        (properties_document(prop={"tests_sha256": "ab" * 31}), "$.properties[0].tests_sha256"),
        (properties_document(prop={"tests_sha256": None}), "$.properties[0].tests_sha256"),
        (properties_document(prop={"min_test": 3}), "'min_test' was unexpected"),
        (properties_document(env="GITHUB_TOKEN"), "$.env"),
        (properties_document(env=["A", "A"]), "$.env"),
        (properties_document(env=["A=B"]), "$.env[0]"),
        (properties_document(env=[""]), "$.env[0]"),
        (properties_document(env=["OK", "HOME"]), "$.env[1]: 'HOME' cannot be kept"),
        (properties_document(env=["THREE_LEDGER_BASE"]), "$.env[0]: 'THREE_LEDGER_BASE'"),
    ],
)
def test_properties_pin_refusals(tmp_path: Path, document: dict[str, Any], fragment: str) -> None:
    path = write_json(tmp_path / "pins/properties.json", document)
    with pytest.raises(Refused) as caught:
        load_properties_pin(path)
    assert str(path) in caught.value.message
    assert fragment in caught.value.message


def test_min_tests_and_tests_sha256_are_what_the_property_asks_of_its_tests(
    tmp_path: Path,
) -> None:
    document = properties_document(prop={"min_tests": 42, "tests_sha256": "ab" * 32})
    document["properties"].append({**document["properties"][0], "id": "orders.other"})
    del document["properties"][1]["min_tests"], document["properties"][1]["tests_sha256"]
    pin = load_properties_pin(write_json(tmp_path / "pins/properties.json", document))
    assert pin.requirements() == {
        "orders.total.non_negative": TestsRequirement(min_tests=42, tests_sha256="ab" * 32),
        "orders.other": TestsRequirement(),
    }


def test_the_pins_env_may_name_a_credential_a_reviewer_let_through(tmp_path: Path) -> None:
    document = properties_document(env=["GITHUB_TOKEN", "SSL_CERT_FILE", "aws_profile"])
    pin = load_properties_pin(write_json(tmp_path / "pins/properties.json", document))
    assert pin.env == ("GITHUB_TOKEN", "SSL_CERT_FILE", "aws_profile")


def test_repeated_property_id_is_refused(tmp_path: Path) -> None:
    document = properties_document()
    document["properties"] *= 2
    path = write_json(tmp_path / "pins/properties.json", document)
    with pytest.raises(Refused, match=r"\$\.properties\[1\]\.id: .* is repeated"):
        load_properties_pin(path)


def test_properties_pin_defaults_and_sha256(tmp_path: Path) -> None:
    path = write_json(tmp_path / "pins/properties.json", properties_document())
    pin = load_properties_pin(path)
    assert pin.network == "banned"
    assert pin.oracle_paths == ("properties", "tests")
    assert pin.env == ()
    import hashlib

    assert pin.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("domain", "accepted"),
    [
        (["a.json"], True),
        (["valid/"], True),
        (["valid/deep/"], True),
        (["missing.json"], False),
        (["invalid/"], False),
        (["vali/"], False),
        (["valid"], False),
    ],
)
def test_domains_must_come_from_the_fixture_pin(
    tmp_path: Path, domain: list[str], accepted: bool
) -> None:
    fixture = load_fixture_pin(
        fixture_pin(
            tmp_path, ["fixtures/a.json", "fixtures/valid/x.json", "fixtures/valid/deep/y.json"]
        )
    )
    fixture = type(fixture)(**{**fixture.__dict__, "pin_id": "fixpin-a"})
    path = write_json(
        tmp_path / "pins/properties.json", properties_document(prop={"domain": domain})
    )
    pin = load_properties_pin(path)
    if accepted:
        pin.check_against(fixture)
    else:
        with pytest.raises(Refused, match=r"domain\[0\]: .* names no file pinned"):
            pin.check_against(fixture)


def test_fixture_pin_must_be_listed(tmp_path: Path) -> None:
    fixture = load_fixture_pin(fixture_pin(tmp_path, ["fixtures/a.json"]))
    pin = load_properties_pin(write_json(tmp_path / "pins/p.json", properties_document()))
    with pytest.raises(Refused, match=r"\$\.fixture_pins: fixture pin 'fixpin-test'"):
        pin.check_against(fixture)


def flake_document(**change: Any) -> dict[str, Any]:
    entry = {"test_id": "orders.slow", "accepted_revision": "abc123", "review_by": "2027-01-31"}
    entry.update(change)
    return {"pin_id": "flakepin", "flakes": [entry]}


def test_flake_pin_loads_with_defaults(tmp_path: Path) -> None:
    pin = load_flake_pin(write_json(tmp_path / "pins/flakes.json", flake_document()))
    entry = pin.entry("orders.slow")
    assert entry is not None
    assert entry.test == "orders.slow"
    assert entry.review_by == datetime.date(2027, 1, 31)
    assert not entry.expired(datetime.date(2027, 1, 31))
    assert entry.expired(datetime.date(2027, 2, 1))
    assert pin.entry("other") is None


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"review_by": "2027-02-30"}, "not a calendar date"),
        ({"review_by": "31/01/2027"}, "$.flakes[0].review_by"),
        ({"accepted_revision": None}, "'accepted_revision' is a required property"),
        ({"owners": "x"}, "'owners' was unexpected"),
    ],
)
def test_flake_pin_refusals(tmp_path: Path, change: dict[str, Any], fragment: str) -> None:
    document = flake_document(**change)
    document["flakes"][0] = {k: v for k, v in document["flakes"][0].items() if v is not None}
    path = write_json(tmp_path / "pins/flakes.json", document)
    with pytest.raises(Refused) as caught:
        load_flake_pin(path)
    assert fragment in caught.value.message
    assert str(path) in caught.value.message


def test_repeated_flake_id_is_refused(tmp_path: Path) -> None:
    document = flake_document()
    document["flakes"] *= 2
    with pytest.raises(Refused, match="is repeated"):
        load_flake_pin(write_json(tmp_path / "pins/flakes.json", document))


@given(st.binary(max_size=4096))
def test_a_small_pins_sha256_is_hashlibs(data: bytes) -> None:
    assert small_sha256(data) == hashlib.sha256(data).hexdigest()


def test_without_cpythons_own_hashes_hashlib_gives_the_same_digest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An interpreter built without `_sha2`/`_sha256` (`--without-builtin-hashlib-hashes`)."""
    real = importlib.import_module

    def without_builtin(name: str, package: str | None = None) -> ModuleType:
        if name in ("_sha2", "_sha256"):
            raise ModuleNotFoundError(name)
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", without_builtin)
    assert small_sha256(b"pin") == hashlib.sha256(b"pin").hexdigest()
