"""Search configurations as JSON payloads (a thread's stored runtime settings).

A payload holds the configuration's kind (``"memory"``, ``"top_k"``, ``"pruning"``) and the
settings that were set; the live model objects (reranker, pruner) are not serialisable and are
recorded only as ``has_reranker`` / ``has_pruner``. Rebuilding takes them from a live fallback
configuration (the client's), and returns that fallback when the payload cannot be honoured.
"""

from __future__ import annotations

from typing import Any

from oracleagentmemory._notset import _NotSetMarker
from oracleagentmemory.core.searchconfig import (
    MemorySearchConfig,
    PruningEvaluationMode,
    PruningMemorySearchConfig,
    TopKMemorySearchConfig,
    _RerankingMemorySearchConfig,
)
from oracleagentmemory.errors import InvalidArgumentError

_KIND = {PruningMemorySearchConfig: "pruning", TopKMemorySearchConfig: "top_k",
         MemorySearchConfig: "memory"}
_SETTINGS = {
    "memory": ("token_budget", "soft_token_budget"),
    "top_k": ("token_budget", "soft_token_budget", "reranker_max_candidates", "max_results"),
    "pruning": ("token_budget", "soft_token_budget", "reranker_max_candidates",
                "evaluation_mode", "num_probe_points", "protected_fraction"),
}


def search_config_to_payload(config: MemorySearchConfig) -> dict[str, object]:
    """A JSON-ready dict of ``config``: its kind, the settings that were set, and whether it
    has a reranker / pruner."""
    kind = next(name for cls, name in _KIND.items() if isinstance(config, cls))
    payload: dict[str, object] = {"type": kind}
    for name in _SETTINGS[kind]:
        value = getattr(config, name)
        if not isinstance(value, _NotSetMarker):
            payload[name] = value.value if isinstance(value, PruningEvaluationMode) else value
    if isinstance(config, _RerankingMemorySearchConfig):
        payload["has_reranker"] = config.reranker is not None and not isinstance(
            config.reranker, _NotSetMarker)
    if isinstance(config, PruningMemorySearchConfig):
        payload["has_pruner"] = True
    return payload


def search_config_from_payload(payload: object,
                               fallback: MemorySearchConfig) -> MemorySearchConfig:
    """The configuration ``payload`` describes, its reranker and pruner taken from
    ``fallback``; ``fallback`` itself when the payload is malformed or needs a model the
    fallback does not have."""
    if not isinstance(payload, dict) or payload.get("type") not in _SETTINGS:
        return fallback
    kind = payload["type"]
    settings: dict[str, Any] = {name: payload[name] for name in _SETTINGS[kind]
                                if name in payload}
    live_reranker = getattr(fallback, "reranker", None)
    if payload.get("has_reranker") and kind != "memory":
        if live_reranker is None or isinstance(live_reranker, _NotSetMarker):
            return fallback
        settings["reranker"] = live_reranker
    try:
        if kind == "pruning":
            if not isinstance(fallback, PruningMemorySearchConfig):
                return fallback
            return PruningMemorySearchConfig(pruner=fallback.pruner, **settings)
        if kind == "top_k":
            return TopKMemorySearchConfig(**settings)
        return MemorySearchConfig(**settings)
    except (InvalidArgumentError, TypeError):
        return fallback
