"""Embedders: local ones (hashing, WordLlama) and HTTP clients for OpenAI-compatible services."""

from oracleagentmemory.core.embedders.embedder import Embedder
from oracleagentmemory.core.embedders.hashing import HashingEmbedder
from oracleagentmemory.core.embedders.openai_compatible import OpenAICompatibleEmbedder
from oracleagentmemory.core.embedders.wordllama_embedder import WordLlamaEmbedder
from oracleagentmemory.errors import EmbeddingServiceError

__all__ = [
    "Embedder",
    "EmbeddingServiceError",
    "HashingEmbedder",
    "OpenAICompatibleEmbedder",
    "WordLlamaEmbedder",
]
