"""The generated reference (docs/reference/) matches the code it is generated from.

scripts/gen_reference.py writes the configuration reference from the ConfigDefs and the REST reference from
rest/openapi.json; a ConfigDef or openapi.json change without regenerating fails here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import markdown
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gen_reference.py"
PAGES = ("docs/reference/configuration/worker.md", "docs/reference/configuration/connector.md",
         "docs/reference/configuration/plugins.md", "docs/reference/rest-api.md")
# the Markdown extensions of mkdocs.yml that change how the generated pages parse
EXTENSIONS = ["tables", "attr_list", "toc"]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_reference", module)  # its dataclasses look their module up there
    spec.loader.exec_module(sys.modules["gen_reference"])
    return sys.modules["gen_reference"]


def _run(*args: str, cwd: Path = ROOT, hash_seed: str = "0") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_committed_reference_is_what_the_code_generates(tmp_path: Path) -> None:
    # from another folder and with another hash seed: the output may depend on neither
    result = _run("--check", cwd=tmp_path, hash_seed="12345")
    assert result.returncode == 0, (
        "docs/reference is stale; run python3 scripts/gen_reference.py and commit the pages:\n" + result.stderr)


def test_check_names_the_page_that_differs(tmp_path: Path) -> None:
    for page in PAGES:
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / page, tmp_path / page)
    assert _run("--check", "--root", str(tmp_path)).returncode == 0
    worker = tmp_path / PAGES[0]
    worker.write_text(worker.read_text().replace("Kafka brokers to connect to.", "Brokers."))
    (tmp_path / PAGES[3]).unlink()

    result = _run("--check", "--root", str(tmp_path))

    assert result.returncode == 1
    assert "docs/reference/configuration/worker.md: stale" in result.stderr
    assert "docs/reference/rest-api.md: stale" in result.stderr
    assert "connector.md" not in result.stderr and "plugins.md" not in result.stderr
    assert worker.read_text().count("Brokers.") == 1, "--check must not write"


def test_documentation_with_markdown_characters_shows_as_written() -> None:
    from connect.api.config import ConfigDef, ConfigType, Importance, ValidString

    gen = _generator()
    definition = ConfigDef()
    definition.define("a.key", ConfigType.STRING, "x|y", ValidString.in_("x|y", "<z>"), Importance.HIGH,
                      "Splits on | and keeps <embedded.log.dir>, *stars*, _under_ and [brackets](x).\n"
                      "- not a list\n\n# not a heading")
    definition.define("b.key", ConfigType.LIST, [], importance=Importance.LOW, documentation="")

    html = markdown.markdown("\n".join(gen.key_table(definition.config_keys.values())), extensions=EXTENSIONS)

    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    assert len(rows) == 3
    assert all(len(re.findall(r"<t[hd]>", row)) == 6 for row in rows), html
    cells = re.findall(r"<td>(.*?)</td>", rows[1], re.S)
    assert cells[2] == "x|y"
    assert cells[3] == "[x|y, &lt;z&gt;]"
    # one line break is a space, as in Markdown; a blank line a paragraph break
    assert cells[5] == ("Splits on | and keeps &lt;embedded.log.dir&gt;, *stars*, _under_ and [brackets](x). "
                        "- not a list<br><br># not a heading")


def test_machine_specific_defaults_are_not_written(tmp_path: Path) -> None:
    # a subprocess: the generator pins socket.gethostname and os.cpu_count for the whole interpreter
    program = textwrap.dedent(f"""
        import importlib.util, os, socket
        spec = importlib.util.spec_from_file_location("gen_reference", {str(SCRIPT)!r})
        import sys
        gen = sys.modules["gen_reference"] = importlib.util.module_from_spec(spec); spec.loader.exec_module(gen)
        gen._pin_machine()
        from connect.api.config import ConfigDef, ConfigType
        d = ConfigDef()
        d.define("client.host", ConfigType.STRING, socket.gethostname() + ":8083", documentation="This host.")
        d.define("threads", ConfigType.INT, os.cpu_count() * 2, documentation="Twice the CPUs.")
        d.define("state.dir", ConfigType.STRING, os.path.join(os.getcwd(), "state"), documentation="Here.")
        d.define("batch", ConfigType.INT, 2, documentation="Fixed.")
        for key in d.config_keys.values():
            print(key.name, "=", gen.key_row(key).default)
    """)
    result = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    machine = "depends on the machine (see the description)"
    assert result.stdout.splitlines() == [f"client.host = {machine}", f"threads = {machine}",
                                          f"state.dir = {machine}", "batch = `2`"]


@pytest.mark.parametrize("page", PAGES)
def test_generated_page_is_well_formed_markdown(page: str) -> None:
    source = (ROOT / page).read_text(encoding="utf-8")
    html = markdown.markdown(source, extensions=EXTENSIONS)

    for table in re.findall(r"<table>(.*?)</table>", html, re.S):
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
        widths = {len(re.findall(r"<t[hd]>", row)) for row in rows}
        assert len(widths) == 1, f"{page}: a row with a different number of cells: {table[:400]}"
    ids = re.findall(r' id="([^"]+)"', html)
    assert len(ids) == len(set(ids)), f"{page}: duplicate anchors {sorted({i for i in ids if ids.count(i) > 1})}"
    visible = re.sub(r"<[^>]+>", "", html)
    assert not re.search(r"\\[\\`*_{}\[\]|#]", visible), f"{page}: an escape shows in the text"
    assert not re.search(r"<(?!!--|/?(?:h\d|p|ul|ol|li|a|code|strong|em|br|table|thead|tbody|tr|th|td|hr)\b)",
                         html), f"{page}: raw HTML from a docstring or documentation"
    for anchor in re.findall(r'href="#([^"]+)"', html):
        assert anchor in ids, f"{page}: link to missing anchor #{anchor}"


def test_every_builtin_plugin_has_a_section() -> None:
    from connect.runtime.plugins import PluginRegistry

    plugins = (ROOT / PAGES[2]).read_text(encoding="utf-8")
    for info in PluginRegistry().plugins():
        if info.full_name.startswith(("plugins.", "spark_sinks.")):
            assert f"- Class: `{info.full_name}`" in plugins, info.full_name
