"""Which paths the file tools may touch without asking: pure decisions, no I/O beyond `Path` math.

Three rules, each with its own reason text (the user reads it in the approval question or the
tool error):
- secrets (`secret_reason`): Hermes' own `.env`, session store and pairing data, `~/.ssh`, and
  private key files. Reading them is as dangerous as writing: their content would reach the
  model, the transcript and, through a chat, whoever is on the other side.
- system areas (`system_write_reason`): writes to `/etc`, shell start-up files, devices.
- confinement (`outside_root`): a gateway agent's file tools stay inside its working directory.
"""
from __future__ import annotations

import re
from pathlib import Path

# In HERMES_HOME: the secrets file, the session store (every transcript) and its WAL/SHM, the
# pairing data (who may talk to the bot), and Hermes Agent's credential store.
HERMES_SECRET_FILES = {".env": "holds Hermes' API keys", "auth.json": "holds login credentials",
                       "state.db": "holds every transcript",
                       "state.db-wal": "holds every transcript",
                       "state.db-shm": "holds every transcript"}
HERMES_SECRET_DIRS = {"pairing": "holds who may talk to the bot",
                      "users": "holds each chat user's private memory"}
KEY_FILE_NAMES = frozenset({"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk",
                            "id_ed25519_sk", "identity"})
KEY_FILE_SUFFIXES = frozenset({".key", ".p12", ".pfx", ".ppk", ".jks", ".keystore"})
KEY_HEADER = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
KEY_SNIFF_BYTES = 4096  # a PEM header sits at the top; this much is enough to see it

_SHELL_FILES = (".bashrc", ".bash_profile", ".profile", ".zshrc", ".zprofile", ".gitconfig",
                ".netrc")


def _inside(full: Path, root: Path) -> bool:
    return full == root or root in full.parents


def secret_reason(full: Path, home: Path, hermes_home: Path) -> str | None:
    """Why `full` (a resolved path) holds secrets, or None. `home`/`hermes_home` resolved too."""
    if full.parent == hermes_home and full.name in HERMES_SECRET_FILES:
        return f"HERMES_HOME/{full.name} {HERMES_SECRET_FILES[full.name]}"
    for name, why in HERMES_SECRET_DIRS.items():
        if _inside(full, hermes_home / name):
            return f"HERMES_HOME/{name} {why}"
    if _inside(full, home / ".ssh"):
        return "~/.ssh holds SSH keys and credentials"
    if full.name in KEY_FILE_NAMES or full.suffix.lower() in KEY_FILE_SUFFIXES:
        return f"{full.name} looks like a private key file"
    return None


def is_private_key(head: bytes) -> bool:
    """True when the first bytes of a file (or text being written) carry a private key header."""
    return bool(KEY_HEADER.search(head[:KEY_SNIFF_BYTES]))


def system_write_reason(full: Path, home: Path) -> str | None:
    """Why writing `full` needs the user's approval (system config, shell start-up, devices)."""
    if _inside(full, Path("/etc")):
        return "writes to /etc (system configuration)"
    if full.parent == home and full.name in _SHELL_FILES:
        return f"writes to ~/{full.name} (runs at every login or holds credentials)"
    if Path("/dev") in full.parents or Path("/boot") in full.parents:
        return "writes to a device or boot file"
    return None


def outside_root(full: Path, root: Path) -> bool:
    """True when `full` is not `root` or below it (both resolved, so symlinks cannot escape)."""
    return not _inside(full, root)
