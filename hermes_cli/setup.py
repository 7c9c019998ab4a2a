"""`hermes setup`: a short wizard (or flags) that writes config.yaml and keeps the key in .env.

Three choices cover what people run: the embedded local model (offline, no key), any
OpenAI-compatible URL (vLLM, llama.cpp server, Ollama, OpenAI itself) and OpenRouter. A URL is
normalised (scheme, `/v1`) and its models list is asked for before anything is written, so the
user learns at once what the endpoint serves; the model is picked from that list when none is given.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, Optional
from urllib.parse import urlsplit

from agent.providers import models
from hermes_core import provider_table as catalog
from hermes_core.config import ConfigError, config_path, parse_config, read_raw_config
from hermes_cli.config_cmd import mask, write_config, write_env_var
from hermes_cli.parsing import provider_help, provider_name

SETUP_TIMEOUT = float(os.environ.get("HERMES_SETUP_TIMEOUT", "5"))


def normalise_provider(name: Optional[str], base_url: Optional[str]) -> str:
    try:
        info = catalog.lookup(name)
    except catalog.UnknownProvider as exc:
        raise ConfigError(str(exc)) from None
    if info is None:
        return "custom" if base_url else "local"
    return info.name


def normalise_url(text: str) -> tuple[str, list[str]]:
    """`127.0.0.1:8000` -> `http://127.0.0.1:8000/v1`, with a note per change. Pure."""
    url, notes = text.strip().rstrip("/"), []
    if "://" not in url:
        url = "http://" + url
        notes.append("no scheme given: using http://")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{text!r} is not an http(s) URL; give one like http://localhost:8000/v1")
    if parts.path in ("", "/"):
        url += "/v1"
        notes.append("no path given: OpenAI-compatible servers answer under /v1")
    return url, notes


def find_endpoint(url: str, api_key: Optional[str]) -> tuple[str, models.Probe]:
    """Ask for the models list at ``url``; when it is not there and ``url`` does not end in /v1,
    try ``url/v1`` (a base URL given without its /v1)."""
    found = models.probe(url, api_key, SETUP_TIMEOUT)
    if found.ids or found.status in (401, 403) or url.rstrip("/").endswith("/v1"):
        return url, found
    retry = models.probe(url.rstrip("/") + "/v1", api_key, SETUP_TIMEOUT)
    return (url.rstrip("/") + "/v1", retry) if retry.ids else (url, found)


def found_line(url: str, found: models.Probe) -> str:
    """What the probe found, for the user."""
    shown = models.shown_url(url)
    if found.ids:
        listed = ", ".join(found.ids[:8]) + (" …" if len(found.ids) > 8 else "")
        n = len(found.ids)
        return f"✓ {shown} answers: {n} model{'s' if n != 1 else ''} ({listed})"
    if found.status in (401, 403):
        return (f"⚠ {shown} refused the API key (HTTP {found.status}); saved anyway, fix the "
                "key later")
    if found.reachable:
        return f"⚠ {shown} answers but lists no models ({found.error}); saved anyway"
    return (f"⚠ could not reach {shown} ({found.error}); saved anyway, `hermes doctor` checks it "
            "again once the server runs")


def pick_model(model: Optional[str], found: models.Probe, url: str) -> Optional[str]:
    """The model to write: the one given, else the only one served; several need a choice
    (ConfigError listing them); nothing known: None (the endpoint is asked at run time)."""
    if model:
        return model
    if not found.ids:
        return None
    return models.choose(found.ids, models.shown_url(url))


def apply(provider: str, base_url: Optional[str], model: Optional[str], api_key: Optional[str],
          model_path: Optional[str] = None, out=sys.stdout,
          found: Optional[models.Probe] = None) -> int:
    """Write the choice; validated (and the endpoint asked) before anything touches the disk."""
    info = catalog.PROVIDERS[provider]
    if info.needs_base_url and not base_url:
        raise ConfigError("an OpenAI-compatible provider needs --base-url "
                          "(e.g. http://localhost:8000/v1)")
    raw = read_raw_config()
    section = dict(raw.get("model") if isinstance(raw.get("model"), dict) else {})
    section["provider"] = provider
    for k in ("base_url", "api_key", "default", "path"):
        section.pop(k, None)
    if provider == "local":
        section.update({k: v for k, v in (("path", model_path), ("default", model)) if v})
    else:
        url, notes = normalise_url(base_url or info.base_url or "")
        for note in notes:
            out.write(f"• {note}\n")
        if found is None:
            url, found = find_endpoint(url, api_key or catalog.key_from_env(info, os.environ))
        out.write(found_line(url, found) + "\n")
        chosen = pick_model(model, found, url) or info.default_model
        if url != info.base_url:
            section["base_url"] = url
        if chosen:
            section["default"] = chosen
    raw["model"] = section
    parse_config(raw, str(config_path()))
    p = write_config(raw)
    what = f", model {section['default']}" if section.get("default") else (
        "" if provider == "local" else ", no model yet: the endpoint's list decides at run time")
    out.write(f"✓ wrote {p} (provider {provider}{what})\n")
    if api_key:
        envp = write_env_var(info.key_var or "OPENAI_API_KEY", api_key)
        out.write(f"✓ saved {info.key_var} in {envp} (mode 600): {mask(api_key)}\n")
    out.write("Next: `hermes doctor` checks the set-up, `hermes` starts a chat.\n")
    return 0


def _ask(prompt: str, default: Optional[str] = None, reader: Callable[[str], str] = input) -> str:
    suffix = f" [{default}]" if default else ""
    answer = reader(f"{prompt}{suffix}: ").strip()
    return answer or (default or "")


def _ask_url(current: Optional[str], reader: Callable[[str], str], out: Any) -> str:
    while True:
        try:
            url, notes = normalise_url(_ask("Base URL (ending in /v1)", current or
                                            "http://localhost:8000/v1", reader))
        except ConfigError as exc:
            out.write(f"{exc}\n")
            continue
        for note in notes:
            out.write(f"• {note}\n")
        return url


def _ask_model(found: models.Probe, current: Optional[str], reader: Callable[[str], str],
               out: Any) -> Optional[str]:
    """Several models: a numbered choice; else a name (Enter: the one served, or none)."""
    if len(found.ids) > 1:
        for i, name in enumerate(found.ids[:30], 1):
            out.write(f"  {i}) {name}\n")
        while True:
            answer = _ask("Model (number or name)", current or "1", reader)
            if answer.isdigit() and 1 <= int(answer) <= min(30, len(found.ids)):
                return found.ids[int(answer) - 1]
            if answer and not answer.isdigit():
                return answer
            out.write("Please type one of the numbers, or a model name.\n")
    default = current or (found.ids[0] if found.ids else None)
    return _ask("Model name (Enter: ask the endpoint each run)" if not default else "Model name",
                default, reader) or None


def wizard(reader: Callable[[str], str] = input,
           secret_reader: Optional[Callable[[str], str]] = None,
           out=sys.stdout) -> int:
    """Ask three or four questions; Enter keeps the suggested answer."""
    if secret_reader is None:
        import getpass

        secret_reader = getpass.getpass
    raw = read_raw_config()
    current = raw.get("model") if isinstance(raw.get("model"), dict) else {}
    out.write("Hermes set-up. Which model should hermes talk to?\n"
              "  1) the embedded local model (offline, small, no key)\n"
              "  2) an OpenAI-compatible endpoint (vLLM, llama.cpp server, Ollama, OpenAI, ...)\n"
              "  3) OpenRouter\n")
    default_choice = {"custom": "2", "openai": "2", "openrouter": "3"}.get(
        current.get("provider") or "", "1")
    while True:
        choice = _ask("Choose 1, 2 or 3", default_choice, reader)
        if choice in ("1", "2", "3"):
            break
        out.write("Please type 1, 2 or 3.\n")
    if choice == "1":
        path = _ask("GGUF file (Enter for the bundled SmolLM2-135M-Instruct)",
                    current.get("path"), reader)
        return apply("local", None, None, None, model_path=path or None, out=out)
    provider = "custom" if choice == "2" else "openrouter"
    url = (_ask_url(current.get("base_url"), reader, out) if choice == "2"
           else catalog.OPENROUTER_BASE_URL)
    label = "API key" if choice == "2" else "OpenRouter API key"
    key = secret_reader(f"{label} (Enter for none / keep the current one): ").strip() or None
    info = catalog.PROVIDERS[provider]
    url, found = find_endpoint(url, key or catalog.key_from_env(info, os.environ))
    out.write(found_line(url, found) + "\n")
    suggested = current.get("default") or (None if found.ids else info.default_model)
    model = _ask_model(found, suggested, reader, out)
    return apply(provider, url, model, key, out=out, found=found)


def add_parser(sub: Any) -> None:
    ps = sub.add_parser("setup",
                        help="choose a model provider (wizard, or flags with --non-interactive)")
    ps.add_argument("--non-interactive", action="store_true", help="use the flags, ask nothing")
    ps.add_argument("--provider", dest="setup_provider", type=provider_name, help=provider_help())
    ps.add_argument("--base-url", dest="setup_base_url", metavar="URL")
    ps.add_argument("--model", dest="setup_model")
    ps.add_argument("--api-key", dest="setup_api_key", metavar="KEY")
    ps.add_argument("--model-path", dest="setup_model_path", metavar="GGUF",
                    help="GGUF file for provider local")
    ps.set_defaults(func=run)


def run(args: Any) -> int:
    flags = ("setup_provider", "setup_base_url", "setup_model", "setup_api_key")
    if getattr(args, "non_interactive", False) or any(getattr(args, k, None) for k in flags):
        provider = normalise_provider(args.setup_provider, args.setup_base_url)
        return apply(provider, args.setup_base_url, args.setup_model, args.setup_api_key,
                     model_path=getattr(args, "setup_model_path", None))
    if not sys.stdin.isatty():
        raise ConfigError("setup needs a terminal; without one use `hermes setup --non-interactive "
                          "--provider ... --model ...`")
    try:
        return wizard()
    except (EOFError, KeyboardInterrupt):
        sys.stdout.write("\nSet-up cancelled; nothing was changed.\n")
        return 1
