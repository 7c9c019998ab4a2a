"""The skill tools (toolset ``skills``, SPEC §10): skills_list, skill_view and skill_manage.

Thin: discovery is ``agent.skills.loader``, every write ``agent.skills.store`` (validation, lock,
versions). A turn of the background review runs with platform ``skill_review``: its writes go
through the store as actor ``review``, which never edits a bundled skill.
"""
from __future__ import annotations

from typing import Any

from hermes_core.config import hermes_home
from tools.skills import format as fmt
from tools.skills import loader, similar
from tools.skills.activity import REVIEW_PLATFORM
from tools.skills.store import SkillStore, SkillStoreError, support_path
from tools.registry import ToolContext, ToolError, ToolSpec

ACTIONS = ("create", "patch", "edit", "write_file", "remove_file", "delete")


def _catalog(ctx: ToolContext) -> loader.Catalog:
    from tools.skills.bundled import catalog

    return catalog(hermes_home(), ctx.config)


def skills_list(args: dict, ctx: ToolContext) -> dict:
    """Every usable skill, or those of one category; an unknown category names the real ones."""
    cat = _catalog(ctx)
    category = (args.get("category") or "").strip() or None
    skills = [s for s in cat.skills if category is None or s.category == category]
    categories = sorted({s.category or "" for s in cat.skills} - {""})
    if category and not skills:
        raise ToolError(f"no category {category!r}; categories: {', '.join(categories) or 'none'}")
    return {"skills": [{"name": s.name, "category": s.category, "description": s.description}
                       for s in skills],
            "categories": categories}


def _find(cat: loader.Catalog, name: str) -> loader.Skill:
    skill = cat.get(name)
    if skill is not None:
        return skill
    skipped = next((why for s, why in cat.skipped if s.name == name), None)
    if skipped:
        raise ToolError(f"skill {name!r} is not available here ({skipped})")
    close = similar.close_names(name, cat.names())
    hint = f"; did you mean {', '.join(close)}?" if close else "; skills_list shows the skills"
    raise ToolError(f"no skill named {name!r}{hint}")


def skill_view(args: dict, ctx: ToolContext) -> dict:
    """SKILL.md with the list of its files, or one file of the skill."""
    skill = _find(_catalog(ctx), str(args["name"]).strip())
    file_path = (args.get("file_path") or "").strip()
    try:
        if not file_path or file_path == "SKILL.md":
            return {"name": skill.name, "category": skill.category, "path": str(skill.path),
                    "content": loader.read_text(skill.skill_md), "files": skill.files()}
        path = support_path(skill.path, file_path, writing=False)
        if path.is_dir():
            inside = [f for f in skill.files() if f.startswith(file_path.rstrip("/") + "/")]
            return {"name": skill.name, "file_path": file_path, "files": inside}
        if not path.is_file():
            raise ToolError(f"{skill.name} has no file {file_path!r}; its files: "
                            f"{', '.join(skill.files()) or 'none'}")
        size = path.stat().st_size
        if size > fmt.MAX_FILE_BYTES:
            raise ToolError(f"{file_path} is {fmt.human_size(size)}; files over "
                            f"{fmt.human_size(fmt.MAX_FILE_BYTES)} are not shown (use read_file)")
        data = path.read_bytes()
        if not fmt.is_text(data):
            return {"name": skill.name, "file_path": file_path,
                    "content": f"(binary file, {fmt.human_size(size)}: not shown)"}
        return {"name": skill.name, "file_path": file_path, "content": data.decode("utf-8")}
    except (SkillStoreError, fmt.SkillFormatError) as exc:
        raise ToolError(str(exc)) from None
    except OSError as exc:
        raise ToolError(f"cannot read {skill.name}/{file_path or 'SKILL.md'}: "
                        f"{exc.strerror}") from None


def skill_manage(args: dict, ctx: ToolContext) -> dict:
    """Create, patch, edit, write_file, remove_file, delete: validated, locked, versioned."""
    action, name = args["action"], str(args["name"]).strip()
    actor = "review" if ctx.platform == REVIEW_PLATFORM else "agent"
    store = SkillStore(hermes_home(), ctx.config, actor=actor)
    file_path = args.get("file_path")

    def need(key: str) -> Any:
        if args.get(key) is None:
            raise ToolError(f"{action} needs {key}")
        return args[key]

    try:
        if action == "create":
            path = store.create(name, need("content"), args.get("category") or None)
            done = f"created skill {name!r} at {path}"
        elif action == "patch":
            path = store.patch(name, need("old_string"), need("new_string"), file_path)
            done = f"patched {path.name} of {name!r}"
        elif action == "edit":
            path = store.edit(name, need("content"))
            done = f"replaced SKILL.md of {name!r}"
        elif action == "write_file":
            path = store.write_file(name, need("file_path"), need("content"))
            done = f"wrote {file_path} in {name!r}"
        elif action == "remove_file":
            path = store.remove_file(name, need("file_path"))
            done = f"removed {file_path} from {name!r}"
        else:
            path = store.delete(name)
            done = f"deleted skill {name!r}"
    except SkillStoreError as exc:
        raise ToolError(f"{action}: {exc}") from None
    if action != "create":
        done += f" (the previous version is kept: hermes skills history {name})"
    return {"ok": True, "message": done, "path": str(path)}


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_tool(ToolSpec(
        "skills_list", "List the skills: name, category, description.",
        {"type": "object", "properties": {
            "category": {"type": "string", "description": "Only this category."}}},
        skills_list, "skills"))

    ctx.register_tool(ToolSpec(
        "skill_view", "Read a skill: its SKILL.md and list of files, or one of its files.",
        {"type": "object", "properties": {
            "name": {"type": "string"},
            "file_path": {"type": "string",
                          "description": "A file in the skill, e.g. references/api.md."}},
         "required": ["name"]},
        skill_view, "skills"))

    ctx.register_tool(ToolSpec(
        "skill_manage",
        "Create or change a skill (each change keeps the previous version). "
        "create: content is the whole SKILL.md "
        "(front matter with name and description, then the steps). "
        "patch: replace old_string (matching once) with new_string in SKILL.md or file_path. "
        "edit: content replaces SKILL.md. "
        "write_file (content: its text)/remove_file: file_path under references/, templates/, "
        "scripts/ or assets/. "
        "delete: remove the skill.",
        {"type": "object", "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "name": {"type": "string",
                     "description": "Lowercase, digits, . _ -; at most 64 chars."},
            "content": {"type": "string"},
            "category": {"type": "string", "description": "create: a folder to group it in."},
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
            "file_path": {"type": "string"}},
         "required": ["action", "name"]},
        skill_manage, "skills", mutating=True))
