"""The input budget an embedder is given at construction, shared by the SDK's embedders."""

from __future__ import annotations

from oracleagentmemory.apis import IEmbedder


class InputBudget(IEmbedder):
    """Answers :attr:`max_input_tokens` from ``self._max_input_tokens`` (set and validated by
    the embedder's constructor), else the contract's default."""

    _max_input_tokens: int | None = None

    @property
    def max_input_tokens(self) -> int:
        """The model's input budget given at construction, else the contract's default."""
        if self._max_input_tokens is None:
            return super().max_input_tokens
        return self._max_input_tokens
