"""The gateway serves the dashboard when ``gateway.dashboard: true`` (a plugin registration the
gateway mounts without importing the dashboard), behind the API server's own checks."""
from __future__ import annotations

import http.client
from urllib.parse import urlsplit

import yaml

from tests.gateway.sse import request


def _get(url: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("GET", parts.path, headers=headers or {})
    resp = conn.getresponse()
    out = resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    conn.close()
    return out


def test_the_gateway_mounts_the_dashboard_when_asked(gateway_process, hermes_home):
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"gateway": {"dashboard": True}}))
    gw = gateway_process()
    status, headers, body = _get(gw.api + "/dashboard/")
    assert status == 200 and b"<title>Hermes dashboard</title>" in body
    assert "default-src 'none'" in headers["content-security-policy"]
    assert _get(gw.api + "/dashboard/app.js")[0] == 200
    status, data = request("GET", gw.api + "/api/dashboard/status", None)
    assert status == 401  # the page is public, its data is not
    status, data = request("GET", gw.api + "/api/dashboard/status", gw.key)
    assert status == 200 and data["served_by"] == "gateway"
    status, caps = request("GET", gw.api + "/v1/capabilities", gw.key)
    assert caps["features"]["dashboard"] is True
    # a page on another site cannot call it; the dashboard's own origin can
    evil = {"Origin": "http://evil.example"}
    assert request("GET", gw.api + "/api/dashboard/status", gw.key, evil)[0] == 403
    same = {"Origin": gw.api}
    assert request("GET", gw.api + "/api/dashboard/status", gw.key, same)[0] == 200


def test_without_the_setting_there_is_no_dashboard(gateway_process):
    gw = gateway_process()
    assert _get(gw.api + "/dashboard/")[0] == 401  # not a public file: an unknown keyed path
    assert _get(gw.api + "/dashboard/", {"Authorization": f"Bearer {gw.key}"})[0] == 404
    assert request("GET", gw.api + "/api/dashboard/status", gw.key)[0] == 404
