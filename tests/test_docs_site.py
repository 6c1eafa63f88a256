"""The documentation site builds with ``mkdocs build --strict``, and strict mode refuses broken links.

The second test builds a two-page site with the project's own mkdocs.yml settings (its nav aside), so a
change to the validation settings that lets a broken link or anchor through fails here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def _mkdocs_build(config: Path, site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # the snippets extension reads configs/ and examples/ relative to the current folder
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_site_builds_strict(tmp_path: Path) -> None:
    result = _mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site", ROOT)

    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr[-6000:]}"
    assert (tmp_path / "site" / "reference" / "configuration" / "worker" / "index.html").is_file()


def _site_with(tmp_path: Path, link: str) -> Path:
    settings = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    settings.pop("nav", None)
    settings["docs_dir"] = str(tmp_path / "docs")
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "index.md").write_text(f"# Home\n\nSee [the other page]({link}).\n")
    (docs / "other.md").write_text("# Other\n\n## A section\n\nText.\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(yaml.safe_dump(settings))
    return config


@pytest.mark.parametrize(("link", "refused"), [
    ("other.md#a-section", None),
    ("missing.md", "missing.md"),
    ("other.md#no-such-section", "#no-such-section"),
])
def test_strict_build_refuses_broken_links(tmp_path: Path, link: str, refused: str | None) -> None:
    result = _mkdocs_build(_site_with(tmp_path, link), tmp_path / "site", ROOT)

    if refused is None:
        assert result.returncode == 0, result.stderr[-3000:]
    else:
        assert result.returncode != 0, f"a broken link ({link}) passed mkdocs build --strict"
        assert refused in result.stderr
