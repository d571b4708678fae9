"""Validation of the images the store keeps: format, structure, declared type and size.

Pure header checks, no image library: each format is recognised by its magic number and its
container structure is walked far enough to refuse truncated or garbage bytes (PNG: signature,
a well-formed IHDR with a valid CRC, chunks up to IEND; JPEG: SOI, marker segments up to a
start of scan after a frame header, EOI at the end; WebP: the RIFF/WEBP header, a RIFF size the
bytes hold and a VP8/VP8L/VP8X first chunk). Pixel data is not decoded. Errors are
:class:`InvalidArgumentError` naming the argument (``contents[2]``,
``metadata[0].image_mime_type``).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from typing import Any

from oracleagentmemory.apis.message import ImageContent, ImageMimeType
from oracleagentmemory.core.imageinputlimitconfig import MAX_RAW_IMAGE_BYTES_ABSOLUTE
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

IMAGE_MIME_TYPE_KEY = "image_mime_type"
"""The metadata key an image write declares its format with (never stored in metadata)."""
STORE_MAX_IMAGE_BYTES = MAX_RAW_IMAGE_BYTES_ABSOLUTE
"""Largest image the store accepts: the SDK maximum of ``ImageInputLimitConfig``."""
SUPPORTED_MIME_TYPES: tuple[str, ...] = tuple(m.value for m in ImageMimeType)

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_BIT_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
"""Allowed bit depths per PNG colour type."""
_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})
"""JPEG markers without a length (TEM, RST0-7)."""
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
"""Start-of-frame markers (DHT, JPG and DAC share the range)."""
_FORMAT_NAMES = {ImageMimeType.PNG.value: "PNG", ImageMimeType.JPEG.value: "JPEG",
                 ImageMimeType.WEBP.value: "WebP"}


def check_mime_type(value: object, argument: str) -> str:
    """A supported image MIME type (an :class:`ImageMimeType` or its text) as text."""
    if isinstance(value, ImageMimeType):
        return value.value
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(
            f"{argument} must be one of {', '.join(SUPPORTED_MIME_TYPES)}, got "
            f"{type(value).__name__}", argument=argument)
    if value not in SUPPORTED_MIME_TYPES:
        raise InvalidArgumentError(
            f"{argument} must be one of {', '.join(SUPPORTED_MIME_TYPES)}, got {value!r}",
            argument=argument)
    return value


def split_image_metadata(metadata: Mapping[str, Any] | None, argument: str
                         ) -> tuple[str, dict[str, Any] | None]:
    """The declared image type of an image write and the metadata to store without it
    (``None`` when nothing else remains). ``argument`` names the metadata (``metadata[0]``)."""
    key_argument = f"{argument}.{IMAGE_MIME_TYPE_KEY}"
    if metadata is None or IMAGE_MIME_TYPE_KEY not in metadata:
        raise InvalidArgumentError(
            f"{key_argument} is required for image records (one of "
            f"{', '.join(SUPPORTED_MIME_TYPES)})", argument=key_argument)
    mime_type = check_mime_type(metadata[IMAGE_MIME_TYPE_KEY], key_argument)
    rest = {k: v for k, v in metadata.items() if k != IMAGE_MIME_TYPE_KEY}
    return mime_type, rest or None


def detect_mime_type(data: bytes) -> str | None:
    """The format the magic number announces, or ``None`` for none of the supported ones."""
    if data.startswith(_PNG_SIGNATURE):
        return ImageMimeType.PNG.value
    if data.startswith(b"\xff\xd8\xff"):
        return ImageMimeType.JPEG.value
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ImageMimeType.WEBP.value
    return None


def check_image_bytes(value: object, mime_type: str, argument: str,
                      mime_argument: str, max_bytes: int = STORE_MAX_IMAGE_BYTES) -> bytes:
    """Validated image bytes: within ``max_bytes``, of a supported format that is the declared
    ``mime_type`` (named ``mime_argument`` in errors) and structurally whole."""
    if isinstance(value, (bytearray, memoryview)):
        value = bytes(value)
    if not isinstance(value, bytes):
        raise InvalidArgumentTypeError(
            f"{argument} must be bytes for an image, got {type(value).__name__}",
            argument=argument)
    if not value:
        raise InvalidArgumentError(f"{argument}: the image is empty", argument=argument)
    if len(value) > max_bytes:
        raise InvalidArgumentError(
            f"{argument}: the image has {len(value)} bytes, more than the limit of "
            f"{max_bytes}", argument=argument)
    detected = detect_mime_type(value)
    if detected is None:
        raise InvalidArgumentError(
            f"{argument}: the bytes are not a PNG, JPEG or WebP image", argument=argument)
    if detected != mime_type:
        raise InvalidArgumentError(
            f"{mime_argument}: the bytes of {argument} are a {_FORMAT_NAMES[detected]} image "
            f"({detected}), not {mime_type}", argument=mime_argument)
    problem = {ImageMimeType.PNG.value: _png_problem, ImageMimeType.JPEG.value: _jpeg_problem,
               ImageMimeType.WEBP.value: _webp_problem}[detected](value)
    if problem is not None:
        raise InvalidArgumentError(
            f"{argument}: not a valid {_FORMAT_NAMES[detected]} image ({problem})",
            argument=argument)
    return value


def check_image_part(part: ImageContent, argument: str,
                     max_bytes: int = STORE_MAX_IMAGE_BYTES) -> tuple[str, bytes, str | None]:
    """``(mime type, bytes, description)`` of an image part of a message being written."""
    mime_type = check_mime_type(part.mime_type, f"{argument}.mime_type")
    if part.bytes is None:
        raise InvalidArgumentError(
            f"{argument}.bytes: an image part needs its bytes to be stored",
            argument=f"{argument}.bytes")
    data = check_image_bytes(part.bytes, mime_type, f"{argument}.bytes", f"{argument}.mime_type",
                             max_bytes)
    if part.description is not None and not isinstance(part.description, str):
        raise InvalidArgumentTypeError(
            f"{argument}.description must be a str or None", argument=f"{argument}.description")
    return mime_type, data, part.description


# --- structure of each format ------------------------------------------------------------------
def _png_problem(data: bytes) -> str | None:
    """Why ``data`` (which starts with the PNG signature) is not a whole PNG, or ``None``."""
    if len(data) < 8 + 25 + 12:
        return "truncated: too short for IHDR and IEND"
    length, kind = struct.unpack(">I4s", data[8:16])
    if kind != b"IHDR" or length != 13:
        return "the first chunk is not a 13-byte IHDR"
    width, height, depth, colour, compression, filtering, interlace = struct.unpack(
        ">IIBBBBB", data[16:29])
    if not (0 < width < 2**31 and 0 < height < 2**31):
        return f"invalid dimensions {width}x{height}"
    if depth not in _PNG_BIT_DEPTHS.get(colour, ()):
        return f"invalid colour type {colour} with bit depth {depth}"
    if compression != 0 or filtering != 0 or interlace not in (0, 1):
        return "invalid compression, filter or interlace method"
    if zlib.crc32(data[12:29]) != struct.unpack(">I", data[29:33])[0]:
        return "IHDR checksum mismatch"
    offset, seen_data = 33, False
    while offset + 12 <= len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        end = offset + 12 + length
        if end > len(data):
            return f"truncated inside the {kind.decode('latin-1')!r} chunk"
        if kind == b"IEND":
            return None if seen_data else "no IDAT chunk"
        seen_data = seen_data or kind == b"IDAT"
        offset = end
    return "truncated: no IEND chunk"


def _jpeg_problem(data: bytes) -> str | None:
    """Why ``data`` (which starts with SOI) is not a whole JPEG, or ``None``."""
    end = len(data)
    while end > 2 and data[end - 1] == 0:  # some encoders pad after EOI
        end -= 1
    if end < 4 or data[end - 2:end] != b"\xff\xd9":
        return "truncated: no EOI marker at the end"
    offset, framed = 2, False
    while offset + 1 < end:
        if data[offset] != 0xFF:
            return f"no marker at offset {offset}"
        marker = data[offset + 1]
        if marker == 0xFF:  # fill byte
            offset += 1
            continue
        if marker in _JPEG_STANDALONE:
            offset += 2
            continue
        if marker in (0xD8, 0xD9):
            return "EOI or SOI before the start of scan"
        if offset + 4 > end:
            return "truncated inside a marker segment"
        length = struct.unpack(">H", data[offset + 2:offset + 4])[0]
        if length < 2 or offset + 2 + length > end:
            return "truncated inside a marker segment"
        if marker in _JPEG_FRAMES:
            framed = True
        if marker == 0xDA:  # start of scan: entropy-coded data follows, up to EOI
            return None if framed else "start of scan before any frame header"
        offset += 2 + length
    return "no start of scan"


def _webp_problem(data: bytes) -> str | None:
    """Why ``data`` (a RIFF/WEBP header) is not a whole WebP file, or ``None``."""
    if len(data) < 20:
        return "truncated: too short for a first chunk"
    riff_size = struct.unpack("<I", data[4:8])[0]
    if riff_size + 8 > len(data):
        return f"truncated: the RIFF header announces {riff_size + 8} bytes, {len(data)} given"
    kind, size = data[12:16], struct.unpack("<I", data[16:20])[0]
    if 20 + size > riff_size + 8:
        return "truncated inside the first chunk"
    if kind == b"VP8 ":
        if size < 10 or data[23:26] != b"\x9d\x01\x2a":
            return "invalid VP8 frame header"
    elif kind == b"VP8L":
        if size < 5 or data[20] != 0x2F:
            return "invalid VP8L signature"
    elif kind == b"VP8X":
        if size < 10:
            return "invalid VP8X header"
    else:
        return f"unknown first chunk {kind.decode('latin-1')!r}"
    return None
