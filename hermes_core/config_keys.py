"""Which config.yaml keys exist, so a typo is named instead of silently ignored. Pure.

The tree of known keys comes from the pydantic models in ``hermes_core.config`` (the ``gateway``
section's in ``hermes_core.gateway_config``), and from Hermes Agent's own keys, which an existing
``~/.hermes/config.yaml`` carries and this runtime accepts without using: those never warn. Under
a section whose contents are free (``mcp_servers``, Hermes Agent's sections) anything goes.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Optional, Union

FREE = "*"  # a section whose keys are not checked
Spec = dict[str, Union[None, str, "Spec"]]  # key -> None (a value), FREE, or the keys below it

# Hermes Agent's top-level sections this runtime does not use (accepted as they are)
HERMES_SECTIONS = (
    "_config_version", "approvals", "attachments", "auth", "browser", "checkpoints",
    "code_execution", "command_allowlist", "context", "custom_providers", "dashboard", "database",
    "discord", "display", "fallback_model", "fallback_providers", "group_sessions_per_user",
    "honcho", "hooks", "hooks_auto_accept", "human_delay", "image_gen", "kanban", "lsp",
    "matrix", "mattermost", "max_concurrent_sessions", "model_aliases", "openrouter",
    "personalities", "platform_toolsets", "platforms", "plugins", "privacy", "prompt_caching",
    "provider_routing", "providers", "quick_commands", "runtime", "secrets", "security",
    "sessions", "signal", "skin", "slack", "smart_model_routing", "streaming", "stt",
    "telemetry", "timeouts", "tool_budget", "tool_loop_guardrails", "tts", "updates", "vision",
    "voice", "wake_word", "web", "whatsapp", "worktree", "worktree_sync",
)
# Hermes Agent's keys inside sections this runtime has too (accepted, not used)
HERMES_KEYS: dict[str, tuple[str, ...]] = {
    "model": ("model", "streaming", "ollama_num_ctx", "default_headers", "extra_headers",
              "auth_mode", "entra", "api_mode"),
    "compression": ("checkpoint_required", "progress_notices", "model_thresholds",
                    "codex_gpt55_autoraise", "min_tail_user_messages", "codex_app_server_auto",
                    "codex_responses_native", "codex_responses_compact_threshold",
                    "idle_compact_after_seconds", "hygiene_max_turn_hold_seconds",
                    "proactive_prune_tokens", "proactive_prune_min_result_chars",
                    "proactive_prune_min_reclaim_tokens", "context_timeout_seconds",
                    "context_total_ceiling_seconds", "summary_model", "summary_provider",
                    "summary_base_url"),
    "agent": ("gateway_timeout", "gateway_turn_lease_timeout", "gateway_timeout_warning",
              "session_stall_timeout", "sanitizer_heal_escalation_threshold",
              "restart_drain_timeout", "cron_drain_timeout", "restart_after_turn_timeout",
              "build_wait_timeout", "api_max_retries", "auto_recovery_cycles", "verify_on_stop",
              "coding_instructions", "verify_guidance", "max_verify_nudges", "verbose",
              "reasoning_effort", "reasoning_overrides", "service_tier", "fast_auto_seconds",
              "personalities", "system_prompt", "tool_use_enforcement",
              "gateway_notify_interval"),
    "terminal": ("backend", "home_mode", "docker_mount_cwd_to_workspace", "lifetime_seconds",
                 "sudo_password", "ssh_host", "ssh_user", "ssh_port", "ssh_key", "docker_image",
                 "docker_run_as_host_user", "docker_forward_env", "docker_extra_args",
                 "singularity_image", "modal_image", "daytona_image", "container_cpu",
                 "container_memory", "container_disk", "container_persistent", "font_family",
                 "env_passthrough", "persistent_shell"),
    "memory": ("nudge_interval", "provider", "flush_min_turns"),
    "skills": ("config", "guard_agent_created"),
    "delegation": ("max_spawn_depth", "orchestrator_enabled", "subagent_auto_approve",
                   "inherit_mcp_toolsets", "provider", "fallback_providers", "reasoning_effort",
                   "default_toolsets"),
    "cron": ("catch_up_missed", "wrap_response"),
    "plugins": ("clone_timeout_seconds",),
    "gateway": ("signal_interrupt_grace_timeout", "trust_env", "room_link_url",
                "max_concurrent_sessions"),
}
AUX_TASK_KEYS = ("model", "base_url", "api_key", "provider", "timeout", "reasoning_effort",
                 "max_concurrency", "no_progress_timeout", "extra_body", "enabled",
                 "download_timeout", "model_upgrade_enabled", "language")
AUX_TASKS = ("summary", "review", "compression", "vision", "web_extract", "tts_audio_tags",
             "tts_rewrite", "title_generation", "session_search", "background_review", "approval",
             "mcp", "flush_memories", "curator", "skills_hub", "moa_reference")

@dataclass(frozen=True)
class UnknownKey:
    path: str  # dotted
    suggestion: Optional[str]  # the closest known key, dotted

    def line(self) -> str:
        hint = f" (did you mean `{self.suggestion}`?)" if self.suggestion else ""
        return f"unknown key `{self.path}`{hint}; it is ignored"


def _model_spec(model: Any) -> Spec:
    from pydantic import BaseModel

    out: Spec = {}
    for name, field in model.model_fields.items():
        ann = field.annotation
        nested = isinstance(ann, type) and issubclass(ann, BaseModel)
        out[name] = _model_spec(ann) if nested else None
    return out


def known_tree() -> Spec:
    """Every key config.yaml may hold, as a tree."""
    from hermes_core.config import HermesConfig

    tree = _model_spec(HermesConfig)
    tree.update(mcp_servers=FREE)
    tree["auxiliary"] = {task: {k: None for k in AUX_TASK_KEYS} for task in AUX_TASKS}
    for section in HERMES_SECTIONS:
        tree.setdefault(section, FREE)
    for section, keys in HERMES_KEYS.items():
        sub = tree[section]
        if isinstance(sub, dict):
            for key in keys:
                sub.setdefault(key, None)
    return tree


def _closest(key: str, spec: Spec, prefix: str) -> Optional[str]:
    match = difflib.get_close_matches(key, [k for k in spec if not k.startswith("_")], n=1,
                                      cutoff=0.6)
    return prefix + match[0] if match else None


def unknown_keys(raw: Any, spec: Optional[Spec] = None, prefix: str = "") -> list[UnknownKey]:
    """The keys of ``raw`` (config.yaml as read) that no one reads, each with the closest known."""
    spec = known_tree() if spec is None else spec
    out: list[UnknownKey] = []
    if not isinstance(raw, dict):
        return out
    for key, value in raw.items():
        key = str(key)
        if key not in spec:
            out.append(UnknownKey(prefix + key, _closest(key, spec, prefix)))
            continue
        sub = spec[key]
        if isinstance(sub, dict) and isinstance(value, dict):
            out += unknown_keys(value, sub, f"{prefix}{key}.")
    return out


def warning_lines(raw: Any, source: str = "config.yaml") -> list[str]:
    """One line per unknown key, for stderr at start-up, the gateway log and doctor."""
    return [f"{source}: {u.line()}" for u in unknown_keys(raw)]


def key_problem(dotted: str) -> Optional[UnknownKey]:
    """For `hermes config set`: the unknown part of a dotted key, or None when it is known."""
    spec: Union[None, str, Spec] = known_tree()
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if spec == FREE:
            return None
        prefix = ".".join(parts[:i]) + ("." if i else "")
        if not isinstance(spec, dict) or part not in spec:
            near = _closest(part, spec, prefix) if isinstance(spec, dict) else None
            rest = "." + ".".join(parts[i + 1:]) if near and i + 1 < len(parts) else ""
            return UnknownKey(dotted, near + rest if near else None)
        spec = spec[part]
    return None
