"""The plugin index: a worker that starts again imports only the plugins it uses, and still lists them all.

Each case runs the registry in a fresh interpreter (as a worker starts), with its own cache directory
(``XDG_CACHE_HOME``) and, where it needs one, a distribution of its own on ``PYTHONPATH`` whose
``headrace.plugins`` entry point names a module the test writes and rewrites.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# prints what a worker would show: every plugin with its kind and version
_PROBE = textwrap.dedent("""
    import json, sys
    from connect.runtime.plugins import PluginRegistry
    registry = PluginRegistry()
    file_source = registry.resolve("FileStreamSource", "source", "connector.class").__qualname__
    listing = [[p.listed_name, p.type, p.version] for p in registry.plugins()]
    print(json.dumps({"file_source": file_source, "listing": listing}))
""")


def _probe(cache: Path, extra_path: Path | None = None, cwd: Path | None = None) -> tuple[dict, str]:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(extra_path or ""), str(REPO)) if p)
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120,
                          cwd=cwd or cache)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def test_a_second_start_imports_only_the_plugins_it_uses_and_lists_the_same(tmp_path):
    first, _ = _probe(tmp_path)
    again, _ = _probe(tmp_path)
    assert again["file_source"] == "FileStreamSourceConnector"
    # listing every plugin with its version imports them all, so the imports are read before the listing
    assert again["listing"] == first["listing"]
    assert any(p[0].startswith("spark_sinks.") for p in first["listing"])
    assert any(p[0].startswith("plugins.flume.") for p in first["listing"])
    lazy = textwrap.dedent("""
        import json, sys
        from connect.runtime.plugins import PluginRegistry
        registry = PluginRegistry()
        registry.resolve("FileStreamSource", "source", "connector.class")
        registry.resolve("JsonConverter", "converter", "value.converter")
        print(json.dumps(sorted(m for m in ("spark_sinks", "plugins.flume", "plugins.converters.avro", "fastavro",
                                            "plugins.redis", "plugins.ingest") if m in sys.modules)))
    """)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", lazy], env=env, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


def _fake_distribution(site: Path, module_source: str) -> Path:
    info = site / "fake_headrace_plugin-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-headrace-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[headrace.plugins]\nfake = fake_plugin_mod\n")
    module = site / "fake_plugin_mod.py"
    module.write_text(module_source)
    return module


_ONE = textwrap.dedent("""
    from connect.api import ConfigDef, Transformation
    class FakeOne(Transformation):
        def configure(self, configs): pass
        def apply(self, record): return record
        def config(self): return ConfigDef()
        def version(self): return "1.0"
""")
_TWO = _ONE + textwrap.dedent("""
    class FakeTwo(FakeOne):
        def version(self): return "2.0"
""")


def _fake_names(result: dict) -> list[list[str]]:
    return [p for p in result["listing"] if p[0].startswith("fake_plugin_mod.")]


def test_a_changed_plugin_module_is_scanned_again(tmp_path):
    site, cache = tmp_path / "site", tmp_path / "cache"
    cache.mkdir()
    module = _fake_distribution(site, _ONE)
    first, _ = _probe(cache, site)
    assert _fake_names(first) == [["fake_plugin_mod.FakeOne", "transformation", "1.0"]]
    module.write_text(_TWO)
    stat = module.stat()
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))  # a new mtime, however coarse
    second, _ = _probe(cache, site)
    assert _fake_names(second) == [["fake_plugin_mod.FakeOne", "transformation", "1.0"],
                                   ["fake_plugin_mod.FakeTwo", "transformation", "2.0"]]


def test_an_uninstalled_plugin_is_no_longer_listed(tmp_path):
    site, cache = tmp_path / "site", tmp_path / "cache"
    cache.mkdir()
    _fake_distribution(site, _ONE)
    first, _ = _probe(cache, site)
    assert _fake_names(first)
    for path in sorted((site / "fake_headrace_plugin-1.0.dist-info").iterdir()):
        path.unlink()
    (site / "fake_headrace_plugin-1.0.dist-info").rmdir()
    second, _ = _probe(cache, site)
    assert _fake_names(second) == []


def test_a_plugin_that_cannot_load_says_so_at_every_start(tmp_path):
    site, cache = tmp_path / "site", tmp_path / "cache"
    cache.mkdir()
    _fake_distribution(site, "raise RuntimeError('the fake plugin is broken')\n")
    for _ in range(2):
        result, stderr = _probe(cache, site)
        assert _fake_names(result) == []
        assert "Cannot load plugin entry point fake=fake_plugin_mod: the fake plugin is broken" in stderr


def test_an_unwritable_cache_directory_changes_nothing(tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    first, stderr = _probe(blocker, cwd=tmp_path)
    assert first["file_source"] == "FileStreamSourceConnector"
    assert "Traceback" not in stderr


def test_an_index_other_users_could_write_is_not_believed(tmp_path):
    site, cache = tmp_path / "site", tmp_path / "cache"
    cache.mkdir()
    module = _fake_distribution(site, _ONE)
    _probe(cache, site)
    (index,) = (cache / "headrace").glob("plugin-index-*.json")
    # an index planted with a class the module does not define: believed, it would be listed
    index.write_bytes(index.read_bytes().replace(b'"FakeOne"', b'"Planted"'))
    index.chmod(0o666)
    planted, stderr = _probe(cache, site)
    assert _fake_names(planted) == [["fake_plugin_mod.FakeOne", "transformation", "1.0"]]
    assert "another user could have written it" in stderr
    assert module.exists()
