"""Stand-in for vllm.config's current-config context: as in newer vLLM,
asking for the current config outside set_current_vllm_config raises, so a
caller that forgets the context fails here as it would there."""
from contextlib import contextmanager

_current = None


class VllmConfig:
    """The stand-in's default config (vLLM's has every engine setting)."""


@contextmanager
def set_current_vllm_config(vllm_config, check_compile=False, prefix=None):
    global _current
    old = _current
    _current = vllm_config
    try:
        yield
    finally:
        _current = old


def get_current_vllm_config():
    if _current is None:
        raise AssertionError("Current vLLM config is not set (vllm stand-in)")
    return _current
