"""Every answer sheet of the kit, the handouts and the references, is valid TOML (one dialect:
# comments, "" for an answer not given yet), as kit/answers.hpp requires."""

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHEETS = sorted([*ROOT.glob("labs/*/answers.toml"), *ROOT.glob("solutions/*/answers.toml")])


def test_there_are_answer_sheets_to_check() -> None:
    assert any(path.parts[-3] == "labs" for path in SHEETS)


@pytest.mark.parametrize("sheet", SHEETS, ids=lambda path: str(path.relative_to(ROOT)))
def test_an_answer_sheet_is_toml_with_an_answer_or_an_empty_string_for_every_key(sheet: Path) -> None:
    answers = tomllib.loads(sheet.read_text(encoding="utf-8"))
    values = [
        value
        for table in answers.values()
        for value in (table.values() if isinstance(table, dict) else [table])
    ]
    assert values and all(isinstance(value, int | float | str) for value in values)
    if sheet.parts[-3] == "labs":  # a handout: nothing answered yet
        assert all(value == "" for value in values)
