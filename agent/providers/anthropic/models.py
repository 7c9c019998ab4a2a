"""Anthropic's model list (``GET /v1/models``, its own headers), for ``hermes model``, doctor
and setup. No SDK here: a listing must not cost the SDK's import."""
from __future__ import annotations

from typing import Optional

from agent.providers.models import PROBE_TIMEOUT, Probe, fetch_list

API_VERSION = "2023-06-01"


def list_models(base_url: Optional[str], api_key: Optional[str],
                timeout: float = PROBE_TIMEOUT) -> Probe:
    from agent.providers.anthropic.client import sdk_base_url

    headers = {"anthropic-version": API_VERSION}
    if api_key:
        headers["x-api-key"] = api_key
    return fetch_list(sdk_base_url(base_url) + "/v1/models?limit=1000", headers, timeout)
