"""Former home of the engine contracts, kept while callers move to ``engines.interfaces``."""

from oracleagentmemory.engines.interfaces import *  # noqa: F403
from oracleagentmemory.engines.interfaces import UNSET as UNSET  # noqa: F401
