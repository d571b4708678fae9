"""The image methods of the agent-memory client: standalone images with descriptions a model
writes when none is given."""

from __future__ import annotations

import builtins
import functools
import logging
from typing import TYPE_CHECKING, Any

from oracleagentmemory._notset import NOT_SET_MARKER, _NotSetMarker
from oracleagentmemory.apis.message import ImageContent, ImageMimeType, Message, TextContent
from oracleagentmemory.apis.records import ImageRecord
from oracleagentmemory.core._images import IMAGE_MIME_TYPE_KEY, detect_mime_type
from oracleagentmemory.core._validation import check_required_id
from oracleagentmemory.core.memoryextraction import MemoryExtractionMode, ResolvedExtraction
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError
from oracleagentmemory.observability._operation import AGENT_MEMORY, observed
from oracleagentmemory.observability._operation import generate as observed_generate

if TYPE_CHECKING:
    from oracleagentmemory.core._background import BackgroundWork, WorkKey
    from oracleagentmemory.core.imageinputlimitconfig import ImageInputLimitConfig

LOG = logging.getLogger("oracleagentmemory.images")

CAPTION_INSTRUCTIONS = (
    "Describe this image for a search index in two or three plain sentences: what it shows, "
    "any text in it, and anything a user might later ask about. Answer with the description "
    "only."
)


def describe_image(llm: Any, data: bytes, mime_type: str) -> str:
    """A model's description of one image (empty answers are refused).

    Raises:
        InvalidArgumentError: the model answered nothing.
    """
    answer = observed_generate(llm, [Message("user", [
        TextContent(CAPTION_INSTRUCTIONS), ImageContent(data, ImageMimeType(mime_type))])])
    text = str(answer.text).strip()
    if not text:
        raise InvalidArgumentError("the model returned an empty image description")
    return text


def _mime(data: object, mime_type: object) -> str:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidArgumentTypeError("image must be bytes", argument="image")
    if mime_type is NOT_SET_MARKER:
        detected = detect_mime_type(bytes(data))
        if detected is None:
            raise InvalidArgumentError(
                "image: not a PNG, JPEG or WebP image (pass mime_type to say which)",
                argument="image")
        return detected
    return str(getattr(mime_type, "value", mime_type))


class ClientImages:
    """Standalone images; the client supplies the store, the model and the background work."""

    if TYPE_CHECKING:
        _store: Any
        _llm: Any
        _background: BackgroundWork

        def _work_key(self, thread_id: str) -> WorkKey:
            raise NotImplementedError

        def _client_settings(self) -> ResolvedExtraction:
            raise NotImplementedError

        def _image_limits(self) -> ImageInputLimitConfig:
            raise NotImplementedError

    @observed(AGENT_MEMORY)
    def add_image(self, /, image: bytes, description: Any = NOT_SET_MARKER,
                  mime_type: Any = NOT_SET_MARKER, image_id: Any = NOT_SET_MARKER,
                  user_id: Any = NOT_SET_MARKER, agent_id: Any = NOT_SET_MARKER,
                  thread_id: Any = NOT_SET_MARKER, metadata: Any = NOT_SET_MARKER,
                  timestamp: Any = NOT_SET_MARKER, ttl_days: Any = NOT_SET_MARKER,
                  ttl_anchor: Any = NOT_SET_MARKER, **store_kwargs: Any) -> str:
        """Store one image (PNG, JPEG or WebP; ``mime_type`` detected when omitted); returns its
        id. Without a ``description`` the client's model writes one (inline or in background
        work, as the extraction mode says); without a model the image is stored undescribed."""
        mime = _mime(image, mime_type)
        limit = self._image_limits().max_raw_image_bytes
        if isinstance(limit, int) and len(image) > limit:
            raise InvalidArgumentError(
                f"image: {len(image)} bytes, more than max_raw_image_bytes={limit}",
                argument="image")
        if metadata is not NOT_SET_MARKER and metadata is not None \
                and not isinstance(metadata, dict):
            raise InvalidArgumentTypeError("metadata must be a dict or None", argument="metadata")
        if description is not NOT_SET_MARKER and description is not None \
                and not isinstance(description, str):
            raise InvalidArgumentTypeError("description must be a str or None",
                                           argument="description")
        stored_metadata = {**(metadata if isinstance(metadata, dict) else {}),
                           IMAGE_MIME_TYPE_KEY: mime}
        wanted = None if description is NOT_SET_MARKER else description
        settings = self._client_settings()
        if wanted is None and self._llm is not None \
                and settings.extraction_mode is MemoryExtractionMode.INLINE:
            wanted = self._caption(bytes(image), mime, None)
        ids = self._store.add(
            [bytes(image)], "image", index_texts=_column(wanted), record_ids=_column(image_id),
            user_ids=_column(user_id), agent_ids=_column(agent_id),
            thread_ids=_column(thread_id), metadata=[stored_metadata],
            timestamps=_column(timestamp), ttl_days=_column(ttl_days),
            ttl_anchor=_column(ttl_anchor), **store_kwargs)
        new_id = str(ids[0])
        if wanted is None and self._llm is not None:
            self._caption_later(new_id, bytes(image), mime,
                                thread_id if isinstance(thread_id, str) else "", settings)
        return new_id

    @observed(AGENT_MEMORY)
    def list_images(self, /, image_id: Any = NOT_SET_MARKER, user_id: Any = NOT_SET_MARKER,
                    agent_id: Any = NOT_SET_MARKER, thread_id: Any = NOT_SET_MARKER,
                    metadata_filter: Any = NOT_SET_MARKER, include_bytes: Any = NOT_SET_MARKER,
                    limit: Any = NOT_SET_MARKER) -> builtins.list[ImageRecord]:
        """Visible images, oldest first (bytes only with ``include_bytes=True``, which needs
        ``image_id`` and a scope filter)."""
        return [r for r in self._store.list(
            "image", limit=limit, user_id=user_id, agent_id=agent_id, thread_id=thread_id,
            metadata_filter=metadata_filter, include_bytes=include_bytes, record_id=image_id)
            if isinstance(r, ImageRecord)]

    @observed(AGENT_MEMORY)
    def update_image(self, /, image_id: str, image: Any = NOT_SET_MARKER,
                     description: Any = NOT_SET_MARKER, mime_type: Any = NOT_SET_MARKER,
                     metadata: Any = NOT_SET_MARKER, timestamp: Any = NOT_SET_MARKER,
                     ttl_days: Any = NOT_SET_MARKER, ttl_anchor: Any = NOT_SET_MARKER,
                     **kwargs: Any) -> str:
        """Change a standalone image; omitted fields are kept and metadata is replaced whole.
        New bytes need their ``mime_type``; ``description=None`` asks the model for a new one.

        Raises:
            RecordKeyError: (a ``KeyError``) no such visible standalone image.
        """
        from oracleagentmemory.errors import RecordKeyError

        if kwargs:
            raise InvalidArgumentTypeError(f"unexpected arguments: {', '.join(sorted(kwargs))}")
        check_required_id(image_id, "image_id")
        record = self._store.get("image", image_id, include_bytes=description is None)
        if not isinstance(record, ImageRecord) or record.message_id is not None:
            raise RecordKeyError(f"no image {image_id!r}", argument="image_id",
                                 record_id=image_id, record_type="image")
        if (image is NOT_SET_MARKER) != (mime_type is NOT_SET_MARKER) \
                and image is not NOT_SET_MARKER:
            raise InvalidArgumentError("new image bytes need their mime_type",
                                       argument="mime_type")
        changes: dict[str, Any] = {"timestamp": timestamp, "ttl_days": ttl_days,
                                   "ttl_anchor": ttl_anchor}
        if image is not NOT_SET_MARKER:
            mime = _mime(image, mime_type)
            kept = record.metadata if metadata is NOT_SET_MARKER else metadata
            changes["content"] = bytes(image)
            changes["metadata"] = {**(kept or {}), IMAGE_MIME_TYPE_KEY: mime}
        elif metadata is not NOT_SET_MARKER:
            changes["metadata"] = metadata
        if isinstance(description, str):
            changes["index_text"] = description
        elif description is None:
            data = bytes(image) if image is not NOT_SET_MARKER else record.bytes
            mime_now = _mime(image, mime_type) if image is not NOT_SET_MARKER else \
                record.mime_type.value
            if self._llm is None or data is None:
                raise InvalidArgumentError("description=None needs the client's llm to write "
                                           "a new description", argument="description")
            changes["index_text"] = self._caption(data, mime_now, None)
        self._store.update("image", image_id,
                           **{k: v for k, v in changes.items() if v is not NOT_SET_MARKER})
        return image_id

    @observed(AGENT_MEMORY)
    def delete_image(self, /, image_id: str) -> int:
        """Delete one standalone image; 0 when there is none (message parts go with their
        message)."""
        return int(self._store.delete("image", image_id))

    def _caption(self, data: bytes, mime_type: str, fallback: str | None) -> str | None:
        try:
            return describe_image(self._llm, data, mime_type)
        except Exception:  # the image is stored either way
            LOG.warning("describing an image failed", exc_info=True)
            return fallback

    def _caption_later(self, image_id: str, data: bytes, mime_type: str, thread_id: str,
                       settings: ResolvedExtraction) -> None:
        def write() -> None:
            text = self._caption(data, mime_type, None)
            if text is not None:
                self._store.update("image", image_id, index_text=text)

        self._background.submit(self._work_key(thread_id), functools.partial(write),
                                f"description of image {image_id!r}",
                                settings.background_extraction_queue_full_behavior,
                                settings.background_extraction_queue_put_timeout_seconds)


def _column(value: Any) -> Any:
    return value if isinstance(value, _NotSetMarker) else [value]
