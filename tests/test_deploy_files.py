"""The deployment files under ``deploy/`` and the settings reference stay true to the gateway.

The example settings load with :func:`oam_gateway.config.settings.load_settings` (secrets from the
environment, as deployed), the compose file and Kubernetes manifests parse and agree with the
image and the settings (probes, non-root, secret paths), ``docs/gateway-settings.md`` is the
generator's current output, and the Dockerfile runs the gateway as a non-root user. The image
itself is not built here (no Docker daemon): `deploy/README.md` gives the build command.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from oam_gateway.config.settings import ENV_PREFIX, GatewaySettings, load_settings
from pydantic import ValidationError

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
ONE_TENANT = DEPLOY / "gateway.example.toml"
MULTI_TENANT = DEPLOY / "gateway.multi-tenant.example.toml"
KUBERNETES_SETTINGS = KUBERNETES / "gateway.toml"
SETTINGS_PATH_IN_IMAGE = "/etc/oam-gateway/gateway.toml"
RUNTIME_URL = "postgresql://oam_runtime:s3cret-pw@db:5432/oam"


@pytest.fixture(autouse=True)
def _no_gateway_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the variables a test sets reach the settings."""
    import os

    for name in list(os.environ):
        if name.upper().startswith(ENV_PREFIX):
            monkeypatch.delenv(name)


def _yaml_documents(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc is not None]


def _yaml(path: Path) -> dict[str, Any]:
    [document] = _yaml_documents(path)
    return document


# --- the example settings ------------------------------------------------------------------

@pytest.mark.parametrize("path", [ONE_TENANT, MULTI_TENANT, KUBERNETES_SETTINGS],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_settings_files_hold_no_secret(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"(?m)^\s*(database_url|app_token)\s*=", text)
    assert "password" not in re.sub(r"(?m)#.*$", "", text).lower()


def test_one_tenant_example_loads_with_the_url_from_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError, match="database_url is required"):
        load_settings(ONE_TENANT)  # the secret is not in the file
    monkeypatch.setenv("OAM_GATEWAY_DATABASE_URL", RUNTIME_URL)
    settings = load_settings(ONE_TENANT)
    [(name, tenant)] = settings.tenant_settings().items()
    assert name == "demo"
    assert tenant.database_url is not None
    assert tenant.database_url.get_secret_value() == RUNTIME_URL
    assert "s3cret-pw" not in repr(settings)
    assert (tenant.memory_store_id, tenant.schema_owner) == ("demo", "public")
    assert (tenant.end_user_mode, tenant.identity_provider) == ("vouched", "demo")
    assert tenant.app_token_file == Path("/var/lib/oam-gateway/app_token")
    assert settings.jwks_file == Path("/var/lib/oam-gateway/jwks.json")
    assert settings.require_scopes
    assert settings.limits.rate_limit_storage_uri == "memory://"


def test_one_tenant_example_takes_overrides_from_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OAM_GATEWAY_DATABASE_URL", RUNTIME_URL)
    monkeypatch.setenv("OAM_GATEWAY_LIMITS__RATE_LIMIT_STORAGE_URI", "redis://redis:6379/0")
    settings = load_settings(ONE_TENANT)
    assert settings.limits.rate_limit_storage_uri == "redis://redis:6379/0"
    assert settings.limits.rate_limit == "1200/minute"  # the file's other [limits] keys stay


def test_multi_tenant_example_loads_with_each_url_from_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OAM_GATEWAY_TENANTS__ACME__DATABASE_URL", RUNTIME_URL)
    with pytest.raises(ValidationError, match="database_url"):
        load_settings(MULTI_TENANT)  # globex has no URL yet
    monkeypatch.setenv("OAM_GATEWAY_TENANTS__GLOBEX__DATABASE_URL",
                       "postgresql://globex_rt:other-pw@globex-db:5432/oam")
    settings = load_settings(MULTI_TENANT)
    tenants = settings.tenant_settings()
    assert sorted(tenants) == ["acme", "globex"]
    assert settings.tenant_claim == "tenant"
    acme_url = tenants["acme"].database_url
    assert acme_url is not None and acme_url.get_secret_value() == RUNTIME_URL
    assert tenants["acme"].end_user_mode == "vouched"
    assert tenants["acme"].group_roles == {"support-leads": ("team_lead",)}
    assert tenants["globex"].end_user_mode == "token"
    assert tenants["acme"].app_token_file != tenants["globex"].app_token_file
    assert settings.jwks_url is not None and settings.jwks_url.startswith("https://")


def test_kubernetes_settings_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OAM_GATEWAY_DATABASE_URL", RUNTIME_URL)
    settings = load_settings(KUBERNETES_SETTINGS)
    assert settings.jwks_url == "https://login.example.com/.well-known/jwks.json"
    [tenant] = settings.tenant_settings().values()
    assert tenant.app_token_file == Path("/var/run/secrets/oam-gateway/app-token")


# --- compose -------------------------------------------------------------------------------

def test_compose_file() -> None:
    compose = _yaml(DEPLOY / "compose.yaml")
    services = compose["services"]
    assert services["db"]["image"] == "pgvector/pgvector:pg18"
    assert services["db"]["environment"]["POSTGRES_PASSWORD_FILE"].startswith("/run/secrets/")
    gateway, provision = services["gateway"], services["provision"]
    assert gateway["build"]["dockerfile"] == "deploy/Dockerfile"
    assert (DEPLOY / gateway["build"]["context"] / gateway["build"]["dockerfile"]).is_file()
    assert gateway["depends_on"]["provision"]["condition"] == "service_completed_successfully"
    assert gateway["depends_on"]["db"]["condition"] == "service_healthy"
    assert "/readyz" in " ".join(gateway["healthcheck"]["test"])
    assert "healthcheck" in services["db"]
    assert f"./gateway.example.toml:{SETTINGS_PATH_IN_IMAGE}:ro" in gateway["volumes"]
    assert gateway["read_only"] is True and provision["read_only"] is True
    assert "database_url" in gateway["secrets"]
    assert "/run/secrets/database_url" in " ".join(gateway["entrypoint"])
    assert "provision.sh" in " ".join(provision["entrypoint"])
    assert services["redis"]["profiles"] == ["redis"]
    for name, secret in compose["secrets"].items():
        assert set(secret) == {"file"}, name
        assert secret["file"].startswith("./compose/secrets/")
    for service in (gateway, provision):
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("./"):
                assert (DEPLOY / source).is_file(), source


def test_compose_secrets_are_not_committed() -> None:
    ignored = (DEPLOY / ".gitignore").read_text(encoding="utf-8").split()
    assert "compose/secrets/" in ignored
    assert not (DEPLOY / "compose" / "secrets").exists() or not subprocess.run(
        ["git", "ls-files", "deploy/compose/secrets"], cwd=ROOT, capture_output=True,
        text=True, check=True).stdout


# --- Kubernetes ----------------------------------------------------------------------------

def _deployment() -> dict[str, Any]:
    return _yaml(KUBERNETES / "deployment.yaml")


def test_deployment_probes_and_replicas() -> None:
    deployment = _deployment()
    assert deployment["spec"]["replicas"] == 2
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert [p["containerPort"] for p in container["ports"]] == [8080]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["port"] == "http"
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    assert "memory" in container["resources"]["limits"]


def test_deployment_runs_as_non_root_with_a_read_only_root() -> None:
    pod = _deployment()["spec"]["template"]["spec"]
    [container] = pod["containers"]
    for context in (pod["securityContext"], container["securityContext"]):
        assert context["runAsNonRoot"] is True
        assert context["runAsUser"] not in (0, None)
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]  # HOME and TMPDIR are writable


def test_deployment_secret_references_match_the_settings(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pod = _deployment()["spec"]["template"]["spec"]
    [container] = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert "secretKeyRef" in env["OAM_GATEWAY_DATABASE_URL"]["valueFrom"]
    assert all("value" not in e for e in container["env"])  # no literal values, no secrets
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    secret = volumes["secrets"]["secret"]
    assert secret["secretName"] == env["OAM_GATEWAY_DATABASE_URL"]["valueFrom"][
        "secretKeyRef"]["name"]
    [item] = secret["items"]
    monkeypatch.setenv("OAM_GATEWAY_DATABASE_URL", RUNTIME_URL)
    [tenant] = load_settings(KUBERNETES_SETTINGS).tenant_settings().values()
    assert Path(mounts["secrets"]["mountPath"]) / item["path"] == tenant.app_token_file
    assert Path(mounts["config"]["mountPath"]) / "gateway.toml" == Path(SETTINGS_PATH_IN_IMAGE)


def test_kustomization_ties_the_manifests_together() -> None:
    kustomization = _yaml(KUBERNETES / "kustomization.yaml")
    for resource in kustomization["resources"]:
        assert (KUBERNETES / resource).is_file(), resource
    deployment = _deployment()
    pod = deployment["spec"]["template"]
    labels = pod["metadata"]["labels"]
    [generator] = kustomization["configMapGenerator"]
    assert generator["files"] == ["gateway.toml"]
    config_volume = {v["name"]: v for v in pod["spec"]["volumes"]}["config"]
    assert config_volume["configMap"]["name"] == generator["name"]
    [image] = kustomization["images"]
    assert image["name"] == pod["spec"]["containers"][0]["image"]
    kinds = {}
    for resource in kustomization["resources"]:
        for document in _yaml_documents(KUBERNETES / resource):
            kinds[document["kind"]] = document
    assert {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget",
            "ServiceAccount"} <= set(kinds)
    assert kinds["Service"]["spec"]["selector"].items() <= labels.items()
    assert kinds["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"].items() <= (
        labels.items())
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    hpa = kinds["HorizontalPodAutoscaler"]["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": deployment["metadata"]["name"]}
    assert hpa["minReplicas"] >= 2
    [metric] = hpa["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert pod["spec"]["serviceAccountName"] == kinds["ServiceAccount"]["metadata"]["name"]


def test_the_kustomization_names_files_that_exist_and_the_settings_configmap() -> None:
    """What ``kubectl kustomize`` reads: every resource file exists and parses, the ConfigMap
    is generated from the committed gateway.toml the Deployment mounts, the image is set."""
    kustomization = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text("utf-8"))
    kinds = set()
    for resource in kustomization["resources"]:
        documents = [d for d in yaml.safe_load_all((KUBERNETES / resource).read_text("utf-8"))
                     if d]
        assert documents, resource
        kinds |= {d["kind"] for d in documents}
    assert {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget",
            "ServiceAccount"} <= kinds
    [generator] = kustomization["configMapGenerator"]
    assert generator["files"] == [KUBERNETES_SETTINGS.name]
    assert KUBERNETES_SETTINGS.is_file()
    deployment = yaml.safe_load((KUBERNETES / "deployment.yaml").read_text("utf-8"))
    pod = deployment["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["config"]["configMap"]["name"] == generator["name"]
    [image] = kustomization["images"]
    assert pod["containers"][0]["image"].split(":")[0] == image["name"]


# --- the settings reference ----------------------------------------------------------------

def _generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "generate_settings_reference", ROOT / "docs" / "generate_settings_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_settings_reference_is_current() -> None:
    committed = (ROOT / "docs" / "gateway-settings.md").read_text(encoding="utf-8")
    assert committed == _generator().render(), (
        "docs/gateway-settings.md is stale: run python docs/generate_settings_reference.py")


def test_settings_reference_lists_every_field() -> None:
    from oam_gateway.config.limits import LimitSettings
    from oam_gateway.config.tenant_settings import TenantSettings
    from oam_gateway.observability.telemetry import TelemetrySettings

    text = _generator().render()
    for name in GatewaySettings.model_fields:
        assert f"`{ENV_PREFIX}{name.upper()}" in text, name
    for prefix, model in (("TENANTS__<NAME>__", TenantSettings), ("LIMITS__", LimitSettings),
                          ("TELEMETRY__", TelemetrySettings)):
        for name in model.model_fields:
            assert f"`{ENV_PREFIX}{prefix}{name.upper()}`" in text, name
    assert "**Secret.**" in text


# --- the image -----------------------------------------------------------------------------

def _instructions() -> list[tuple[str, str]]:
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), " ".join(rest.split())))
    return found


def test_dockerfile_runs_as_a_fixed_non_root_user() -> None:
    instructions = _instructions()
    users = [rest for keyword, rest in instructions if keyword == "USER"]
    assert users, "the image sets no USER: it would run as root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0") and user.isdigit() and int(user) >= 10000
    assert instructions.index(("USER", users[-1])) > max(
        i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")


def test_dockerfile_shape() -> None:
    instructions = _instructions()
    froms = [rest for keyword, rest in instructions if keyword == "FROM"]
    assert len(froms) >= 2  # multi-stage
    assert ("ARG", "PYTHON_IMAGE=python:3.12-slim") in instructions
    assert ("EXPOSE", "8080") in instructions
    [healthcheck] = [rest for keyword, rest in instructions if keyword == "HEALTHCHECK"]
    assert "/healthz" in healthcheck
    [entrypoint] = [rest for keyword, rest in instructions if keyword == "ENTRYPOINT"]
    assert entrypoint.replace('"', "").replace(",", "") == (
        f"[oam-gateway serve --host 0.0.0.0 --port 8080 --settings {SETTINGS_PATH_IN_IMAGE}]")
    text = " ".join(rest for _, rest in instructions)
    assert "[dev]" not in text  # no dev extras
    for keyword, rest in instructions:  # no secret baked in
        if keyword in ("ENV", "ARG", "LABEL"):
            assert not re.search(r"(?i)(password|secret|token|database_url)", rest), rest
    for keyword, rest in instructions:  # every source copied from the context exists
        if keyword == "COPY" and "--from" not in rest:
            for source in rest.split()[:-1]:
                assert (ROOT / source).exists(), source


def test_dockerignore_sends_only_the_install_inputs() -> None:
    lines = [line.strip() for line in
             (DEPLOY / "Dockerfile.dockerignore").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    assert lines[0] == "*"
    included = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    copied = {source.rstrip("/") for keyword, rest in _instructions()
              if keyword == "COPY" and "--from" not in rest for source in rest.split()[:-1]}
    assert copied <= included
