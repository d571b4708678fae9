"""Our public API against the vendor's: every difference is listed, with its reason.

``tests/data/vendor_api_26_8.json`` is the record of Oracle's ``oracleagentmemory`` 26.8.0 that
``tests/vendor_api.py`` writes when run with that package's Python; this test describes our package
with the same walker and fails on any difference ``docs/vendor-differences.md`` does not list, and
on any listed difference that no longer exists.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from vendor_api import Record, compare, record_modules

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "tests" / "data" / "vendor_api_26_8.json"
DOC = ROOT / "docs" / "vendor-differences.md"
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|(.*)\|\s*$")


def vendor_record() -> Record:
    record: Record = json.loads(RECORD.read_text())
    return record


def expand(key: str) -> list[str]:
    """``a.f(x, y)`` lists ``a.f(x)`` and ``a.f(y)``; any other key is itself."""
    match = re.fullmatch(r"(.+)\(([^()]+)\)", key)
    if match is None:
        return [key]
    return [f"{match[1]}({name.strip()})" for name in match[2].split(",")]


def listed_differences(text: str) -> dict[str, str]:
    """``{key: reason}`` of the table rows of ``text``; a row without a reason, or a key listed
    twice, fails."""
    listed: dict[str, str] = {}
    for line in text.splitlines():
        row = ROW.match(line)
        if row is None:
            continue
        reason = row[2].strip()
        for key in expand(row[1]):
            assert reason, f"{key}: the row gives no reason"
            assert key not in listed, f"{key} is listed twice"
            listed[key] = reason
    return listed


def our_record(vendor: Record) -> Record:
    return record_modules(vendor, "oracleagentmemory", like=vendor)


def test_the_record_is_stored_sorted_as_the_recorder_writes_it() -> None:
    text = RECORD.read_text()
    assert text == json.dumps(json.loads(text), indent=1, sort_keys=True) + "\n"
    assert "oracleagentmemory.core.thread" in json.loads(text)


def test_every_difference_from_the_vendor_is_listed_with_its_reason() -> None:
    vendor = vendor_record()
    found = compare(vendor, our_record(vendor))
    listed = listed_differences(DOC.read_text())
    unlisted = sorted(f"{key}: {what}" for key, what in found.items() if key not in listed)
    gone = sorted(key for key in listed if key not in found)
    assert not unlisted, (
        "differences from the vendor's API that docs/vendor-differences.md does not list "
        "(fix them, or add a row with the reason):\n" + "\n".join(unlisted))
    assert not gone, ("docs/vendor-differences.md lists differences that no longer exist "
                      "(remove their rows):\n" + "\n".join(gone))


def test_the_vendors_module_paths_are_true_aliases_of_ours() -> None:
    import oracleagentmemory.apis as apis
    import oracleagentmemory.apis.contextcard as contextcard
    import oracleagentmemory.apis.scope as scope
    import oracleagentmemory.apis.searchscope as searchscope
    import oracleagentmemory.apis.summary as summary
    import oracleagentmemory.core as core
    import oracleagentmemory.core.contextcard as core_contextcard
    import oracleagentmemory.core.extractors as extractors
    import oracleagentmemory.core.memoryextraction as memoryextraction
    import oracleagentmemory.core.oraclememorystore as oraclememorystore
    import oracleagentmemory.core.storebase as storebase
    import oracleagentmemory.core.summary as core_summary

    assert contextcard.ContextCard is summary.ContextCard
    assert searchscope.SearchScope is scope.SearchScope
    assert core_summary.OracleSummary is core_contextcard.OracleSummary is core.OracleSummary
    assert oraclememorystore.OracleMemoryStore is storebase.OracleMemoryStore
    assert extractors.MemoryExtractionConfig is memoryextraction.MemoryExtractionConfig
    assert core.RelationType is apis.RelationType is str


def test_the_extraction_default_constants_are_what_a_thread_resolves_to() -> None:
    from oracleagentmemory.core.extractors import memoryextractionconfig as config
    from oracleagentmemory.core.memoryextraction import resolve_extraction

    resolved = resolve_extraction(None)
    expected = {
        "MEMORY_EXTRACTION_WINDOW_DEFAULT": resolved.memory_extraction_window,
        "MEMORY_EXTRACTION_FREQUENCY_DEFAULT": resolved.memory_extraction_frequency,
        "MEMORY_EXTRACTION_TOKEN_LIMIT_DEFAULT": resolved.memory_extraction_token_limit,
        "MEMORY_LINKING_TOKEN_LIMIT_DEFAULT": resolved.memory_link_extraction_token_limit,
    }
    assert {name: getattr(config, name) for name in expected} == expected


def test_the_opposite_mapping_is_a_copy_that_changes_no_link() -> None:
    from oracleagentmemory.apis import relations

    mapping = relations.memory_link_type_opposite_mapping
    assert mapping == relations.MEMORY_LINK_OPPOSITES
    assert mapping is not relations.MEMORY_LINK_OPPOSITES


@pytest.mark.parametrize(("ours", "key", "what"), [
    ({"m": {}}, "m.f", "missing name"),
    ({}, "m", "missing module"),
    ({"m": {"f": {"kind": "class", "init": [], "members": {}}}}, "m.f",
     "kind: vendor function, ours class"),
    ({"m": {"f": {"kind": "function", "params": ["pk a", "kw b=1"]}}}, "m.f(b)",
     "default: vendor 2, ours 1"),
    ({"m": {"f": {"kind": "function", "params": ["pk a", "pk b=2"]}}}, "m.f(b)",
     "kind: vendor kw, ours pk"),
    ({"m": {"f": {"kind": "function", "params": ["pk x=1", "pk a", "kw b=2"]}}}, "m.f(a)",
     "position: vendor 0, ours 1"),
    ({"m": {"f": {"kind": "function", "params": ["pk a", "kw b=2", "pk c"]}}}, "m.f(c)",
     "extra required parameter"),
    ({"m": {"f": {"kind": "function", "params": ["pk a"]}}}, "m.f(b)", "missing parameter"),
])
def test_the_comparison_names_each_kind_of_difference(ours: Record, key: str, what: str) -> None:
    vendor: Record = {"m": {"f": {"kind": "function", "params": ["pk a", "kw b=2"]}}}
    assert compare(vendor, ours) == {key: what}


def test_optional_parameters_and_names_only_ours_has_are_no_difference() -> None:
    vendor: Record = {"m": {"f": {"kind": "function", "params": ["pk a"]}}}
    ours: Record = {"m": {"f": {"kind": "function", "params": ["pk a", "kw extra=None"]},
                          "g": {"kind": "constant", "value": "1"}}}
    assert compare(vendor, ours) == {}


def test_a_listed_row_expands_its_parameters_and_needs_a_reason() -> None:
    text = ("| key | reason |\n|---|---|\n"
            "| `m.C.f(a, b)` | spec says so |\n| `m.g` | needs Oracle |\n")
    assert listed_differences(text) == {"m.C.f(a)": "spec says so", "m.C.f(b)": "spec says so",
                                        "m.g": "needs Oracle"}
    with pytest.raises(AssertionError, match="no reason"):
        listed_differences("| `m.g` |  |\n")
