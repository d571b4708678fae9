"""The install is reproducible: one lock, used by the README, CI and the image, covering pyproject.

A fresh install once failed because upstream released versions that pin each other differently
(the OpenTelemetry SDK and its instrumentation); these tests keep the remedy in place.
"""

from __future__ import annotations

import re
import shlex
import sys
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found]

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
INSTALL = 'pip install -c requirements.lock -e ".[dev]"'
SUPPORTED_PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")


def locked_pins() -> list[tuple[str, Version, Marker | None]]:
    """``(name, version, marker)`` of every pin in the lock."""
    pins: list[tuple[str, Version, Marker | None]] = []
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if not line or line[0] in "# ":
            continue
        requirement = Requirement(line)
        [specifier] = list(requirement.specifier)
        assert specifier.operator == "==", f"not an exact pin: {line}"
        pins.append((canonicalize_name(requirement.name), Version(specifier.version),
                     requirement.marker))
    return pins


def project_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = [Requirement(text) for text in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        found.extend(Requirement(text) for text in extra)
    return found


def environment(python: str) -> dict[str, str]:
    return {"python_version": python, "python_full_version": f"{python}.0",
            "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "os_name": "posix", "extra": ""}


def test_every_project_requirement_is_pinned_within_its_range_for_every_python() -> None:
    pins = locked_pins()
    for python in SUPPORTED_PYTHONS:
        env = environment(python)
        chosen = {name: version for name, version, marker in pins
                  if marker is None or marker.evaluate(env)}
        for requirement in project_requirements():
            if requirement.marker is not None and not requirement.marker.evaluate(env):
                continue
            name = canonicalize_name(requirement.name)
            assert name in chosen, f"{name} (Python {python}) is not in requirements.lock"
            assert requirement.specifier.contains(chosen[name], prereleases=True), (
                f"{name}=={chosen[name]} in requirements.lock is outside pyproject's "
                f"'{requirement.specifier}': run .ci/lock")


def test_a_package_is_pinned_once_per_python() -> None:
    pins = locked_pins()
    for python in SUPPORTED_PYTHONS:
        env = environment(python)
        names = [name for name, _, marker in pins if marker is None or marker.evaluate(env)]
        assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_families_that_pin_each_other_have_upper_bounds() -> None:
    for requirement in project_requirements():
        if requirement.name.startswith("opentelemetry-"):
            assert any(s.operator in ("<", "<=", "~=", "==") for s in requirement.specifier), (
                f"{requirement}: the OpenTelemetry SDK and instrumentation pin "
                "opentelemetry-semantic-conventions exactly; bound the family")


def test_readme_ci_and_image_install_with_the_lock() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert INSTALL in quick_start
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install_lines = [line.strip() for line in ci.splitlines()
                     if "pip install" in line and not line.lstrip().startswith("#")]
    assert install_lines == [INSTALL], install_lines
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    installs = re.findall(r"pip install ([^\\&\n]+)", dockerfile)
    assert installs, "the image installs nothing"
    for arguments in installs:
        words = shlex.split(arguments)
        assert words[:2] == ["-c", "requirements.lock"], arguments
    assert re.search(r"^COPY .*\brequirements\.lock\b", dockerfile, re.M)
    ignore = (ROOT / "deploy" / "Dockerfile.dockerignore").read_text(encoding="utf-8")
    assert "!requirements.lock" in ignore.splitlines()


def test_this_environment_was_installed_from_the_lock() -> None:
    """The tests run on the locked versions (reinstall with the README's command if this fails)."""
    pins = locked_pins()
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    chosen = {name: version for name, version, marker in pins
              if marker is None or marker.evaluate(environment(python))}
    differing = []
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"])
        if name in chosen and Version(dist.version) != chosen[name]:
            differing.append(f"{name} {dist.version} (locked {chosen[name]})")
    assert not differing, f"installed versions differ from requirements.lock: {differing}"
