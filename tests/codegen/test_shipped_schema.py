"""The stage schema ships with stageware: `stageware schema export` and `--version`."""

from __future__ import annotations

from pathlib import Path

import pytest

import stageware

from .conftest import SCHEMA_DIR, Cli


def _files(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_export_writes_the_schema_and_its_payload_files(tmp_path: Path, cli: Cli) -> None:
    result = cli("schema", "export", str(tmp_path / "mine"))

    assert result.code == 0, result.err
    assert _files(tmp_path / "mine") == _files(SCHEMA_DIR)
    assert "payloads/converse.schema.json" in _files(tmp_path / "mine")
    assert f"{len(_files(SCHEMA_DIR))} written, 0 unchanged" in result.out
    assert f"stageware generate --schema {tmp_path}/mine/stages.yaml" in result.out


def test_export_again_changes_nothing(tmp_path: Path, cli: Cli) -> None:
    assert cli("schema", "export", str(tmp_path)).code == 0

    result = cli("schema", "export", str(tmp_path))

    assert result.code == 0
    assert f"0 written, {len(_files(SCHEMA_DIR))} unchanged" in result.out


def test_export_never_overwrites_an_edited_schema(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "stages.yaml").write_text("version: 1\n# mine\n", encoding="utf-8")

    result = cli("schema", "export", str(tmp_path))

    assert result.code == 2
    assert result.err == (
        f"stageware: {tmp_path / 'stages.yaml'}: exists with other content; move it away first\n"
    )
    assert _files(tmp_path) == {"stages.yaml": b"version: 1\n# mine\n"}


def test_version(capsys: pytest.CaptureFixture[str], cli: Cli) -> None:
    with pytest.raises(SystemExit) as exited:
        cli("--version")

    assert exited.value.code == 0
    assert capsys.readouterr().out == f"stageware {stageware.__version__}\n"
