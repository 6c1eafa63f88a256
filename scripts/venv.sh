# Sourced by quickstart.sh and install.sh (run from the repository root): the project's virtual environment.
# Debian and Ubuntu mark their system Python "externally managed" (PEP 668), so pip refuses to install into it;
# everything the scripts install goes into .venv (HEADRACE_VENV overrides the path) instead.

# The first Python >= 3.11 on PATH (python3 first: the one a user would expect), or a one-line error.
headrace_python() {
  local candidate
  for candidate in python3 python3.11 python3.12 python3.13 python3.14 python3.15; do
    if command -v "$candidate" >/dev/null 2>&1 \
      && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; then
      echo "$candidate"
      return 0
    fi
  done
  echo "error: Headrace needs Python 3.11 or newer, and none of python3, python3.11 ... python3.15 on PATH ($PATH) is; install one (Debian 12 and Ubuntu 24.04 have it as python3)" >&2
  return 1
}

# Creates the virtual environment unless a working one is there, and puts its bin/ first on PATH, so that
# python3, pip and the project's commands (connect-standalone, ruff, pytest, ...) and whatever they start
# resolve in it.
headrace_venv() {
  HEADRACE_VENV=${HEADRACE_VENV:-.venv}
  case "$HEADRACE_VENV" in /*) ;; *) HEADRACE_VENV="$PWD/$HEADRACE_VENV" ;; esac
  export HEADRACE_VENV
  # pip is checked too: a `python3 -m venv` that failed for want of ensurepip leaves a python without pip
  if ! "$HEADRACE_VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    local python version
    python=$(headrace_python) || return 1
    if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
      # Debian and Ubuntu ship venv's ensurepip separately, in python3.X-venv (python3-venv for the default)
      version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
      if ! command -v apt-get >/dev/null 2>&1; then
        echo "error: $python has no venv/ensurepip module to create $HEADRACE_VENV with; install your distribution's venv package for Python $version" >&2
        return 1
      fi
      local sudo=()
      if [ "$(id -u)" != 0 ]; then
        if ! command -v sudo >/dev/null 2>&1; then
          echo "error: $python has no venv/ensurepip module to create $HEADRACE_VENV with; as root: apt-get install python$version-venv" >&2
          return 1
        fi
        sudo=(sudo)
      fi
      echo "Installing python$version-venv with apt-get (needed to create $HEADRACE_VENV)" >&2
      "${sudo[@]}" apt-get update -qq
      "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "python$version-venv" >/dev/null
    fi
    echo "Creating the virtual environment $HEADRACE_VENV with $python" >&2
    "$python" -m venv --clear --upgrade-deps "$HEADRACE_VENV"  # a current pip: Debian's 23.0 builds some sdists the legacy way
  fi
  export VIRTUAL_ENV="$HEADRACE_VENV"
  export PATH="$HEADRACE_VENV/bin:$PATH"
}
