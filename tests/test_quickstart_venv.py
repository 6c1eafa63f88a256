"""The set-up scripts on stock Debian/Ubuntu (issue #38 item 1): their system Python is "externally managed"
(PEP 668) and refuses pip installs, so scripts/quickstart.sh and scripts/install.sh make and use the project's
virtual environment (scripts/venv.sh), installing python3.X-venv with apt-get where it is missing."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tests.support import free_port

REPO = Path(__file__).resolve().parent.parent
# what a clone of HEAD would lack while these are being changed: the set-up scripts of the working tree
SETUP_SCRIPTS = ("scripts/quickstart.sh", "scripts/venv.sh", "scripts/install.sh", "scripts/test.sh")
# a stock Debian user's environment, as in .ci/run: `env -i PATH=/usr/bin:/bin HOME=$(mktemp -d)`
STOCK_PATH = "/usr/bin:/bin"


def _write_executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def _fresh_clone(tmp_path: Path) -> Path:
    clone = tmp_path / "headrace"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    for script in SETUP_SCRIPTS:
        if (REPO / script).exists():
            shutil.copy2(REPO / script, clone / script)
    return clone


@pytest.mark.slow  # pip installs the package and its dependencies from PyPI into an empty venv: about a minute
@pytest.mark.timeout(900)
def test_quickstart_runs_on_a_fresh_clone_with_only_the_system_python(tmp_path: Path) -> None:
    clone = _fresh_clone(tmp_path)
    # only the port changes: the shipped 8083 would collide with a worker of another test or user
    port = free_port()
    worker_config = clone / "configs" / "connect-standalone.properties"
    text = worker_config.read_text()
    assert "listeners=http://127.0.0.1:8083\n" in text
    worker_config.write_text(text.replace("listeners=http://127.0.0.1:8083\n", f"listeners=http://127.0.0.1:{port}\n"))
    home = tmp_path / "home"
    home.mkdir()
    # TMPDIR: the scratch folders the quickstart leaves for the user to look at go under tmp_path, not /tmp
    stock_env = {"PATH": STOCK_PATH, "HOME": str(home), "TMPDIR": str(tmp_path)}

    run = subprocess.run(["bash", "scripts/quickstart.sh"], cwd=clone, env=stock_env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=840)

    output = run.stdout
    assert "externally-managed-environment" not in output
    assert run.returncode == 0, output
    assert (clone / ".venv" / "bin" / "connect-standalone").exists(), output
    workdir = re.search(r"Quickstart files are in (\S+) ", output)
    assert workdir, output
    sink = Path(workdir[1]) / "test.sink.txt"
    assert sink.read_text().splitlines() == [f"hello headrace line {i}" for i in range(1, 6)]
    assert f"http://127.0.0.1:{port}/connectors?expand=status" in output and '"local-file-sink"' in output, output
    assert f"cd {clone} && . .venv/bin/activate" in output
    # the quickstart stopped its worker before it returned: nothing listens on the REST port any more
    # (SO_REUSEADDR: the connections the quickstart made may linger in TIME_WAIT, a listener may not)
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))

    # Run again, with a source connector the worker refuses: the venv is reused, and the quickstart fails
    # saying how many lines were copied instead of printing an empty sink file and exiting 0
    source_config = clone / "configs" / "connect-file-source.properties"
    source_config.write_text(source_config.read_text().replace("connector.class=FileStreamSource",
                                                               "connector.class=NoSuchConnector"))
    again = subprocess.run(["bash", "scripts/quickstart.sh"], cwd=clone, env=stock_env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)

    assert again.returncode == 1, again.stdout
    assert "Creating the virtual environment" not in again.stdout
    assert "error: the worker copied 0 of the 5 lines of test.txt into test.sink.txt" in again.stdout


def test_without_python_3_11_the_setup_stops_with_one_clear_line(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "id"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or tool)
    # an interpreter too old for the project: the version check fails, as it does on Python 3.10
    _write_executable(bin_dir / "python3", "#!/bin/bash\nexit 1\n")

    run = subprocess.run([str(bin_dir / "bash"), "scripts/quickstart.sh"], cwd=REPO,
                         env={"PATH": str(bin_dir), "HOME": str(tmp_path), "HEADRACE_VENV": str(tmp_path / "venv")},
                         capture_output=True, text=True, timeout=60)

    assert run.returncode != 0
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("error: Headrace needs Python 3.11 or newer"), run.stderr
    assert not (tmp_path / "venv").exists()


@pytest.mark.slow  # makes a real virtual environment with pip in it: about 10 CPU-s
def test_a_python_without_venv_gets_it_from_apt_and_the_venv_is_then_reused(tmp_path: Path) -> None:
    python = shutil.which("python3", path=STOCK_PATH)
    assert python, "the test needs a python3 in /usr/bin"
    version = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    bin_dir, no_venv_module, installed = tmp_path / "bin", tmp_path / "no-ensurepip", tmp_path / "installed"
    bin_dir.mkdir()
    no_venv_module.mkdir()
    # Debian's python3 without python3.X-venv has no ensurepip module: shadowed here until "apt-get" ran
    (no_venv_module / "ensurepip.py").write_text("raise ImportError('No module named ensurepip')\n")
    _write_executable(bin_dir / "python3",
                      f"#!/bin/sh\n[ -e {installed} ] || export PYTHONPATH={no_venv_module}\nexec {python} \"$@\"\n")
    apt_calls = tmp_path / "apt-get.calls"
    _write_executable(bin_dir / "apt-get", f"#!/bin/sh\necho \"$*\" >> {apt_calls}\ntouch {installed}\n")
    _write_executable(bin_dir / "sudo", "#!/bin/sh\nexec \"$@\"\n")  # where the suite does not run as root
    venv = tmp_path / "venv"
    env = {"PATH": f"{bin_dir}:{STOCK_PATH}", "HOME": str(tmp_path), "HEADRACE_VENV": str(venv)}
    use_venv = ". scripts/venv.sh && headrace_venv && command -v python && command -v pip"

    first = subprocess.run(["bash", "-c", use_venv], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)

    assert first.returncode == 0, first.stderr
    assert apt_calls.read_text().splitlines() == ["update -qq", f"install -y -qq python{version}-venv"]
    assert first.stdout.splitlines() == [f"{venv}/bin/python", f"{venv}/bin/pip"]
    assert f"Creating the virtual environment {venv}" in first.stderr
    created = (venv / "pyvenv.cfg").stat().st_mtime_ns

    os.remove(apt_calls)
    again = subprocess.run(["bash", "-c", use_venv], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)

    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout
    assert again.stderr == ""
    assert not apt_calls.exists()
    assert (venv / "pyvenv.cfg").stat().st_mtime_ns == created
