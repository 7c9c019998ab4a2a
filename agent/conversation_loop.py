"""The turn loop: call the model, run tools, and the compression gates and error paths
(SPEC §2, §6). It drives its host through ``agent.host.TurnHost`` only.

``estimate_request_tokens_rough`` and ``estimate_messages_tokens_rough`` are looked up through
this module's globals at call time (the seed test patches them here); ``jittered_backoff``
through ``run_agent``.
"""
from __future__ import annotations

import logging
from typing import Any, Optional, Union

from agent import results
from agent.callbacks import StatusKind
from agent.conversation_compression import compression_skipped_due_to_lock, made_progress
from agent.providers import fallback, key_pool
from agent.error_classifier import ClassifiedError, ErrorKind, classify_error
from agent.provider_failures import describe
from agent.providers.openai_compat import ModelReply, StreamInterrupted
from agent.host import TurnHost
from agent.request_view import NO_CAP, message_cap, request_messages
from hermes_core.tokens import (PER_MESSAGE_OVERHEAD, estimate_message_tokens,
                                estimate_messages_tokens_rough, estimate_request_tokens_rough,
                                estimate_text_tokens, estimate_tools_tokens, schema_tokens)
from agent.turn_context import TurnState

log = logging.getLogger(__name__)

MAX_RETRIES = 3


class Interrupted(Exception):
    """The user asked the running turn to stop."""


def _request_view(agent: TurnHost, state: TurnState, cut: bool) -> list[dict]:
    """The history as the model gets it (agent.request_view): messages too big for the window cut
    for the model (the store keeps them whole), placeholders between two user messages in a row.
    A message bigger than its share of the window is told to the user, once a turn; cutting the
    biggest ones to fit what compaction left is only logged."""
    comp = agent.context_compressor
    window = getattr(comp, "window", None) or getattr(comp, "context_length", None)
    if not cut or not isinstance(window, int) or window <= 0:
        return request_messages(state.messages, NO_CAP)[0]
    # a little above what the wire carries (schema_tokens), so what is cut to fit does fit
    fixed = (PER_MESSAGE_OVERHEAD + estimate_text_tokens(state.system_prompt or "")
             + schema_tokens(agent.tools))
    cap = message_cap(window, fixed)
    view, cut = agent.request_view.messages(state.messages, cap, window - fixed)
    over = [i for i in cut if estimate_message_tokens(state.messages[i]) > cap]
    if cut:
        log.info("cut %d message(s) to fit a %d-token window for the model", len(cut), window)
    if over and not state.extras.get("cut_noted"):
        state.extras["cut_noted"] = True
        many = len(over) > 1
        agent.emit_status(StatusKind.WARNING,
                          f"{len(over)} message{'s are' if many else ' is'} too big for the "
                          f"model's ~{window:,}-token window: it sees the beginning and the "
                          "end, and the whole text stays in the session store.")
    return view


def api_messages_for(state: TurnState, cut: bool = True) -> list[dict]:
    """The request's messages; ``cut=False``: at full size (what compression decisions measure,
    so a cut for the wire never hides that the history outgrew the window)."""
    view = _request_view(state.agent, state, cut)
    if state.system_prompt:
        return [{"role": "system", "content": state.system_prompt}, *view]
    return view


def request_pressure(agent: TurnHost, state: TurnState,
                     api_messages: Optional[list[dict]] = None) -> int:
    """Tokens the next request will carry: a real reading plus what was added since, else the
    estimate (of ``api_messages``, the full-size view built only when needed)."""
    baseline = agent.usage_baseline
    if baseline is not None and baseline[1] <= len(state.messages):
        return baseline[0] + estimate_messages_tokens_rough(state.messages[baseline[1]:])
    if api_messages is None:
        api_messages = api_messages_for(state, cut=False)
    return estimate_messages_tokens_rough(api_messages) + estimate_tools_tokens(agent.tools)


def _window(comp: Any) -> int:
    return getattr(comp, "window", None) or comp.context_length


def pressure_gate(agent: TurnHost, state: TurnState,
                  api_messages: Optional[list[dict]] = None) -> None:
    """Sites 2 and 5: compress before a request that is over the threshold; lock-skips are
    refunded."""
    comp = agent.context_compressor
    if not agent.compression_enabled or comp is None or len(state.messages) <= 1:
        return
    if not state.attempts_left or state.compression_blocked:
        return
    pressure = request_pressure(agent, state, api_messages)
    if not comp.should_compress(pressure):
        return
    if comp.get_active_compression_failure_cooldown() and pressure <= _window(comp):
        return  # summaries are cooling down; the no-model compaction waits until it won't fit
    state.compression_attempts += 1
    before = state.messages
    new_messages, new_prompt = agent._compress_context(before, state.system_prompt,
                                                       approx_tokens=pressure)
    if compression_skipped_due_to_lock(agent):
        state.compression_attempts -= 1  # another process is compressing: send the request as is
        return
    if made_progress(before, new_messages):
        state.messages = new_messages
        state.system_prompt = new_prompt or state.system_prompt
    else:
        state.compression_blocked = True


def _compress_after_rejection(agent: TurnHost, state: TurnState,
                              err: ClassifiedError) -> Optional[dict]:
    """Sites 3 and 4: the provider said the request is too big. None means: retry the request."""
    comp = agent.context_compressor
    cap = agent.max_compression_attempts
    state.compression_attempts += 1
    too_large = err.kind is ErrorKind.PAYLOAD_TOO_LARGE
    what = "413 Payload Too Large" if too_large else "context length exceeded"
    if state.compression_attempts > cap:
        agent._persist_session(state.messages)
        return results.exhausted_result(state, f"{what} after {cap} compression attempts")
    if comp is None or not agent.compression_enabled:
        agent._persist_session(state.messages)
        return results.exhausted_result(state, f"{what}, and compression is disabled")
    window_before = comp.context_length
    if err.kind is ErrorKind.CONTEXT_OVERFLOW and err.context_limit:
        agent.learn_context_limit(err.context_limit)
    else:
        # no stated limit: what we just sent is too big (a body-size limit is a token limit too),
        # so aim the window well below it; kept only if this pass goes ahead (a deferral changes
        # nothing)
        sent = estimate_request_tokens_rough(state.messages, system_prompt=state.system_prompt,
                                             tools=agent.tools)
        agent.learn_context_limit(max(1024, int(sent * 0.75)))
    before = state.messages
    new_messages, new_prompt = agent._compress_context(before, state.system_prompt,
                                                       overflowed=True)
    if compression_skipped_due_to_lock(agent):
        state.compression_attempts -= 1
        if comp.context_length != window_before:
            agent.learn_context_limit(window_before, lower_only=False, announce=False)
        agent._persist_session(state.messages)
        return results.deferred_result(state)
    if not made_progress(before, new_messages):
        if comp.context_length < window_before:
            return None  # the window is known smaller now: the request view cuts to fit it; retry
        agent._persist_session(state.messages)
        return results.exhausted_result(state, f"{what}; nothing left to compress")
    state.messages = new_messages
    state.system_prompt = new_prompt or state.system_prompt
    return None


def _failed(agent: TurnHost, state: TurnState, err: ClassifiedError, retries: int) -> dict:
    """The turn ends on a provider failure: one line naming the endpoint, a code for surfaces."""
    from agent.providers.models import shown_url

    url = shown_url(agent.base_url) if agent.base_url else "the embedded local model"
    failure = describe(err, agent.redact(err.message), retries, url, agent.model,
                       agent.api_key_setting())
    return results.failed_result(state, failure.message, code=failure.code,
                                 retry_after=failure.retry_after)


def call_model(agent: TurnHost, state: TurnState,
               api_messages: list[dict]) -> Union[ModelReply, dict]:
    """One model call with retries and the 413/overflow paths; a dict is a turn-ending result."""
    import run_agent  # the seed patches run_agent.jittered_backoff

    retries = 0
    fallback.restore_due(agent)
    key_pool.new_request(agent)
    while True:
        if agent.interrupt_event.is_set():
            raise Interrupted()
        state.api_calls += 1
        try:
            return agent.call_model_api(api_messages, state)
        except StreamInterrupted:
            raise Interrupted() from None
        except Interrupted:
            raise
        except Exception as exc:
            err = classify_error(exc)
            log.info("provider error: %s (%s)", err.kind.value, agent.redact(err.message)[:200])
            if err.kind in (ErrorKind.PAYLOAD_TOO_LARGE, ErrorKind.CONTEXT_OVERFLOW):
                ended = _compress_after_rejection(agent, state, err)
                if ended is not None:
                    return ended
                api_messages = api_messages_for(state)
                continue
            if key_pool.rotate(agent, err):  # another key of the pool (issue 25)
                continue
            if err.retryable and retries < MAX_RETRIES:
                retries += 1
                delay = run_agent.jittered_backoff(retries, retry_after=err.retry_after)
                agent.emit_status(StatusKind.RETRY, f"Provider {err.kind.value}; retrying in "
                                                    f"{delay:.1f}s ({retries}/{MAX_RETRIES}).")
                if delay and agent.interrupt_event.wait(delay):
                    raise Interrupted() from None
                continue
            if fallback.fall_back(agent, err):  # fallback_providers (issue 25)
                retries = 0
                continue
            agent._persist_session(state.messages)
            return _failed(agent, state, err, retries)


def _empty(reply: ModelReply, state: TurnState) -> bool:
    """Providers occasionally return nothing at all: such a reply is asked for again, once."""
    if reply.tool_calls or (reply.content or "").strip() or state.extras.get("empty_retry"):
        return False
    state.extras["empty_retry"] = True
    return True


def _stopped(agent: TurnHost, state: TurnState, iterations: int) -> Optional[dict]:
    """The result when the turn must stop before another call, else None."""
    if agent.interrupt_event.is_set():
        raise Interrupted()
    if iterations < agent.max_iterations:
        return None
    state.stop_reason = (f"Stopped after {iterations} model calls without a final answer "
                         f"(max_iterations={agent.max_iterations}). Say 'continue' to go on.")
    agent._persist_session(state.messages)
    return results.normal_result(state, None)


def _interrupted(agent: TurnHost, state: TurnState) -> dict:
    state.interrupted = True
    lost = agent.lease_lost
    state.stop_reason = lost or "Interrupted by the user."
    agent._persist_session(state.messages)
    res = results.normal_result(state, None)
    if lost:
        res["lease_lost"] = True
    return res


def run_loop(agent: TurnHost, state: TurnState) -> dict:
    """Call, run tools, repeat; stop at a final answer, max_iterations, or interrupt."""
    iterations = 0
    try:
        while True:
            stopped = _stopped(agent, state, iterations)
            if stopped is not None:
                return stopped
            iterations += 1
            pressure_gate(agent, state)  # the full-size view only when no reading covers it
            outcome = call_model(agent, state, api_messages_for(state))
            if isinstance(outcome, dict):
                return outcome
            agent.record_usage(state, outcome)
            if _empty(outcome, state):
                continue
            state.messages.append(outcome.as_message())
            agent._persist_session(state.messages)
            if agent.lease_lost:  # the write was refused: the session moved on
                raise Interrupted()
            if not outcome.tool_calls:
                return results.normal_result(state, outcome.content or "")
            state.messages.extend(agent.run_tools(outcome.tool_calls, state))
            agent._persist_session(state.messages)
            if agent.interrupt_event.is_set() or agent.lease_lost:
                raise Interrupted()
            pressure_gate(agent, state)
    except Interrupted:
        return _interrupted(agent, state)
