"""One scanner for text that would steer the model against its user (SPEC §8, §9). Pure.

Used on memory writes (refused), on the memory snapshot (masked) and on context files (offending
lines held back). It looks for instructions to ignore the rules, hidden Unicode, secrets being sent
somewhere, and credentials themselves, after folding look-alike letters (``agent.confusables``:
NFKC plus Cyrillic and Greek letters drawn like Latin ones). Deliberately narrow: a false alarm on
a project's AGENTS.md costs the user a line of their instructions, so ordinary shell and URL
mentions pass.
"""
from __future__ import annotations

import re
from typing import Optional

from hermes_core.confusables import fold
from hermes_core.redact import CREDENTIAL as _CREDENTIAL

_OVERRIDE = re.compile(
    r"\b(ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}?"
    r"\b(previous|prior|above|earlier|all|any|your|the|system|safety)\b[^.\n]{0,30}?"
    r"\b(instructions?|rules?|prompts?|directives?|guidelines?|guardrails?)\b", re.I)
_SECRECY = re.compile(
    r"\b(do not|don't|never)\s+(tell|inform|mention|reveal|show)\b[^.\n]{0,20}\b(the )?user\b"
    r"|\bwithout (telling|informing|asking) the user\b", re.I)
_REVEAL = re.compile(
    r"\b(reveal|print|output|repeat|dump|leak)\b[^.\n]{0,20}"
    r"\b(system prompt|hidden instructions)\b", re.I)
# zero-width space/marks, bidi overrides, word joiners, BOM, tag characters (ZWJ/ZWNJ are left
# alone: emoji sequences and Persian text need them)
_HIDDEN = re.compile(
    "[\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]")
_SENSITIVE = re.compile(
    r"(~|\$HOME|/home/\w+|/root)/\.ssh\b|\bid_(rsa|ed25519|ecdsa|dsa)\b"
    r"|\.aws/credentials|/etc/shadow|\.netrc\b|(^|[\s/'\"])\.env\b"
    r"|\$\{?\w*(API_KEY|TOKEN|SECRET|PASSWORD)\w*\}?"
    r"|\b(the|your|all|these|my)\s+(api[ _-]?keys?|credentials|passwords?|secrets?|tokens?|"
    r"conversations?|chat history|memory|memories|notes|files)\b", re.I)
_SEND = re.compile(
    r"\b(curl|wget|nc|netcat|scp|rsync|send|post|upload|exfiltrate|forward|transmit|email)\b"
    r"[^\n]{0,120}?(https?://|ftp://|\b\w+@[\w.-]+\.\w+\b|\b\d{1,3}(\.\d{1,3}){3}\b)", re.I)
_SSH_ANY = re.compile(r"(~|\$HOME|/home/\w+|/root)/\.ssh\b|\bid_(rsa|ed25519|ecdsa|dsa)\b", re.I)


def scan(text: str, strict: bool = False) -> Optional[str]:
    """Why ``text`` looks like injection or exfiltration (a short phrase), or None when it is clean.

    ``strict`` (memory entries) also refuses any mention of SSH keys: a durable note has no
    business pointing at them, while a project's instructions may mention them legitimately.
    """
    if not text:
        return None
    # a leading BOM is an editor's, not a trick
    body = text[1:] if text.startswith("\ufeff") else text
    if _HIDDEN.search(body):
        return "invisible Unicode characters"
    body = fold(body)  # look-alike letters from other scripts match as the Latin ones they mimic
    if _CREDENTIAL.search(body):
        return "a credential (API key or private key)"
    if _OVERRIDE.search(body):
        return "an instruction to ignore the rules"
    if _SECRECY.search(body):
        return "an instruction to hide things from the user"
    if _REVEAL.search(body):
        return "a request to reveal the system prompt"
    if _SEND.search(body) and _SENSITIVE.search(body):
        return "sending secrets or data to an outside address"
    if strict and _SSH_ANY.search(body):
        return "a reference to SSH keys"
    return None


def scan_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, reason) for every offending line of a context file."""
    found = []
    for n, line in enumerate(text.split("\n"), start=1):
        reason = scan(line if n > 1 else line.lstrip("\ufeff"))
        if reason:
            found.append((n, reason))
    return found
