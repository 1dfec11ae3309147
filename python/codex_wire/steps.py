"""Typed ``scenario.json`` turns: one helper per step kind, checked when the step is built.

A turn is ``turn(step, step, ...)`` (or a plain ``{"steps": [...]}`` dict); each helper returns
the step's dict and raises ``TypeError``/``ValueError`` at once for a wrong field, so a bad
scenario fails where it is written instead of mid-turn. ``docs/fake.md`` says what each step
shows on the wire.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

# Steps a model produces (both servers play them), and the fake-only ones (the real server's own
# doing: no model response makes it happen).
MODEL_KINDS = {
    "message", "reasoning", "command", "file_change", "usage", "fail", "message_partial",
    "error_note", "user_input", "tool_call", "permissions", "goal", "sleep", "http_error",
    "delay", "raw",
}
FAKE_ONLY_KINDS = {
    "crash", "progress", "grandchild", "notify", "compaction", "elicitation", "auth_refresh",
    "attestation", "request",
}
KINDS = MODEL_KINDS | FAKE_ONLY_KINDS


def _str(name: str, v: Any, *, optional: bool = False) -> None:
    if v is None and optional:
        return
    if not isinstance(v, str):
        raise TypeError(f"{name} must be a string, not {type(v).__name__}")


def _int(name: str, v: Any, *, minimum: int = 0) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{name} must be an int, not {type(v).__name__}")
    if v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, not {v}")


def _num(name: str, v: Any) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{name} must be a number, not {type(v).__name__}")
    if v < 0:
        raise ValueError(f"{name} must be >= 0, not {v}")


def _strs(name: str, v: Any) -> list[str]:
    items = [v] if isinstance(v, str) else list(v)
    for i, x in enumerate(items):
        _str(f"{name}[{i}]", x)
    return items


def _step(kind: str, **fields: Any) -> dict:
    return {"kind": kind, **{k: v for k, v in fields.items() if v is not None}}


def _deltas(name: str, v: Any) -> list:
    if not isinstance(v, (list, tuple)):
        raise TypeError(f"{name} must be a list, not {type(v).__name__}")
    for i, d in enumerate(v):
        if isinstance(d, dict) and set(d) == {"sleep"}:
            _num(f"{name}[{i}].sleep", d["sleep"])
        elif not isinstance(d, str):
            raise TypeError(f'{name}[{i}] must be a string or {{"sleep": seconds}}, not {d!r}')
    return list(v)


def message(
    text: str, *, chunks: int = 3, phase: Optional[str] = None, deltas: Optional[Sequence[Any]] = None
) -> dict:
    """An agent message streamed in ``chunks`` deltas (or the ``deltas`` given: strings, and
    ``{"sleep": seconds}`` pauses among them, where an interrupt or a steer can land); ``phase``:
    ``commentary`` or ``final_answer``."""
    _str("text", text)
    _int("chunks", chunks, minimum=1)
    if phase not in (None, "commentary", "final_answer"):
        raise ValueError(f"phase must be one of commentary, final_answer, not {phase!r}")
    if deltas is not None:
        deltas = _deltas("deltas", deltas)
    return _step("message", text=text, chunks=chunks, phase=phase, deltas=deltas)


def reasoning(summary: str | Sequence[str] = (), content: str | Sequence[str] = ()) -> dict:
    """Reasoning: summary parts and content parts."""
    return _step("reasoning", summary=_strs("summary", summary), content=_strs("content", content) or None)


def command(
    command: str,
    *,
    approval: bool = True,
    reason: Optional[str] = None,
    cwd: Optional[str] = None,
    output: Optional[str] = None,
    exit_code: Optional[int] = None,
) -> dict:
    """A shell command; ``approval`` escalates it (the client is asked under ``on-request``).
    It really runs unless ``output``/``exit_code`` script its result (the fake only)."""
    _str("command", command)
    if not command.strip():
        raise ValueError("command must not be blank")
    if not isinstance(approval, bool):
        raise TypeError("approval must be a bool")
    _str("reason", reason, optional=True)
    _str("cwd", cwd, optional=True)
    _str("output", output, optional=True)
    if exit_code is not None:
        _int("exit_code", exit_code)
    return _step("command", command=command, approval=approval, reason=reason, cwd=cwd,
                 output=output, exit_code=exit_code)


def file_change(
    *,
    patch: Optional[str] = None,
    path: Optional[str] = None,
    content: Optional[str] = None,
    reason: Optional[str] = None,
) -> dict:
    """An ``apply_patch``: a whole ``patch`` (``*** Begin Patch`` …), or one file's ``path`` and
    new ``content``."""
    if (patch is None) == (path is None):
        raise ValueError("file_change takes exactly one of patch, path (with content)")
    _str("patch", patch, optional=True)
    _str("path", path, optional=True)
    _str("content", content, optional=True)
    _str("reason", reason, optional=True)
    if path is not None and content is None:
        raise ValueError("path needs content")
    return _step("file_change", patch=patch, path=path, content=content, reason=reason)


def usage(input: int, output: int = 0, *, cached: int = 0, reasoning: int = 0) -> dict:
    """The current model response's token usage."""
    for name, v in (("input", input), ("output", output), ("cached", cached), ("reasoning", reasoning)):
        _int(name, v)
    if cached > input:
        raise ValueError(f"cached must be at most input ({cached} > {input})")
    return _step("usage", input=input, output=output, cached=cached, reasoning=reasoning or None)


FAIL_CODES = (
    "context_length_exceeded", "insufficient_quota", "rate_limit_exceeded", "server_is_overloaded",
    "invalid_prompt",
)


def fail(message: str, *, code: Optional[str] = None) -> dict:
    """A failed model stream; ``code`` one of :data:`FAIL_CODES`, else a generic failure."""
    _str("message", message)
    _str("code", code, optional=True)
    return _step("fail", message=message, code=code)


def http_error(status: int, body: str = "", *, headers: Optional[dict[str, str]] = None) -> dict:
    """The model provider answers the request with an HTTP error (``Retry-After``,
    ``x-request-id`` … in ``headers``): resent, retried and reported as codex does."""
    _int("status", status, minimum=100)
    if status > 599:
        raise ValueError(f"status must be <= 599 (an HTTP status), not {status}")
    _str("body", body)
    if headers is not None:
        if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
        ):
            raise TypeError("headers must be a map of strings")
    return _step("http_error", status=status, body=body, headers=headers)


def message_partial(text: str) -> dict:
    """A message cut mid-stream (retried while the provider allows)."""
    _str("text", text)
    return _step("message_partial", text=text)


def error_note(message: str = "stream dropped") -> dict:
    """A dropped stream the server retries."""
    _str("message", message)
    return _step("error_note", message=message)


def user_input(questions: Optional[list[dict]] = None) -> dict:
    """The model asks the user (``item/tool/requestUserInput``).

    Reaches the client only with feature ``default_mode_request_user_input`` on (``--enable``,
    or ``[features]`` in config.toml) and options for every question; otherwise codex answers the
    model itself and the client sees nothing, on the fake as on the real server.
    """
    if questions is not None:
        if not isinstance(questions, list) or not all(isinstance(q, dict) for q in questions):
            raise TypeError("questions must be a list of dicts")
        for q in questions:
            for key in ("id", "question"):
                if key not in q:
                    raise ValueError(f"each question needs {key}: {q}")
    return _step("user_input", questions=questions)


def tool_call(tool: str, arguments: Any = None, *, namespace: Optional[str] = None) -> dict:
    """A call of a dynamic tool the client registered (``dynamicTools`` of ``thread/start``).

    A name the thread did not declare never reaches the client (codex answers the model).
    """
    _str("tool", tool)
    _str("namespace", namespace, optional=True)
    return _step("tool_call", tool=tool, arguments=arguments, namespace=namespace)


def permissions(reason: Optional[str] = None) -> dict:
    """The ``request_permissions`` tool (``item/permissions/requestApproval``)."""
    _str("reason", reason, optional=True)
    return _step("permissions", reason=reason)


# What codex's `update_goal` tool lets the model set (pausing and budgets are the user's).
GOAL_STATUSES = ("complete", "blocked")


def goal(status: str = "complete") -> dict:
    """The model updates the thread goal (``update_goal``): ``thread/goal/updated``, no item."""
    _str("status", status)
    if status not in GOAL_STATUSES:
        raise ValueError(f"status must be one of {', '.join(GOAL_STATUSES)}, not {status!r}")
    return _step("goal", status=status)


def sleep(seconds: float) -> dict:
    """A pause inside the model's stream (to interrupt or steer mid-stream)."""
    _num("seconds", seconds)
    return _step("sleep", seconds=seconds)


# Fake-only steps.


def crash(code: int = 1, stderr: Optional[str] = None) -> dict:
    """The server process exits mid-turn (fake only)."""
    _int("code", code)
    _str("stderr", stderr, optional=True)
    return _step("crash", code=code, stderr=stderr)


def progress(seconds: float, interval: float = 0.1, text: str = ".") -> dict:
    """Deltas every ``interval`` seconds for ``seconds`` (fake only)."""
    _num("seconds", seconds)
    _num("interval", interval)
    if interval == 0:
        raise ValueError("interval must be > 0")
    _str("text", text)
    return _step("progress", seconds=seconds, interval=interval, text=text)


def grandchild() -> dict:
    """A child process that outlives the server until released (fake only)."""
    return _step("grandchild")


def notify(method: str, params: Any = None) -> dict:
    """A notification the fake sends as is (fake only)."""
    _str("method", method)
    return _step("notify", method=method, params=params)


def turn(*steps: dict, start_error: Optional[str] = None, continuations: Sequence[Any] = (),
         rollover_ms: Optional[int] = None) -> dict:
    """One ``turn/start``'s script (``continuations``: further goal turns, fake only)."""
    out: dict = {"steps": [check_step(s, i) for i, s in enumerate(steps)]}
    _str("start_error", start_error, optional=True)
    if start_error is not None:
        out["start_error"] = start_error
    if continuations:
        out["continuations"] = check_turns(continuations)
    if rollover_ms is not None:
        _int("rollover_ms", rollover_ms)
        out["rollover_ms"] = rollover_ms
    return out


def check_step(step: Any, index: int = 0) -> dict:
    """A step dict, checked: a known ``kind`` and the helper's field rules."""
    if not isinstance(step, dict):
        raise TypeError(f"step {index} must be a dict (use the codex_wire.steps helpers), not {type(step).__name__}")
    kind = step.get("kind")
    if kind not in KINDS:
        raise ValueError(f"step {index}: unknown kind {kind!r} (known: {', '.join(sorted(KINDS))})")
    helper = globals().get(kind)
    if callable(helper) and kind not in ("elicitation", "compaction", "auth_refresh", "attestation", "request"):
        fields = {k: v for k, v in step.items() if k != "kind"}
        try:
            _rebuild(helper, fields)
        except TypeError as e:
            raise TypeError(f"step {index} ({kind}): {e}") from None
        except ValueError as e:
            raise ValueError(f"step {index} ({kind}): {e}") from None
    # Checked, and kept as written (keys the helper does not take pass through: seed extras).
    return step


def _rebuild(helper: Any, fields: dict) -> dict:
    import inspect

    params = inspect.signature(helper).parameters
    known = {k: v for k, v in fields.items() if k in params}
    positional = [p for p in params.values() if p.kind == p.POSITIONAL_OR_KEYWORD and p.default is p.empty]
    for p in positional:
        if p.name not in known:
            raise ValueError(f"missing {p.name!r}")
    return helper(**known)


def check_turns(turns: Iterable[Any]) -> list[dict]:
    """Turn scripts, each checked (a dict with ``steps``, or built by :func:`turn`)."""
    out = []
    for i, t in enumerate(turns):
        if isinstance(t, dict) and "steps" in t:
            checked = dict(t)
            checked["steps"] = [check_step(s, j) for j, s in enumerate(t["steps"])]
            if "continuations" in t:
                checked["continuations"] = check_turns(t["continuations"])
            out.append(checked)
        else:
            raise TypeError(f"turn {i} must be a dict with 'steps' (codex_wire.steps.turn(...)), not {t!r}")
    return out
