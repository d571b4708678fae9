"""The gateway's settings: environment loading, secrets kept out of reprs, consistency rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from oam_gateway.config.settings import ASYMMETRIC_ALGORITHMS, GatewaySettings, load_settings
from pydantic import SecretStr, ValidationError

DB_SECRET = "postgresql://runtime:s3cret-db-password@db.internal/oam"
APP_SECRET = "app-token-do-not-log-0123456789"


def minimal(**overrides: object) -> GatewaySettings:
    values: dict[str, object] = {
        "database_url": SecretStr(DB_SECRET), "memory_store_id": "s1", "schema_owner": "owner",
        "issuer": "https://idp.test", "audience": "oam", "jwks_file": Path("jwks.json")}
    values.update(overrides)
    return GatewaySettings(**values)  # type: ignore[arg-type]


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    for name, value in {"DATABASE_URL": DB_SECRET, "MEMORY_STORE_ID": "s1",
                        "SCHEMA_OWNER": "owner", "ISSUER": "https://idp.test",
                        "AUDIENCE": "oam", "JWKS_FILE": str(tmp_path / "jwks.json"),
                        "APP_TOKEN": APP_SECRET, "ALGORITHMS": '["ES256"]',
                        "GROUPS_CLAIM": "roles"}.items():
        monkeypatch.setenv(f"OAM_GATEWAY_{name}", value)
    settings = GatewaySettings()  # type: ignore[call-arg]
    assert settings.database_url is not None
    assert settings.database_url.get_secret_value() == DB_SECRET
    assert settings.application_token() == APP_SECRET
    assert settings.effective_algorithms == ("ES256",)
    assert settings.groups_claim == "roles"
    assert settings.user_claim == "sub"  # the default where the environment says nothing


def test_secrets_never_appear_in_repr_or_str(tmp_path: Path) -> None:
    settings = minimal(app_token=SecretStr(APP_SECRET))
    for text in (repr(settings), str(settings), str(settings.model_dump())):
        assert APP_SECRET not in text
        assert "s3cret-db-password" not in text
    assert settings.application_token() == APP_SECRET  # positive control: it is held


def test_the_application_token_can_come_from_a_file(tmp_path: Path) -> None:
    token_file = tmp_path / "app-token"
    token_file.write_text(APP_SECRET + "\n", encoding="utf-8")
    settings = minimal(app_token_file=token_file)
    assert settings.application_token() == APP_SECRET
    assert APP_SECRET not in repr(settings)
    token_file.write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty"):
        settings.application_token()


def test_the_application_token_is_given_one_way_only(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="not both"):
        minimal(app_token=SecretStr(APP_SECRET), app_token_file=tmp_path / "f")


def test_hs256_needs_to_be_enabled() -> None:
    assert minimal().effective_algorithms == ASYMMETRIC_ALGORITHMS
    assert "HS256" not in minimal().effective_algorithms
    with pytest.raises(ValidationError, match="allow_hs256"):
        minimal(algorithms=("RS256", "HS256"))
    assert minimal(algorithms=("RS256", "HS256"), allow_hs256=True).effective_algorithms == (
        "RS256", "HS256")
    assert minimal(allow_hs256=True).effective_algorithms[-1] == "HS256"


@pytest.mark.parametrize("algorithms", [("none",), ("HS512",), ("PS256",), ()])
def test_unknown_algorithms_and_none_are_refused(algorithms: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError):
        minimal(algorithms=algorithms)


def test_keys_must_be_named() -> None:
    with pytest.raises(ValidationError, match="jwks_file"):
        minimal(jwks_file=None)
    assert minimal(jwks_file=None, jwks_url="https://idp.test/jwks").jwks_url
    with pytest.raises(ValidationError, match="one of them"):
        minimal(jwks_url="https://idp.test/jwks")  # a file and a URL: ambiguous


def test_unknown_settings_are_refused() -> None:
    with pytest.raises(ValidationError):
        minimal(isser="https://typo.test")


def write_toml(path: Path, jwks: Path) -> Path:
    path.write_text(
        f'database_url = "{DB_SECRET}"\nmemory_store_id = "from_file"\nschema_owner = "owner"\n'
        f'issuer = "https://idp.test"\naudience = "oam"\njwks_file = "{jwks}"\n'
        'algorithms = ["ES256", "RS256"]\n', encoding="utf-8")
    return path


def test_settings_come_from_a_toml_file_with_environment_overrides(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = write_toml(tmp_path / "gateway.toml", tmp_path / "jwks.json")
    settings = load_settings(toml)
    assert type(settings) is GatewaySettings
    assert settings.memory_store_id == "from_file"
    assert settings.algorithms == ("ES256", "RS256")
    assert settings.database_url is not None
    assert settings.database_url.get_secret_value() == DB_SECRET
    assert "s3cret-db-password" not in repr(settings)
    monkeypatch.setenv("OAM_GATEWAY_MEMORY_STORE_ID", "from_env")
    assert load_settings(toml).memory_store_id == "from_env"
    assert load_settings(toml).audience == "oam"  # the file's value where the env is silent


def test_a_missing_or_wrong_settings_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        load_settings(tmp_path / "absent.toml")
    bad = write_toml(tmp_path / "bad.toml", tmp_path / "jwks.json")
    bad.write_text(bad.read_text() + 'isser = "typo"\n', encoding="utf-8")
    with pytest.raises(ValidationError):
        load_settings(bad)
