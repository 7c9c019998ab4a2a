"""The REPL's input line (prompt_toolkit): Enter sends, Alt+Enter/Esc+Enter adds a line, Ctrl+C
clears (then, twice at an empty prompt, quits), and slash completion of commands and skills.

Tab completes from what is typed *now*, computed on the spot: completion-while-typing runs in the
background, so a Tab that arrived in the same burst as the text (a fast typist, a paste, a
terminal multiplexer) used to find no completion ready and did nothing.
"""
from __future__ import annotations

from typing import Any, Callable

from hermes_cli import slash


class QuitArm:
    """Two Ctrl+C in a row at an empty prompt quit; typing in between disarms. The first one is
    handled inside the prompt (its ``hint`` printed above it, the prompt staying up), so the
    second, however quick, is a key press of the same prompt. Between two prompts the terminal
    is cooked: the second used to be a signal racing prompt_toolkit's start, which could lose it.
    """

    def __init__(self, hint: Callable[[], None]) -> None:
        self.hint, self.armed = hint, False


def prompt_session(history_path: str, quit_arm: QuitArm,
                   skills: Callable[[], list[tuple[str, str]]] = list) -> Any:
    """A PromptSession over ``history_path``; completion offers the commands, then the skills
    ``skills()`` lists. Ctrl+C at an empty prompt: the first arms ``quit_arm``, the second ends
    the prompt with EOFError (as Ctrl+D)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import CompleteEvent, Completer, Completion
    from prompt_toolkit.filters import has_completions
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    class SlashCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any):  # type: ignore[override]
            text = document.text_before_cursor
            extra = skills() if text.startswith("/") and " " not in text else []
            for name, help_text in slash.completions(text, extra):
                yield Completion(name, start_position=-len(text), display_meta=help_text)

    completer = SlashCompleter()
    kb = KeyBindings()

    @kb.add("enter", eager=True)
    def _send(event: Any) -> None:
        event.current_buffer.validate_and_handle()

    @kb.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    @kb.add("tab", filter=~has_completions)
    def _complete_now(event: Any) -> None:
        buf = event.current_buffer
        asked = CompleteEvent(completion_requested=True)
        found = list(completer.get_completions(buf.document, asked))
        if len(found) == 1:
            buf.apply_completion(found[0])
        elif found:
            buf.start_completion(insert_common_part=True)

    kb.add("c-c")(lambda event: _ctrl_c(event, quit_arm))
    kb.add("<sigint>")(lambda event: _ctrl_c(event, quit_arm))  # one that came as a signal
    session = PromptSession(history=FileHistory(history_path), completer=completer,
                            complete_while_typing=True, key_bindings=kb, multiline=True,
                            reserve_space_for_menu=4,
                            prompt_continuation=lambda width, line, wrap: "." * (width - 1) + " ")
    session.default_buffer.on_text_changed += lambda _buf: setattr(quit_arm, "armed", False)
    return session


def _ctrl_c(event: Any, quit_arm: QuitArm) -> None:
    """Clear what was typed; at an empty prompt, arm quitting (the hint above the prompt) or
    quit (EOFError, as Ctrl+D) when armed."""
    from prompt_toolkit.application import run_in_terminal

    buf = event.current_buffer
    if buf.text:
        buf.reset()
    elif quit_arm.armed:
        event.app.exit(exception=EOFError())
    else:
        quit_arm.armed = True
        run_in_terminal(quit_arm.hint)
