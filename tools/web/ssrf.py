"""The SSRF guard: which addresses a page fetched for the model may come from.

A URL the model chose must not reach the machine's own services, the local network or a cloud
metadata endpoint. The rule is about addresses, not names: every address a host name resolves to
is checked (one bad address refuses the host), and the caller connects only to the addresses that
were checked, so a name that re-resolves differently later (DNS rebinding) gains nothing. Every
redirect hop goes through the same check. ``web.allow_private: true`` turns the guard off;
``web.allow_hosts`` exempts named hosts (``host`` or ``host:port``), e.g. an intranet wiki.

``address_problem`` and ``host_exempt`` are pure; ``resolve_checked`` does the DNS lookup.
"""
from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from typing import Optional, Union
from urllib.parse import urlsplit

IP = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]

# Cloud metadata services outside the link-local range (which is refused as a whole anyway).
METADATA = {
    ipaddress.ip_address("169.254.169.254"): "the cloud metadata service",
    ipaddress.ip_address("100.100.100.200"): "Alibaba Cloud's metadata service",
    ipaddress.ip_address("fd00:ec2::254"): "AWS's IPv6 metadata service",
}
CGNAT = ipaddress.ip_network("100.64.0.0/10")
ALLOW_HINT = "set web.allow_private: true (or list the host in web.allow_hosts) to allow it"


class SSRFRefused(Exception):
    """A URL (or a redirect hop) points at an address the guard refuses; the text says which."""


@dataclass(frozen=True)
class GuardPolicy:
    allow_private: bool = False
    allow_hosts: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def from_config(cls, web: object) -> "GuardPolicy":
        return cls(bool(getattr(web, "allow_private", False)),
                   tuple(h.lower() for h in (getattr(web, "allow_hosts", None) or ())))


def address_problem(ip: IP) -> Optional[str]:
    """Why an address may not be fetched (None: a public address). Pure."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return address_problem(ip.ipv4_mapped)
    if ip in METADATA:
        return METADATA[ip]
    checks = (("an unspecified", ip.is_unspecified), ("a loopback", ip.is_loopback),
              ("a link-local", ip.is_link_local), ("a multicast", ip.is_multicast),
              ("a carrier-grade NAT", isinstance(ip, ipaddress.IPv4Address) and ip in CGNAT),
              ("a private", ip.is_private), ("a reserved", ip.is_reserved))
    for label, hit in checks:
        if hit:
            return f"{label} address"
    return None if ip.is_global else "not a public address"


def host_exempt(host: str, port: Optional[int], policy: GuardPolicy) -> bool:
    """The guard is off, or the host (or host:port) is listed in ``web.allow_hosts``. Pure."""
    if policy.allow_private:
        return True
    host = host.lower().strip("[]")
    listed = policy.allow_hosts
    return host in listed or (port is not None and f"{host}:{port}" in listed)


def ip_literal(host: str) -> Optional[IP]:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def check_ip(host: str, ip: IP) -> None:
    problem = address_problem(ip)
    if problem:
        shown = host if ip_literal(host) is not None else f"{host} ({ip})"
        raise SSRFRefused(f"{shown} is {problem}; {ALLOW_HINT}")


def resolve_checked(host: str, port: int, policy: GuardPolicy) -> list[str]:
    """The addresses to connect to for ``host``: all of them checked (raises SSRFRefused), or
    every address unchecked when the host is exempt. Raises OSError when the name is unknown."""
    literal = ip_literal(host)
    if literal is not None:
        if not host_exempt(host, port, policy):
            check_ip(host, literal)
        return [str(literal)]
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not host_exempt(host, port, policy):
        for addr in addresses:
            check_ip(host, ipaddress.ip_address(addr.split("%", 1)[0]))
    return addresses


def check_url(url: str, policy: GuardPolicy) -> tuple[str, int]:
    """(host, port) of an http(s) URL the model may fetch; SSRFRefused for other schemes or an
    IP literal the guard refuses (names are checked when they are resolved). Pure."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise SSRFRefused(f"{url!r}: only http and https URLs can be fetched")
    host = parts.hostname or ""
    if not host:
        raise SSRFRefused(f"{url!r} has no host name")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise SSRFRefused(f"{url!r} has an invalid port") from None
    literal = ip_literal(host)
    if literal is not None and not host_exempt(host, port, policy):
        check_ip(host, literal)
    return host, port
