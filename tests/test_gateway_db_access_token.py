"""The database access token provider against a real local OAuth 2.0 token endpoint.

The endpoint (:mod:`fake_identity_provider`) is an honest fake of OCI IAM / Entra ID's token
endpoint: a real HTTP server on loopback implementing the client-credentials grant. Nothing in
the provider is mocked: it talks HTTP to this server through Authlib's client.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_identity_provider import (
    CLIENT_ID,
    CLIENT_SECRET,
    SCOPE,
    FakeIdentityProvider,
    basic_credentials,
)
from oam_gateway.config.oracle_settings import DatabaseAccessTokenSettings
from oam_gateway.tenancy.db_access_token import (
    ClientCredentialsTokenProvider,
    DatabaseAccessTokenError,
    DatabaseAccessTokenRejected,
    DatabaseAccessTokenUnavailable,
)
from oracleagentmemory.errors import DatabaseUnavailableError
from pydantic import SecretStr, ValidationError


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def idp() -> Iterator[FakeIdentityProvider]:
    with FakeIdentityProvider() as provider:
        yield provider


def _settings(idp: FakeIdentityProvider, **overrides: Any) -> DatabaseAccessTokenSettings:
    values: dict[str, Any] = {"provider": "entra_id", "token_url": idp.token_url,
                              "client_id": CLIENT_ID, "client_secret": SecretStr(CLIENT_SECRET),
                              "scope": SCOPE, "refresh_margin_seconds": 60,
                              "timeout_seconds": 5}
    values.update(overrides)
    return DatabaseAccessTokenSettings(**values)


def test_a_token_is_fetched_by_client_credentials_and_cached(idp: FakeIdentityProvider) -> None:
    clock = Clock()
    provider = ClientCredentialsTokenProvider(_settings(idp), clock=clock)
    first = provider.token()
    assert first == idp.issued[0]
    [request] = idp.requests
    assert request["form"] == {"grant_type": "client_credentials", "scope": SCOPE}
    assert request["authorization"].startswith("Basic ")  # the secret is not in the body
    clock.now += 3600 - 61  # still inside the margin: the cached token answers
    assert provider.token() == first and provider.fresh()
    assert len(idp.requests) == 1 and provider.fetches == 1


def test_a_token_near_its_expiry_is_fetched_again(idp: FakeIdentityProvider) -> None:
    clock = Clock()
    provider = ClientCredentialsTokenProvider(_settings(idp), clock=clock)
    first = provider.token()
    clock.now += 3600 - 59  # within refresh_margin_seconds of expiry
    assert not provider.fresh()
    second = provider.token()
    assert second != first and second == idp.issued[1]
    assert provider.token() == second and len(idp.requests) == 2


def test_without_expires_in_the_jwt_exp_decides(idp: FakeIdentityProvider) -> None:
    idp.expires_in = None  # the token's own exp is an hour away
    clock = Clock()
    provider = ClientCredentialsTokenProvider(_settings(idp), clock=clock)
    first = provider.token()
    clock.now += 3000
    assert provider.token() == first
    clock.now += 600  # past exp - margin
    assert provider.token() != first


def test_refresh_and_invalidate_force_a_new_token(idp: FakeIdentityProvider) -> None:
    provider = ClientCredentialsTokenProvider(_settings(idp), clock=Clock())
    first = provider.pool_callback(False)
    assert provider.pool_callback(False) == first
    second = provider.token(refresh=True)
    assert second != first
    provider.invalidate(first)  # a token no longer cached: nothing happens
    assert provider.token() == second
    provider.invalidate(second)  # the database refused it
    assert provider.token() not in (first, second)
    assert len(idp.requests) == 3


def test_the_pools_refresh_fetches_only_an_expired_token(idp: FakeIdentityProvider) -> None:
    clock = Clock()
    provider = ClientCredentialsTokenProvider(_settings(idp), clock=clock)
    first = provider.pool_callback(False)
    clock.now += 3600  # our estimate is due: the driver's expired token is replaced
    second = provider.pool_callback(True)
    assert second != first
    # Pool threads that held the old token and ask now get the new one, with no new fetch.
    assert [provider.pool_callback(True) for _ in range(3)] == [second] * 3
    assert len(idp.requests) == 2
    idp.clock_skew_seconds = 7200  # the provider's clock is ahead: exp already passed
    provider.invalidate(second)
    third = provider.token()
    assert provider.pool_callback(False) == third  # not due by our estimate ...
    fourth = provider.pool_callback(True)  # ... but the driver is right: exp has passed
    assert fourth != third and len(idp.requests) == 4


def test_a_transient_failure_is_retried_once(idp: FakeIdentityProvider) -> None:
    provider = ClientCredentialsTokenProvider(_settings(idp), clock=Clock())
    idp.fail_next = 1
    assert provider.token() == idp.issued[0]
    assert len(idp.requests) == 2  # the 503, then the retry
    provider.invalidate(idp.issued[0])
    idp.fail_next = 2  # the outage outlasts the one retry
    with pytest.raises(DatabaseAccessTokenUnavailable) as caught:
        provider.token()
    assert caught.value.status == 503 and len(idp.requests) == 4
    assert isinstance(caught.value, DatabaseUnavailableError)  # answers 503, not the caller's


def test_an_unreachable_provider_is_unavailable(idp: FakeIdentityProvider) -> None:
    settings = _settings(idp, token_url="http://127.0.0.1:9/oauth2/v2.0/token",
                         timeout_seconds=1)
    with pytest.raises(DatabaseAccessTokenUnavailable, match="could not be asked"):
        ClientCredentialsTokenProvider(settings).token()


def test_a_wrong_secret_is_a_typed_rejection_without_the_secret(
        idp: FakeIdentityProvider, caplog: pytest.LogCaptureFixture) -> None:
    wrong = "wr0ng-Secret-Value-91aa"  # noqa: S105
    provider = ClientCredentialsTokenProvider(
        _settings(idp, client_secret=SecretStr(wrong)), clock=Clock())
    caplog.set_level(logging.DEBUG)
    with pytest.raises(DatabaseAccessTokenRejected) as caught:
        provider.token()
    error = caught.value
    assert isinstance(error, DatabaseAccessTokenError)
    assert error.oauth_error == "invalid_client" and error.client_id == CLIENT_ID
    assert len(idp.requests) == 1  # refused credentials are not asked again
    seen = [str(error), repr(error), repr(error.args), caplog.text,
            repr(_settings(idp, client_secret=SecretStr(wrong)))]
    chained = error.__cause__ or error.__context__
    if chained is not None:
        seen.append(repr(chained))
    for text in seen:
        assert wrong not in text and CLIENT_SECRET not in text
    # positive control: the provider did receive the wrong secret (the check above is not vacuous)
    assert basic_credentials(idp.requests[0]["authorization"])[1] == wrong


def test_the_good_secret_and_tokens_never_reach_the_logs(
        idp: FakeIdentityProvider, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    provider = ClientCredentialsTokenProvider(_settings(idp), clock=Clock())
    token = provider.token()
    idp.fail_next = 1
    provider.token(refresh=True)  # a logged retry
    assert "asking once more" in caplog.text and "fetched" in caplog.text  # it does log
    assert CLIENT_SECRET not in caplog.text and token not in caplog.text
    assert CLIENT_SECRET not in repr(provider.__dict__.get("_settings"))


def test_a_wrong_scope_is_rejected(idp: FakeIdentityProvider) -> None:
    provider = ClientCredentialsTokenProvider(
        _settings(idp, scope="https://example.com/otherdb/.default"))
    with pytest.raises(DatabaseAccessTokenRejected, match="invalid_scope"):
        provider.token()


def test_the_secret_can_come_from_a_file(idp: FakeIdentityProvider, tmp_path: Path) -> None:
    secret_file = tmp_path / "client-secret"
    secret_file.write_text(CLIENT_SECRET + "\n", encoding="utf-8")
    settings = _settings(idp, client_secret=None, client_secret_file=secret_file)
    assert ClientCredentialsTokenProvider(settings).token() == idp.issued[0]


def test_concurrent_callers_share_one_fetch(idp: FakeIdentityProvider) -> None:
    idp.delay_seconds = 0.3
    provider = ClientCredentialsTokenProvider(_settings(idp))
    seen: list[str] = []

    def ask() -> None:
        seen.append(provider.token())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(idp.requests) == 1 and seen == [idp.issued[0]] * 8


@pytest.mark.parametrize(("overrides", "message"), [
    ({"client_secret": None}, "client_secret or client_secret_file"),
    ({"client_secret_file": Path("/run/secrets/x")}, "client_secret or client_secret_file"),
    ({"token_url": "http://idp.example/token"}, "https"),
    ({"scope": "https://example.com/memorypdb"}, "/.default"),
    ({"scope": "a/.default b/.default"}, "/.default"),
])
def test_settings_are_checked(idp: FakeIdentityProvider, overrides: dict[str, Any],
                              message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _settings(idp, **overrides)


def test_oci_iam_scopes_are_not_held_to_the_entra_form(idp: FakeIdentityProvider) -> None:
    settings = _settings(idp, provider="oci_iam", scope="OracleDBDB_ACCESS_SCOPE",
                         token_url="https://idcs-1.identity.oraclecloud.com/oauth2/v1/token")
    assert settings.scope == "OracleDBDB_ACCESS_SCOPE"
    assert CLIENT_SECRET not in repr(settings) and CLIENT_SECRET not in str(settings)
