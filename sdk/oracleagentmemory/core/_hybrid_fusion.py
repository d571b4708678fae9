"""How a hybrid round's two sides are fused: reciprocal-rank fusion weighted toward keywords.

A record ranked ``r`` (from 1) on a side scores ``weight / (HYBRID_RRF_K + r)``; the vector side
weighs :data:`VECTOR_WEIGHT`, the keyword side 1. Measured with ``bench/locomo.py`` on LoCoMo's
development half with the local WordLlama 256-d embedder (760 questions, recall@5/@10): keyword
alone 0.669/0.742, vector alone 0.334/0.409; equal weights at ``k = 60`` (the plain fusion of
query chunks) 0.499/0.627, these weights 0.656/0.741. The vector arm adds nothing there: every
weight above zero costs the keyword ranking a little (0.1 at ``k = 10``: 0.664/0.745), so the
weights keep the vector side as a tie-breaker and a source of records no keyword matches.
"""

from __future__ import annotations

__all__ = ["HYBRID_RRF_K", "HYBRID_WEIGHTS", "VECTOR_WEIGHT"]

HYBRID_RRF_K = 10
"""The rank constant of hybrid fusion: smaller than the chunks' 60, so a side's first ranks
count more than its tail."""
VECTOR_WEIGHT = 0.2
"""The vector side's weight in hybrid fusion, the keyword side's being 1."""

HYBRID_WEIGHTS = (VECTOR_WEIGHT, 1.0)
"""The weights of a hybrid round's sides, in their order (vector, keyword)."""
