"""How a hybrid round's two sides are fused: reciprocal-rank fusion weighted toward keywords.

A record ranked ``r`` (from 1) on a side scores ``weight / (HYBRID_RRF_K + r)``; the vector side
weighs :data:`VECTOR_WEIGHT`, the keyword side 1. Measured with ``bench/locomo.py`` on LoCoMo's
development half with the local WordLlama 256-d embedder (760 questions, recall@5/@10, vector
turn windows on): keyword alone 0.683/0.752, vector alone 0.403/0.470, these weights
0.674/0.750; equal weights at ``k = 60`` (the plain fusion of query chunks) scored 0.499/0.627.
The vector arm adds nothing there, and the bench's leave-one-conversation-out check agrees: the
setting chosen on four conversations (weights 0 to 1, ``k`` 5 to 60) is weight 0 in four folds
of five, and on the held-out conversations these weights trail keyword alone at five results
(0.677 against 0.691) and lead it at ten (0.764 against 0.762), by a few questions. The weights
keep the vector side as a tie-breaker and a source of records no keyword matches; a stronger
embedder earns more (all-MiniLM-L6-v2, measured offline on the same rankings: these weights
0.687/0.759 against keyword's 0.684/0.752).
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
