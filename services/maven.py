"""Fetch Maven artifacts, with their runtime dependencies, into a local jar folder.

Each service that runs on the JVM names a handful of coordinates; this module
turns them into a flat folder of jars that ``java -cp '<dir>/*'`` can use.
Maven itself does the resolving (its ``~/.m2`` cache makes a second fetch
fast); we only write a throw-away pom and call the dependency plugin.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from xml.sax.saxutils import escape

__all__ = ["MavenError", "cache_root", "fetch_artifacts", "lib_dir", "is_fetched"]

log = logging.getLogger(__name__)

DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
MARKER = ".fetched"


class MavenError(RuntimeError):
    """Maven could not resolve or copy the requested artifacts."""


def cache_root() -> Path:
    """The git-ignored folder that holds fetched jars (``<repo>/.cache/services``).

    ``HEADRACE_SERVICES_CACHE`` moves it, e.g. for an installed package whose
    source tree is read-only.
    """
    env = os.environ.get("HEADRACE_SERVICES_CACHE")
    if env:
        return Path(env).expanduser().resolve()
    return Path(__file__).resolve().parent.parent / ".cache" / "services"


def lib_dir(name: str) -> Path:
    return cache_root() / f"{name}-lib"


def _marker_text(coordinates: Sequence[str], exclusions: Sequence[str]) -> str:
    lines = [f"artifact {c}" for c in coordinates] + [f"exclude {e}" for e in exclusions]
    return "\n".join(lines) + "\n"


def is_fetched(name: str, coordinates: Sequence[str], exclusions: Sequence[str] = ()) -> bool:
    """True when the jar folder was completely fetched for exactly these coordinates."""
    marker = lib_dir(name) / MARKER
    try:
        return marker.read_text() == _marker_text(coordinates, exclusions)
    except OSError:
        return False


def _split(coord: str) -> tuple[str, str, str | None]:
    parts = coord.split(":")
    if len(parts) == 2:
        return parts[0], parts[1], None
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    raise ValueError(f"expected group:artifact[:version], got {coord!r}")


def _pom(coordinates: Sequence[str], exclusions: Sequence[str]) -> str:
    excl_xml = ""
    if exclusions:
        items = []
        for e in exclusions:
            g, a, _ = _split(e if e.count(":") else e + ":*")
            items.append(
                f"<exclusion><groupId>{escape(g)}</groupId><artifactId>{escape(a)}</artifactId></exclusion>"
            )
        excl_xml = "<exclusions>" + "".join(items) + "</exclusions>"
    deps = []
    for c in coordinates:
        g, a, v = _split(c)
        if v is None:
            raise ValueError(f"artifact {c!r} needs a version")
        deps.append(
            f"<dependency><groupId>{escape(g)}</groupId><artifactId>{escape(a)}</artifactId>"
            f"<version>{escape(v)}</version>{excl_xml}</dependency>"
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>headrace.services</groupId><artifactId>fetch</artifactId><version>0</version>\n"
        "  <packaging>pom</packaging>\n"
        "  <dependencies>\n    " + "\n    ".join(deps) + "\n  </dependencies>\n"
        "</project>\n"
    )


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    # Several pytest sessions or CI steps may fetch at once; one Maven run
    # per folder is enough, the others wait and then find the marker.
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def fetch_artifacts(
    name: str,
    coordinates: Sequence[str],
    exclusions: Sequence[str] = (),
    *,
    timeout: float = 1800.0,
) -> Path:
    """Make ``<cache>/<name>-lib`` hold the jars of ``coordinates`` and their runtime dependencies.

    ``coordinates`` are ``group:artifact:version``; ``exclusions`` are
    ``group:artifact`` (``*`` allowed) left out of every dependency tree.
    Returns the folder. Does nothing when a previous fetch of the same
    coordinates completed.
    """
    target = lib_dir(name)
    if is_fetched(name, coordinates, exclusions):
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MavenError("Maven ('mvn') is not on PATH; install it (apt-get install -y maven)")
    with _locked(cache_root() / f".{name}.lock"):
        if is_fetched(name, coordinates, exclusions):
            return target
        started = time.monotonic()
        log.info("fetching %s jars with Maven: %s", name, ", ".join(coordinates))
        with tempfile.TemporaryDirectory(prefix=f"headrace-mvn-{name}-") as tmp:
            pom = Path(tmp) / "pom.xml"
            pom.write_text(_pom(coordinates, exclusions))
            # Copy into a fresh folder and swap it in at the end, so that an
            # interrupted fetch never leaves a half-filled lib folder that
            # looks usable.
            staging = Path(tmp) / "lib"
            cmd = [
                mvn,
                "-B",
                "-q",
                "-f",
                str(pom),
                f"{DEPENDENCY_PLUGIN}:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={staging}",
            ]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
            except subprocess.TimeoutExpired as exc:
                raise MavenError(f"Maven did not finish fetching {name} jars within {timeout:.0f}s") from exc
            if proc.returncode != 0:
                out = (proc.stdout + proc.stderr).strip().splitlines()
                tail = "\n".join(out[-30:])
                raise MavenError(f"Maven failed to fetch {name} jars (exit {proc.returncode}):\n{tail}")
            jars = list(staging.glob("*.jar"))
            if not jars:
                raise MavenError(f"Maven fetched no jars for {name}")
            if target.exists():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(staging), str(target))
        (target / MARKER).write_text(_marker_text(coordinates, exclusions))
        log.info("fetched %d %s jars in %.1fs", len(jars), name, time.monotonic() - started)
    return target
