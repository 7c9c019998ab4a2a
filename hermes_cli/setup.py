"""`hermes setup`: a short wizard (or flags) that writes config.yaml and keeps the key in .env.

Three choices cover what people run: the embedded local model (offline, no key), any
OpenAI-compatible URL (vLLM, llama.cpp server, Ollama, OpenAI itself) and OpenRouter.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Optional

from hermes_core.config import OPENROUTER_BASE_URL, ConfigError, config_path, parse_config, read_raw_config
from hermes_cli.config_cmd import mask, write_config, write_env_var

_ALIASES = {
    "local": "local", "embedded": "local",
    "custom": "custom", "openai-compatible": "custom", "openai_compatible": "custom", "url": "custom",
    "openai": "openai",
    "openrouter": "openrouter",
}
DEFAULT_MODELS = {"openrouter": "anthropic/claude-sonnet-4", "openai": "gpt-4o-mini", "custom": "default"}


def normalise_provider(name: Optional[str], base_url: Optional[str]) -> str:
    if not name:
        return "custom" if base_url else "local"
    key = name.strip().lower()
    if key not in _ALIASES:
        raise ConfigError(f"unknown provider {name!r}; choose local, custom (any OpenAI-compatible URL), openai or openrouter")
    return _ALIASES[key]


def apply(provider: str, base_url: Optional[str], model: Optional[str], api_key: Optional[str],
          model_path: Optional[str] = None, out=sys.stdout) -> int:
    """Write the choice; validated before anything touches the disk."""
    if provider == "custom" and not base_url:
        raise ConfigError("an OpenAI-compatible provider needs --base-url (e.g. http://localhost:8000/v1)")
    raw = read_raw_config()
    section = raw.get("model") if isinstance(raw.get("model"), dict) else {}
    section = dict(section)
    section["provider"] = provider
    for k in ("base_url", "api_key", "default", "path"):
        section.pop(k, None)
    if provider == "custom":
        section["base_url"] = base_url
    elif provider == "openrouter" and base_url and base_url != OPENROUTER_BASE_URL:
        section["base_url"] = base_url
    elif provider == "openai" and base_url:
        section["base_url"] = base_url
    if provider == "local":
        if model_path:
            section["path"] = model_path
        if model:
            section["default"] = model
    else:
        section["default"] = model or DEFAULT_MODELS.get(provider, "default")
    raw["model"] = section
    parse_config(raw, str(config_path()))
    p = write_config(raw)
    out.write(f"✓ wrote {p} (provider {provider}" + (f", model {section.get('default')}" if section.get("default") else "") + ")\n")
    if api_key:
        var = "OPENROUTER_API_KEY" if provider == "openrouter" else "OPENAI_API_KEY"
        envp = write_env_var(var, api_key)
        out.write(f"✓ saved {var} in {envp} (mode 600): {mask(api_key)}\n")
    out.write("Next: `hermes doctor` checks the set-up, `hermes` starts a chat.\n")
    return 0


def _ask(prompt: str, default: Optional[str] = None, reader: Callable[[str], str] = input) -> str:
    suffix = f" [{default}]" if default else ""
    answer = reader(f"{prompt}{suffix}: ").strip()
    return answer or (default or "")


def wizard(reader: Callable[[str], str] = input, secret_reader: Optional[Callable[[str], str]] = None,
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
    default_choice = {"custom": "2", "openai": "2", "openrouter": "3"}.get(current.get("provider") or "", "1")
    while True:
        choice = _ask("Choose 1, 2 or 3", default_choice, reader)
        if choice in ("1", "2", "3"):
            break
        out.write("Please type 1, 2 or 3.\n")
    if choice == "1":
        path = _ask("GGUF file (Enter for the bundled SmolLM2-135M-Instruct)", current.get("path"), reader)
        return apply("local", None, None, None, model_path=path or None, out=out)
    if choice == "2":
        url = ""
        while not url.startswith(("http://", "https://")):
            url = _ask("Base URL (ending in /v1)", current.get("base_url") or "http://localhost:8000/v1", reader)
            if not url.startswith(("http://", "https://")):
                out.write("The URL must start with http:// or https://.\n")
        model = _ask("Model name", current.get("default") or "default", reader)
        key = secret_reader("API key (Enter for none / keep the current one): ").strip()
        return apply("custom", url, model, key or None, out=out)
    model = _ask("Model", current.get("default") or DEFAULT_MODELS["openrouter"], reader)
    key = secret_reader("OpenRouter API key (Enter keeps the current one): ").strip()
    return apply("openrouter", None, model, key or None, out=out)


def run(args: Any) -> int:
    if getattr(args, "non_interactive", False) or any(
        getattr(args, k, None) for k in ("setup_provider", "setup_base_url", "setup_model", "setup_api_key")
    ):
        provider = normalise_provider(args.setup_provider, args.setup_base_url)
        return apply(provider, args.setup_base_url, args.setup_model, args.setup_api_key,
                     model_path=getattr(args, "setup_model_path", None))
    if not sys.stdin.isatty():
        raise ConfigError("setup needs a terminal; without one use `hermes setup --non-interactive --provider ... --model ...`")
    try:
        return wizard()
    except (EOFError, KeyboardInterrupt):
        sys.stdout.write("\nSet-up cancelled; nothing was changed.\n")
        return 1
