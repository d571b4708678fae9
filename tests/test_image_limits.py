"""Image limits have two tiers: SDK defaults that apply where no scope sets a limit, and absolute
maxima that no configuration exceeds."""

from __future__ import annotations

import pytest
from oracleagentmemory.core import imageinputlimitconfig as limits
from oracleagentmemory.core.imageinputlimitconfig import ImageInputLimitConfig
from oracleagentmemory.errors import InvalidArgumentError


def test_an_unset_limit_resolves_to_the_sdk_default() -> None:
    assert ImageInputLimitConfig().resolved() == ImageInputLimitConfig(
        max_raw_image_bytes=10 * limits.MIB, max_images_per_llm_request=100,
        max_total_raw_image_bytes_per_llm_request=100 * limits.MIB)
    broader = ImageInputLimitConfig(max_images_per_llm_request=7)
    assert ImageInputLimitConfig(max_raw_image_bytes=5).resolved(broader) == ImageInputLimitConfig(
        max_raw_image_bytes=5, max_images_per_llm_request=7,
        max_total_raw_image_bytes_per_llm_request=limits.MAX_TOTAL_RAW_IMAGE_BYTES_PER_LLM_REQUEST_DEFAULT)


@pytest.mark.parametrize(("field", "absolute"), [
    ("max_raw_image_bytes", 32 * 1024 * 1024),
    ("max_images_per_llm_request", 512),
    ("max_total_raw_image_bytes_per_llm_request", 256 * 1024 * 1024),
])
def test_a_limit_may_exceed_the_default_up_to_the_absolute_maximum(field: str,
                                                                    absolute: int) -> None:
    config = ImageInputLimitConfig(**{field: absolute})
    assert getattr(config.resolved(), field) == absolute
    with pytest.raises(InvalidArgumentError, match=f"{field} must be between 1 and {absolute}"):
        ImageInputLimitConfig(**{field: absolute + 1})
