"""``headrace`` sub-commands found through the ``headrace.commands`` entry point group, as Flask's CLI finds
``flask.commands``: ``flume-agent`` is one, and a distribution installed beside Headrace can add its own."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from connect.cli import headrace_main

ROOT = Path(__file__).resolve().parents[2]


def _install_fake_distribution(folder: Path, entries: dict[str, str], module_source: str) -> None:
    """A distribution on sys.path with a ``headrace.commands`` group, as ``pip install`` would leave it."""
    (folder / "fake_headrace_commands.py").write_text(textwrap.dedent(module_source))
    info = folder / "fake_headrace_commands-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-headrace-commands\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[headrace.commands]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items()))


FAKE_COMMANDS = """
    def add_hello(sub, name):
        p = sub.add_parser(name, help="say hello")
        p.add_argument("--who", required=True)
        p.set_defaults(handler=lambda args: print(f"hello {args.who}") or 0)

    def add_topics(sub, name):
        raise AssertionError("a built-in command is never replaced")
"""


def test_flume_agent_is_registered_in_the_headrace_commands_group():
    found = {ep.name: ep for ep in entry_points(group="headrace.commands")}
    assert "flume-agent" in found, "run pip install --no-deps -e . to register the entry points"
    assert callable(found["flume-agent"].load())


def test_headrace_help_lists_flume_agent_and_it_keeps_its_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        headrace_main(["--help"])
    assert exit_info.value.code == 0
    assert "flume-agent" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        headrace_main(["flume-agent", "--help"])
    out = capsys.readouterr().out
    for option in ("--conf-file", "--name", "--print-connectors", "--work-dir", "--default-fs", "--worker-config"):
        assert option in out


def test_a_command_of_another_distribution_runs(tmp_path, monkeypatch, capsys):
    _install_fake_distribution(tmp_path, {"hello": "fake_headrace_commands:add_hello"}, FAKE_COMMANDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert headrace_main(["hello", "--who", "operator"]) == 0
    assert capsys.readouterr().out == "hello operator\n"


def test_a_broken_command_is_one_warning_and_the_others_still_run(tmp_path, monkeypatch, capsys):
    _install_fake_distribution(tmp_path, {"hello": "fake_headrace_commands:add_hello",
                                          "broken": "no_such_module_here:add",
                                          "topics": "fake_headrace_commands:add_topics"}, FAKE_COMMANDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert headrace_main(["hello", "--who", "x"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "hello x\n"
    warnings = [line for line in captured.err.splitlines() if line.startswith("WARNING")]
    assert any("'broken'" in line and "no_such_module_here" in line for line in warnings), captured.err
    assert any("'topics'" in line and "built-in" in line for line in warnings), captured.err
    assert "Traceback" not in captured.err


def test_a_built_in_command_does_not_load_the_plugin_commands(tmp_path):
    """``headrace topics list`` does not import the Flume translation (nor any other command's module)."""
    code = ("import sys; from connect.cli import headrace_main; "
            f"rc = headrace_main(['topics', 'list', '--log-dir', {str(tmp_path)!r}]); "
            "print(rc, any('flume' in name for name in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["0", "False"], out.stderr
