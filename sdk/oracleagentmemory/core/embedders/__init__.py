"""Embedders: local ones (hashing, WordLlama), HTTP clients for OpenAI-compatible services, and
in-database models (Oracle)."""

from oracleagentmemory.core.embedders.embedder import Embedder
from oracleagentmemory.core.embedders.hashing import HashingEmbedder
from oracleagentmemory.core.embedders.openai_compatible import OpenAICompatibleEmbedder
from oracleagentmemory.core.embedders.oracle_db import OracleDBEmbedder
from oracleagentmemory.core.embedders.wordllama_embedder import WordLlamaEmbedder
from oracleagentmemory.errors import EmbeddingServiceError

__all__ = [
    "Embedder",
    "EmbeddingServiceError",
    "HashingEmbedder",
    "OpenAICompatibleEmbedder",
    "OracleDBEmbedder",
    "WordLlamaEmbedder",
]
