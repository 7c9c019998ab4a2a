"""web_extract against real pages on a loopback server (tests/web_server.py): main text without
the boilerplate, PDFs, the per-page budget with the full text saved, a 50 MB page that is never
fully read, and the SSRF guard on the first URL and on every redirect hop."""
from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from hermes_core.config import parse_config
from tests.web_articles import ARTICLES, score
from tests.web_server import HUGE_BYTES, PDF_TEXT, WebServer
from tools.registry import ToolContext, ToolError, dispatch
from tools.web.ssrf import address_problem


@pytest.fixture(scope="module")
def web():
    server = WebServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def other():
    """A second loopback service: what a redirect must not reach."""
    server = WebServer().start()
    yield server
    server.stop()


def ctx_for(tmp_path: Path, confine: bool = False, **web_cfg) -> ToolContext:
    web_cfg.setdefault("allow_private", True)
    cfg = parse_config({"web": web_cfg})
    return ToolContext(cwd=tmp_path, config=cfg, confine_to=tmp_path if confine else None)


def extract(ctx: ToolContext, *urls: str) -> str:
    return dispatch("web_extract", {"urls": list(urls)}, ctx)


def test_article_main_text_without_boilerplate(web, tmp_path):
    for article in ARTICLES.values():
        out = extract(ctx_for(tmp_path), web.url(f"/article/{article.slug}"))
        recall, boiler = score(article, out.split("\n\n", 1)[1])
        assert recall >= 0.9, (article.slug, recall, out)
        assert boiler <= 0.05, (article.slug, boiler, out)
        assert out.startswith(f"## {article.title}")


def test_pdf_becomes_text(web, tmp_path):
    out = extract(ctx_for(tmp_path), web.url("/doc.pdf"))
    assert all(line in out for line in PDF_TEXT)
    assert "note: 1 pages" in out


def test_long_page_shows_head_and_tail_and_saves_the_rest(web, tmp_path):
    ctx = ctx_for(tmp_path, confine=True, page_tokens=200)
    article = ARTICLES["tides"]
    out = extract(ctx, web.url("/article/tides"))
    assert article.sentences[0] in out and article.sentences[-1] in out
    assert article.sentences[len(article.sentences) // 2] not in out
    marker = next(line for line in out.splitlines() if "characters omitted" in line)
    path = Path(marker.split("the whole page is in ", 1)[1].split(":", 1)[0])
    assert path.parent == tmp_path / ".hermes" / "web"  # inside the confined directory
    full = path.read_text()
    assert all(s in " ".join(full.split()) for s in article.sentences)
    offset = int(marker.split("offset=", 1)[1].split(")", 1)[0])
    page = dispatch("read_file", {"path": str(path), "offset": offset, "limit": 3}, ctx)
    omitted_start = out.split("[...", 1)[0].strip().splitlines()[-1]
    assert omitted_start not in page  # read_file starts right after what was shown


def test_huge_page_is_capped_and_never_fully_read(web, tmp_path):
    out = extract(ctx_for(tmp_path, max_page_bytes=1_000_000, page_tokens=300), web.url("/huge"))
    assert "only the first 1,000,000 bytes of 52,428,800 bytes were read" in out
    assert "characters omitted" in out
    assert web.huge_done.wait(30)
    assert web.huge_sent < HUGE_BYTES // 2  # the server stopped: the connection was dropped


def test_other_content_and_failures_say_what_happened(web, tmp_path):
    ctx = ctx_for(tmp_path, timeout=1)
    cases = {"/image.png": "not a text document (image/png", "/nothing": "HTTP 404",
             "/loop": "more than 5 redirects", "/slow": "no complete answer within 1 s"}
    for path, expected in cases.items():
        with pytest.raises(ToolError) as err:
            extract(ctx, web.url(path))
        assert expected in str(err.value) and web.url(path) in str(err.value)
    mixed = extract(ctx, web.url("/article/bees"), web.url("/nothing"))
    assert ARTICLES["bees"].sentences[0] in mixed and "error: the server answered HTTP 404" in mixed
    with pytest.raises(ToolError, match="only http and https"):
        extract(ctx, "file:///etc/passwd")
    with pytest.raises(ToolError, match="at most 5 URLs"):
        extract(ctx, *[web.url(f"/article/tides?{n}") for n in range(6)])


def test_hostile_pages_give_a_clear_result(web, tmp_path):
    ctx = ctx_for(tmp_path, max_page_bytes=2_000_000, page_tokens=300)
    bomb = extract(ctx, web.url("/bomb"))  # 200 MB unpacked: read up to the cap, then dropped
    assert "only the first 2,000,000 bytes were read" in bomb
    try:  # 20,000 levels: past the parser's depth limit, it may keep the text or find none
        nested = extract(ctx, web.url("/nested"))
    except ToolError as exc:
        nested = str(exc)
    assert "deep text" in nested or "the page has no readable text" in nested
    with pytest.raises(ToolError, match=r"not a text document \(application/octet-stream"):
        extract(ctx, web.url("/binary"))
    assert "café au lait" in extract(ctx, web.url("/badcharset"))


def test_guard_refuses_loopback_and_every_redirect_hop(web, other, tmp_path):
    trusted = f"127.0.0.1:{web.port}"  # the page itself is allowed; where it redirects is not
    ctx = ctx_for(tmp_path, allow_private=False, allow_hosts=[trusted])
    assert ARTICLES["tides"].sentences[0] in extract(ctx, web.url("/article/tides"))
    for target in (other.url("/secret"), other.url("/secret", host="localhost"),
                   f"http://[::ffff:127.0.0.1]:{other.port}/secret",
                   "http://169.254.169.254/latest/meta-data/"):
        with pytest.raises(ToolError) as err:
            extract(ctx, web.url(f"/redirect?to={target}"))
        assert f"redirected to {target}, which is refused" in str(err.value)
        assert "web.allow_private: true" in str(err.value)
    with pytest.raises(ToolError, match="loopback address"):
        extract(ctx_for(tmp_path, allow_private=False), web.url("/article/tides"))
    assert other.hits["/secret"] == 0
    opened = extract(ctx_for(tmp_path), web.url(f"/redirect?to={other.url('/secret')}"))
    assert "the internal secret" in opened and "(redirected from" in opened


def test_address_rule():
    refused = {"127.0.0.1": "loopback", "10.2.3.4": "private", "172.16.5.4": "private",
               "192.168.0.1": "private", "169.254.169.254": "metadata", "100.64.1.1": "NAT",
               "100.100.100.200": "metadata", "224.0.0.251": "multicast", "0.0.0.0": "unspecified",
               "::1": "loopback", "fe80::1": "link-local", "fd12::1": "private",
               "::ffff:10.0.0.1": "private", "fd00:ec2::254": "metadata"}
    for addr, word in refused.items():
        assert word in (address_problem(ipaddress.ip_address(addr)) or ""), addr
    for addr in ("93.184.216.34", "2606:4700:4700::1111", "8.8.8.8"):
        assert address_problem(ipaddress.ip_address(addr)) is None
