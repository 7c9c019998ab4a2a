"""Test articles for web_extract and bench/web.py: realistic pages whose main text and
boilerplate are known, so extraction can be scored (main text recovered, boilerplate kept out).

Each ``Article`` has the sentences of its main text and the phrases of its boilerplate (menus,
sidebars, cookie banners, footers, comments, share buttons); ``html`` renders the page. The
layouts differ on purpose: semantic HTML5, anonymous div soup, a documentation page with code
and a table.
"""
from __future__ import annotations

import html as _html
from dataclasses import dataclass


@dataclass(frozen=True)
class Article:
    slug: str
    title: str
    paragraphs: tuple[str, ...]
    boilerplate: tuple[str, ...]
    html: str

    @property
    def sentences(self) -> list[str]:
        """The main text as sentences (what recall is measured on)."""
        out = []
        for para in self.paragraphs:
            out += [s.strip() + "." for s in para.split(". ") if len(s.strip()) > 20]
        return [s.replace("..", ".") for s in out]


def _e(text: str) -> str:
    return _html.escape(text, quote=True)


TIDES = (
    "The harbour town of Kelmsford has measured its tides by hand since 1843, when the first "
    "harbourmaster nailed a painted board to the east pier and wrote the height of every high "
    "water in a leather ledger. The ledgers survive in the town archive, one volume for each "
    "decade, and the entries are so regular that climate researchers now treat them as one of "
    "the longest continuous sea level records in northern Europe.",
    "Volunteers spent three winters copying the handwritten numbers into a spreadsheet. They "
    "found that the average high water at the east pier rose by twenty-one centimetres between "
    "the first decade and the last, with most of the change after 1950. The project lead, a "
    "retired schoolteacher named Agnes Marlow, says the hardest part was reading the ink of the "
    "1870s, when the harbourmaster of the day used a pale brown mixture that has faded badly.",
    "The records also show storms that the town had forgotten. In February 1899 the ledger "
    "notes a surge that flooded the fish market and carried two boats into the square, an event "
    "that appears in no newspaper of the time. Historians matched the date with a letter in the "
    "parish archive describing the same flood, which confirmed that the ledger is trustworthy "
    "even for unusual days.",
    "Today the painted board is gone, replaced by a radar gauge that reports every minute, but "
    "the harbour office still writes the daily high water in a ledger. The current "
    "harbourmaster says the habit costs him two minutes a day and keeps the series unbroken. "
    "He plans to hand the pen to his deputy when he retires next spring.",
    "The digitised series will be published in an open archive so that anyone can check the "
    "numbers against the scanned pages. The team hopes other harbours along the coast will "
    "search their own cellars for similar books before damp and mice finish them off.",
)
TIDES_BOILER = (
    "Home", "World news", "Local politics", "Weather forecast", "Subscribe for unlimited access",
    "We use cookies to improve your experience on our site", "Accept all cookies",
    "Most read this week", "Ten recipes for a rainy Sunday afternoon",
    "Why the ferry timetable changed again", "Share on social media", "Copy link",
    "Comments are moderated before they appear", "Great article, my grandfather worked there!",
    "Does anyone know if the ledgers can be visited?", "Contact the newsroom",
    "Privacy policy", "Terms of use", "Copyright 2026 Kelmsford Courier Ltd",
)


def _tides() -> Article:
    title = "A harbour's handwritten tide ledgers become a climate record"
    b = TIDES_BOILER
    paras = "".join(f"<p>{_e(p)}</p>\n" for p in TIDES)
    page = f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)} -
Kelmsford Courier</title><meta name="description" content="Tide ledgers"></head><body>
<div class="cookie-banner"><p>{b[5]}.</p><button>{b[6]}</button></div>
<header><div class="logo">Kelmsford Courier</div><nav><ul><li><a href="/">{b[0]}</a></li>
<li><a href="/world">{b[1]}</a></li><li><a href="/politics">{b[2]}</a></li>
<li><a href="/weather">{b[3]}</a></li></ul></nav><a class="cta" href="/sub">{b[4]}</a></header>
<main><article><h1>{_e(title)}</h1><p class="byline">By Tom Reyes, 3 March 2026</p>
{paras}<div class="share"><a href="#">{b[10]}</a> <a href="#">{b[11]}</a></div></article>
<section class="comments"><h2>Comments</h2><p class="note">{b[12]}.</p>
<div class="comment"><b>harbourfan</b><p>{b[13]}</p></div>
<div class="comment"><b>curious_reader</b><p>{b[14]}</p></div></section></main>
<aside><h3>{b[7]}</h3><ol><li><a href="/r1">{b[8]}</a></li><li><a href="/r2">{b[9]}</a></li>
</ol></aside><footer><a href="/contact">{b[15]}</a> | <a href="/privacy">{b[16]}</a> |
<a href="/terms">{b[17]}</a><p>{b[18]}</p></footer></body></html>"""
    return Article("tides", title, TIDES, b, page)


BEES = (
    "Keeping bees on a city roof sounds romantic until the first hot afternoon in July, when a "
    "colony of forty thousand insects decides the hive is too crowded. I have kept two hives on "
    "the roof of our apartment block for six years now, and swarming is still the event I "
    "prepare for most carefully every spring.",
    "A swarm is not an attack. The old queen leaves with roughly half of the workers, and the "
    "cluster hangs from a branch or a railing while scouts look for a new home. The bees are "
    "full of honey and rarely sting, but a ball of bees on the balcony of a neighbour on the "
    "fourth floor is still not the way to stay popular in a shared building.",
    "The best prevention is space. Each week from April onwards I open the brood box and look "
    "for queen cells along the bottom edges of the frames. When I find them I split the colony, "
    "moving the old queen and a few frames into a spare box, which tricks the bees into thinking "
    "they have already swarmed.",
    "Water matters more than people expect. Bees on a roof have no puddles nearby, so I keep a "
    "shallow tray filled with pebbles and rainwater next to the hives. Without it they visit "
    "the dripping air conditioners of the office across the street, and the facilities manager "
    "there has already written to the building committee twice.",
    "The honey from the roof is darker than the honey from the countryside, because the city "
    "trees flower in a different order. Lime trees dominate in June and give a minty flavour "
    "that visitors either love or find strange. Last year the two hives gave us thirty-four "
    "kilograms, most of which went to the neighbours as a thank-you for their patience.",
)
BEES_BOILER = (
    "Skip to content", "The Rooftop Apiary", "About me", "Workshops", "Shop",
    "Sign up for the newsletter and never miss a post", "Your email address",
    "Related posts", "How to build a top bar hive from pallets", "Five plants bees adore",
    "Tags: beekeeping, urban life, swarms", "Leave a reply", "Your email will not be published",
    "Powered by a static site generator", "All rights reserved", "Back to top",
)


def _bees() -> Article:
    title = "Living with swarms: six years of rooftop beekeeping"
    b = BEES_BOILER
    paras = "".join(f'<div class="para"><span>{_e(p)}</span></div>\n' for p in BEES)
    page = f"""<html><head><title>{_e(title)} | {b[1]}</title></head><body>
<div id="top"><a class="skip" href="#c">{b[0]}</a><div class="brand">{b[1]}</div>
<div class="menu"><a href="/about">{b[2]}</a> <a href="/workshops">{b[3]}</a>
<a href="/shop">{b[4]}</a></div></div>
<div id="wrap"><div id="c" class="post"><div class="post-title"><h2>{_e(title)}</h2></div>
<div class="date">June 12, 2026</div><div class="post-body">{paras}</div>
<div class="tags">{b[10]}</div></div>
<div class="sidebar"><div class="widget"><p>{b[5]}</p><input placeholder="{b[6]}"></div>
<div class="widget"><h4>{b[7]}</h4><a href="/p1">{b[8]}</a><br><a href="/p2">{b[9]}</a></div>
</div><div class="respond"><h3>{b[11]}</h3><p>{b[12]}.</p><textarea></textarea></div></div>
<div id="foot"><p>{b[13]}. {b[14]}.</p><a href="#top">{b[15]}</a></div></body></html>"""
    return Article("bees", title, BEES, b, page)


DOCS = (
    "The retry helper runs a callable again when it fails with an error that is worth retrying, "
    "waiting a little longer after each attempt. It exists because network calls fail for "
    "reasons that fix themselves: a server restarting, a rate limit that resets after a minute, "
    "or a connection dropped by a proxy in the middle of a response.",
    "Each wait is the base delay multiplied by two for every earlier attempt, plus a random "
    "jitter of up to half a second. The jitter keeps many clients that failed at the same moment "
    "from retrying at the same moment too, which would only repeat the overload that caused the "
    "failure in the first place.",
    "Errors are sorted into two groups before anything is retried. Timeouts, connection resets "
    "and answers with a status of five hundred or more are retried, while authentication "
    "failures and malformed requests are raised at once, since sending the same bad request "
    "again cannot succeed.",
    "When the server sends a Retry-After header, the helper waits exactly that long instead of "
    "its own computed delay, as long as the value stays below the configured ceiling. Servers "
    "know their own limits better than any client does, so their hint always wins.",
)
DOCS_BOILER = (
    "Documentation home", "Getting started", "API reference", "Changelog", "Search the docs",
    "On this page", "Edit this page on the repository", "Was this page helpful?", "Yes", "No",
    "Previous: Configuration files", "Next: Logging", "Built with a documentation generator",
    "Version 4.2 (latest)",
)


def _docs() -> Article:
    title = "Retrying failed calls"
    b = DOCS_BOILER
    p = [f"<p>{_e(x)}</p>" for x in DOCS]
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{_e(title)} — Docs
</title></head><body><nav class="top"><a href="/">{b[0]}</a> <a href="/start">{b[1]}</a>
<a href="/api">{b[2]}</a> <a href="/changes">{b[3]}</a><input placeholder="{b[4]}">
<span class="version">{b[13]}</span></nav>
<div class="layout"><nav class="toc"><h4>{b[5]}</h4><ul><li><a href="#how">How it waits</a>
</li><li><a href="#which">Which errors</a></li></ul></nav>
<main><h1>{_e(title)}</h1>{p[0]}<h2 id="how">How it waits</h2>{p[1]}
<pre><code>delay = base * 2 ** attempt + random.uniform(0, 0.5)</code></pre>
<h2 id="which">Which errors are retried</h2>{p[2]}
<table><tr><th>Error</th><th>Retried</th></tr><tr><td>Timeout</td><td>yes</td></tr>
<tr><td>HTTP 401</td><td>no</td></tr></table>{p[3]}
<div class="feedback">{b[7]} <button>{b[8]}</button><button>{b[9]}</button></div>
<div class="pager"><a href="/config">{b[10]}</a> <a href="/logging">{b[11]}</a></div>
<a class="edit" href="/edit">{b[6]}</a></main></div>
<footer>{b[12]}</footer></body></html>"""
    return Article("docs", title, DOCS, b, page)


ARTICLES: dict[str, Article] = {a.slug: a for a in (_tides(), _bees(), _docs())}


def normalise(text: str) -> str:
    return " ".join(text.replace("\\", "").replace("*", "").split())


def score(article: Article, extracted: str) -> tuple[float, float]:
    """(main-text recall, boilerplate fraction) of an extraction: the share of the article's
    sentences found in it, and the share of its characters that are known boilerplate."""
    text = normalise(extracted)
    found = sum(1 for s in article.sentences if normalise(s) in text)
    boiler = sum(len(b) for b in article.boilerplate if len(b) >= 5 and b in text)
    return found / len(article.sentences), boiler / max(1, len(text))
