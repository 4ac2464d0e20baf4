"""A run is assembled in one place (flower.workflow.assemble): the CLI's arguments and a client's
folder options become one typed RunSettings, and the same settings always make the same run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from flower import cli
from flower.core.run_settings import RunSettings
from flower.stores.prune import PruningSessionStore
from flower.workflow.assemble import assemble, banner_of, wake_of


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLOWER_STORE", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")  # nothing here calls a model
    return tmp_path


def test_settings_spell_their_folders_one_way_and_keep_what_they_started_with(here: Path):
    settings = RunSettings(workspace=Path("proj/../proj"), run_dir=Path("runs"), store="  ")
    assert settings.workspace == here / "proj" and settings.run_dir == here / "runs"
    assert settings.store is None  # an empty setting is no store, not a URL to refuse
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.timeout_s = 5  # type: ignore[misc]
    later = settings.but(timeout_s=0.0, new=True)
    assert (later.timeout_s, later.new, settings.timeout_s, settings.new) == (0.0, True, 1800.0, False)


def test_flower_go_with_no_flags_asks_for_what_a_client_with_no_options_gets(here: Path):
    # the language server builds RunSettings(workspace, run_dir, and the folder's options); a
    # folder with none set must run as `flower go` in that folder runs
    ws = here / "ws"
    from_the_cli = cli.settings_of(cli.parse_args(["x", "-w", str(ws), "-r", str(ws / "runs")]))
    from_a_client = RunSettings(workspace=ws, run_dir=ws / "runs")
    assert from_the_cli == from_a_client


def test_the_flags_of_go_reach_the_settings(here: Path):
    got = cli.settings_of(
        cli.parse_args(
            ["x", "--rounds", "5", "--judge-can-run", "--no-trim", "--window", "200000", "--sandbox", "off"]
        ),
        new=True,
    )
    assert (got.rounds, got.judge_can_run, got.trim, got.window, got.sandbox, got.new) == (
        5,
        True,
        False,
        200_000,
        "off",
        True,
    )


def test_run_and_once_trim_only_when_asked(here: Path):
    assert cli.settings_of(cli.parse_args(["once", "hi"])).trim is False
    assert cli.settings_of(cli.parse_args(["once", "-T", "hi"])).trim is True


def test_the_assembled_run_is_the_flow_and_the_runtime_go_runs(here: Path):
    settings = RunSettings(workspace=here / "ws", window=300_000, sandbox="off", rounds=2)
    run = assemble("写一个 hello.py", settings)
    try:
        assert [s.name for s in run.flow.steps] == ["确认需求", "设定目标", "干活"]
        assert run.channel is run.flow.channel and run.channel.timeout_s == 1800.0
        rt = run.runtime
        assert rt.workbench is run.flow.workbench  # the flow's own workbench, not a second one
        assert isinstance(rt.store, PruningSessionStore)
        assert rt.store.policy.enabled is True  # trimming on, as on the `flower go` path
        assert rt.handoff.enabled is True and rt.handoff.window == 300_000
        assert rt.sandbox.policy.mode == "off"
        assert rt.store_where == str(here / "runs" / "sessions.db")
    finally:
        run.close()


def test_a_folder_with_nothing_to_continue_wakes_to_nothing_and_has_no_banner(here: Path):
    settings = RunSettings(workspace=here / "ws")
    (here / "ws").mkdir()
    assert wake_of(settings)["waking"] is False
    assert banner_of(settings) is None
    assert not (here / "runs").exists()  # looking writes nothing
