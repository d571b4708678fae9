"""How a hybrid round's two sides are fused: reciprocal-rank fusion weighted toward keywords.

A record ranked ``r`` (from 1) on a side scores ``weight / (HYBRID_RRF_K + r)``; the vector side
weighs :data:`VECTOR_WEIGHT`, the keyword side 1. Measured with ``bench/locomo.py`` on LoCoMo's
development half with the local WordLlama 256-d embedder (760 questions, recall@5/@10, vector
turn windows on, ties ranked alike in every run): keyword alone 0.680/0.753, vector alone
0.403/0.470, these weights 0.679/0.754; the previous weight 0.2 at ``k = 10`` scored
0.675/0.750, equal weights at ``k = 60`` (the plain fusion of query chunks) 0.499/0.627. The
bench's leave-one-conversation-out check (weights 0 to 1, ``k`` 5 to 60, chosen on four
conversations, scored on the fifth) chooses ``k = 5`` in every fold and weight 0 in four of
five; held out, these weights score 0.689/0.764 against 0.678/0.764 for the previous ones and
0.691/0.762 for keyword alone. The WordLlama arm adds next to nothing; the small weight keeps it
as a tie-breaker below the keyword side's first ranks and a source of records no keyword
matches. A stronger embedder still adds to keywords at this weight: with multilingual-e5-small
(``bench/locomo.py --local-embedder e5-small``) hybrid scores 0.680/0.757 against keyword's
0.680/0.753 (0.684/0.760 with the previous weights, in an earlier session), and held out
0.696/0.765 against 0.692/0.769 for the previous weights and 0.691/0.762 for keyword alone.
"""

from __future__ import annotations

__all__ = ["HYBRID_RRF_K", "HYBRID_WEIGHTS", "VECTOR_WEIGHT"]

HYBRID_RRF_K = 5
"""The rank constant of hybrid fusion: smaller than the chunks' 60, so a side's first ranks
count more than its tail."""
VECTOR_WEIGHT = 0.1
"""The vector side's weight in hybrid fusion, the keyword side's being 1."""

HYBRID_WEIGHTS = (VECTOR_WEIGHT, 1.0)
"""The weights of a hybrid round's sides, in their order (vector, keyword)."""
