"""``oam-gateway dev`` serves hybrid search (issue 24: the default with the best recall).

On LoCoMo's development half (README "Recall", measured by ``bench/locomo.py``) the store's own
default, vector search with the local WordLlama embedder, finds under half of the evidence turns
in its first ten results, hybrid search three in four, so the development gateway opens the demo
store with hybrid search.
"""

from __future__ import annotations

from pathlib import Path

from oam_gateway.cli import _dev_settings
from oam_gateway.dev.state import DevState


def test_dev_settings_choose_hybrid_search(tmp_path: Path) -> None:
    settings = _dev_settings("postgresql://runtime@/oam", DevState(tmp_path),
                             "http://127.0.0.1:8080")
    assert settings.search_strategy == "hybrid"
    assert settings.embedder == "wordllama"  # the vector side's embedder is still served
