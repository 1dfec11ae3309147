#!/usr/bin/env python3
"""Model answers as the OpenAI Responses API streams them, written from its published
event reference (platform.openai.com/docs/api-reference/responses-streaming), not from
codex-wire's renderer: every event carries `sequence_number`; a response is announced by
`response.created` and `response.in_progress` with the whole response object; a message's
text comes in `content_part.added`, `output_text.delta` (with `logprobs` and `obfuscation`),
`output_text.done`, `content_part.done`; reasoning in summary parts with `.done` events; a
function call's arguments in `function_call_arguments.delta` / `.done`; a custom tool call's
input in `custom_tool_call_input.delta` / `.done`; web search in its `web_search_call.*`
progress events; and the response ends with `response.completed` (usage), `response.failed`
(error) or `response.incomplete` (reason).

Writes the cases of tests/corpus/turns/ named 37*_stream_* (recorded on every version by
`cargo xtask turns --record`) and the sessions of tests/corpus/streams/ that tests/streams.rs
records with `codex-wire record` and replays on both servers. Run it from the repository
root: python3 tests/corpus/streams/make.py
"""
import json
import os

MODEL = "gpt-5.5-2026-11-20"
CREATED_AT = 1796300000


class Response:
    """One streamed response; `steps` are scenario.json steps (`raw` events and `sleep`s)."""

    def __init__(self, rid):
        self.id = rid
        self.seq = 0
        self.steps = []
        self.output = []

    def obj(self, status, usage=None, error=None, incomplete=None):
        return {
            "id": self.id, "object": "response", "created_at": CREATED_AT, "status": status,
            "background": False, "error": error, "incomplete_details": incomplete,
            "instructions": None, "max_output_tokens": None, "max_tool_calls": None,
            "model": MODEL, "output": list(self.output) if status != "in_progress" else [],
            "parallel_tool_calls": False, "previous_response_id": None,
            "prompt_cache_key": None, "reasoning": {"effort": "medium", "summary": "auto"},
            "safety_identifier": None, "service_tier": "default", "store": False,
            "temperature": 1.0, "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto", "tools": [], "top_logprobs": 0, "top_p": 1.0,
            "truncation": "disabled", "usage": usage, "user": None, "metadata": {},
        }

    def ev(self, type_, **fields):
        e = {"type": type_, "sequence_number": self.seq}
        e.update(fields)
        self.seq += 1
        self.steps.append({"kind": "raw", "event": e})
        return self

    def pause(self, seconds):
        self.steps.append({"kind": "sleep", "seconds": seconds})
        return self

    def start(self):
        self.ev("response.created", response=self.obj("in_progress"))
        return self.ev("response.in_progress", response=self.obj("in_progress"))

    def message(self, mid, deltas, text=None, phase=None, pause_after=None):
        """`deltas`: the text pieces; a number among them is a pause (seconds)."""
        idx = len(self.output)
        pieces = [d for d in deltas if isinstance(d, str)]
        text = "".join(pieces) if text is None else text
        item = {"id": mid, "type": "message", "status": "in_progress", "content": [],
                "role": "assistant"}
        if phase:
            item["phase"] = phase
        self.ev("response.output_item.added", output_index=idx, item=item)
        self.ev("response.content_part.added", item_id=mid, output_index=idx, content_index=0,
                part={"type": "output_text", "annotations": [], "logprobs": [], "text": ""})
        for n, d in enumerate(deltas):
            if isinstance(d, str):
                self.ev("response.output_text.delta", item_id=mid, output_index=idx,
                        content_index=0, delta=d, logprobs=[], obfuscation="x" * (n % 5 + 3))
            else:
                self.pause(d)
        self.ev("response.output_text.done", item_id=mid, output_index=idx, content_index=0,
                text=text, logprobs=[])
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        self.ev("response.content_part.done", item_id=mid, output_index=idx, content_index=0,
                part=part)
        done = dict(item, status="completed", content=[part])
        self.output.append(done)
        return self.ev("response.output_item.done", output_index=idx, item=done)

    def reasoning(self, rid, parts):
        """`parts`: summary parts, each a list of deltas."""
        idx = len(self.output)
        item = {"id": rid, "type": "reasoning", "summary": []}
        self.ev("response.output_item.added", output_index=idx, item=item)
        summary = []
        for k, deltas in enumerate(parts):
            text = "".join(deltas)
            self.ev("response.reasoning_summary_part.added", item_id=rid, output_index=idx,
                    summary_index=k, part={"type": "summary_text", "text": ""})
            for d in deltas:
                self.ev("response.reasoning_summary_text.delta", item_id=rid, output_index=idx,
                        summary_index=k, delta=d, obfuscation="abc")
            self.ev("response.reasoning_summary_text.done", item_id=rid, output_index=idx,
                    summary_index=k, text=text)
            self.ev("response.reasoning_summary_part.done", item_id=rid, output_index=idx,
                    summary_index=k, part={"type": "summary_text", "text": text})
            summary.append({"type": "summary_text", "text": text})
        done = {"id": rid, "type": "reasoning", "summary": summary,
                "encrypted_content": "gAAAAABo-opaque-reasoning"}
        self.output.append(done)
        return self.ev("response.output_item.done", output_index=idx, item=done)

    def function_call(self, fid, call_id, name, arguments, pieces=3):
        idx = len(self.output)
        item = {"id": fid, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": call_id, "name": name}
        self.ev("response.output_item.added", output_index=idx, item=item)
        size = max(1, -(-len(arguments) // pieces))
        for i in range(0, len(arguments), size):
            self.ev("response.function_call_arguments.delta", item_id=fid, output_index=idx,
                    delta=arguments[i:i + size], obfuscation="pad")
        self.ev("response.function_call_arguments.done", item_id=fid, output_index=idx,
                arguments=arguments)
        done = dict(item, status="completed", arguments=arguments)
        self.output.append(done)
        return self.ev("response.output_item.done", output_index=idx, item=done)

    def custom_tool_call(self, cid, call_id, name, text, pieces=3):
        idx = len(self.output)
        item = {"id": cid, "type": "custom_tool_call", "status": "in_progress", "call_id": call_id,
                "name": name, "input": ""}
        self.ev("response.output_item.added", output_index=idx, item=item)
        size = max(1, -(-len(text) // pieces))
        for i in range(0, len(text), size):
            self.ev("response.custom_tool_call_input.delta", item_id=cid, output_index=idx,
                    delta=text[i:i + size], obfuscation="pad")
        self.ev("response.custom_tool_call_input.done", item_id=cid, output_index=idx, input=text)
        done = dict(item, status="completed", input=text)
        self.output.append(done)
        return self.ev("response.output_item.done", output_index=idx, item=done)

    def web_search(self, wid, action):
        idx = len(self.output)
        item = {"id": wid, "type": "web_search_call", "status": "in_progress"}
        self.ev("response.output_item.added", output_index=idx, item=item)
        for phase in ("in_progress", "searching", "completed"):
            self.ev("response.web_search_call." + phase, item_id=wid, output_index=idx)
        done = {"id": wid, "type": "web_search_call", "status": "completed", "action": action}
        self.output.append(done)
        return self.ev("response.output_item.done", output_index=idx, item=done)

    def completed(self, inp, out, cached=0, reasoning=0, end_turn=None):
        usage = {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cached},
                 "output_tokens": out, "output_tokens_details": {"reasoning_tokens": reasoning},
                 "total_tokens": inp + out}
        response = self.obj("completed", usage=usage)
        if end_turn is not None:
            response["end_turn"] = end_turn
        return self.ev("response.completed", response=response)

    def failed(self, code, message):
        return self.ev("response.failed", response=self.obj(
            "failed", error={"code": code, "message": message}))

    def incomplete(self, reason):
        return self.ev("response.incomplete", response=self.obj(
            "incomplete", incomplete={"reason": reason}))


def exec_args(cmd, escalate=True, why=None):
    a = {"cmd": cmd}
    if escalate:
        a["sandbox_permissions"] = "require_escalated"
        if why:
            a["justification"] = why
    return json.dumps(a, separators=(",", ":"))


def rid(n):
    return "resp_0a1b2c3d4e5f60718293a4b5c6d7e8f9%04d" % n


def turns(*responses):
    return {"turns": [{"responses": [r.steps for r in rs]} for rs in responses]}


def case(name, scenario, **client):
    c = {"name": name, "scenario": scenario}
    c.update(client)
    return c


def sessions():
    out = []
    # A message.
    r = Response(rid(1)).start()
    r.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20001", ["The answer", " is", " 42."])
    # Under a provider of the user's own (`corp`), which the replays keep.
    out.append(case("s1_message", turns([r.completed(120, 9, cached=64)]), provider="corp"))
    # Reasoning, then a message.
    r = Response(rid(2)).start()
    r.reasoning("rs_68f0a1b2c3d4e5f6a7b8c9d0e1f20002",
                [["**Reading", " the question**\n\nIt asks"], ["**Answering**\n\n", "Short."]])
    r.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20003", ["Short", " answer."])
    out.append(case("s2_reasoning_message", turns([r.completed(150, 40, reasoning=28)])))
    # An approved command: the call, then the answer after its output.
    a = Response(rid(3)).start()
    a.function_call("fc_68f0a1b2c3d4e5f6a7b8c9d0e1f20004", "call_Qx3ZP0kv6vQ1JmA8bC2dE4fG",
                    "exec_command", exec_args("echo built", why="Build the project"))
    a.completed(200, 30)
    b = Response(rid(4)).start()
    b.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20005", ["Built", " it."])
    out.append(case("s3_command_approved", turns([a, b.completed(260, 5, cached=200)]),
                    decisions=["accept"]))
    # A failed stream (a server error; no retries configured: the turn fails).
    r = Response(rid(5)).start()
    r.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20006", ["Let me"])
    out.append(case("s4_failed_stream", turns([r.failed("server_error",
                                                         "The server had an error.")])))
    # Two commands, the first accepted for the session: the second, the same, runs unasked.
    a = Response(rid(6)).start()
    a.function_call("fc_68f0a1b2c3d4e5f6a7b8c9d0e1f20007", "call_1aBcDeFgHiJkLmNoPqRsTuVw",
                    "exec_command", exec_args("echo hi", why="Say hi"))
    a.completed(210, 20)
    b = Response(rid(7)).start()
    b.function_call("fc_68f0a1b2c3d4e5f6a7b8c9d0e1f20008", "call_2aBcDeFgHiJkLmNoPqRsTuVw",
                    "exec_command", exec_args("echo hi", why="Say hi again"))
    b.completed(240, 20, cached=200)
    c = Response(rid(8)).start()
    c.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20009", ["Said", " hi twice."])
    out.append(case("s5_two_commands_for_session", turns([a, b, c.completed(280, 6)]),
                    decisions=["acceptForSession"]))
    # An HTTP 429 with Retry-After (retried as a turn), then the answer.
    http = {"kind": "http_error", "status": 429,
            "body": json.dumps({"error": {"message": "Rate limit reached for gpt-5.5 in "
                                          "organization org-x on tokens per min. Please try "
                                          "again in 1s.", "type": "tokens",
                                          "param": None, "code": "rate_limit_exceeded"}}),
            "headers": {"retry-after": "1", "x-request-id": "req_7f3c2a"}}
    r = Response(rid(9)).start()
    r.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20010", ["After", " the wait."])
    sc = {"turns": [{"responses": [[http], r.completed(130, 7).steps]}]}
    out.append(case("s6_http_429_then_success", sc, stream_retries=2, provider="corp"))
    # An interrupt on the first delta of a slowly streaming answer.
    r = Response(rid(10)).start()
    r.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20011", ["Thinking", 3, " it over."])
    out.append(case("s7_interrupt_mid_message", turns([r.completed(140, 8)]),
                    interrupt_on="item/agentMessage/delta"))
    # A steer on the first delta: the stream is dropped, the model asked again.
    a = Response(rid(11)).start()
    a.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20012", ["Thinking", 2, " it over."])
    a.completed(140, 8)
    b = Response(rid(12)).start()
    b.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20013", ["With", " that too."])
    out.append(case("s8_steer_mid_message", turns([a, b.completed(180, 6, cached=128)]),
                    steer="also this", steer_on="item/agentMessage/delta"))
    return out


def corpus():
    """Turn cases for what codex reads and ignores in a real stream."""
    out = []
    r = Response(rid(20)).start()
    r.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20020", ["Every", " event", " of a message."])
    out.append(case("37_stream_every_event", turns([r.completed(100, 9)])))
    # The completed item's text, not the deltas', is the item's.
    r = Response(rid(21)).start()
    r.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20021", ["Hel", "lo"], text="Hello, world.")
    out.append(case("37b_stream_done_text_wins", turns([r.completed(100, 4)])))
    # Items done that were never added.
    r = Response(rid(22)).start()
    r.ev("response.output_item.done", output_index=0, item={
        "id": "rs_68f0a1b2c3d4e5f6a7b8c9d0e1f20022", "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Quick."}]})
    r.ev("response.output_item.done", output_index=1, item={
        "id": "msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20023", "type": "message", "status": "completed",
        "role": "assistant", "content": [{"type": "output_text", "text": "No deltas.",
                                          "annotations": []}]})
    out.append(case("37c_stream_done_without_added", turns([r.completed(100, 4)])))
    # A response cut by the token limit.
    # A response cut by the token limit: final, even with stream retries left (the second
    # response is never asked for).
    r = Response(rid(23)).start()
    r.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20024", ["Cut", " short"])
    never = Response(rid(29)).start()
    never.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20033", ["Never."])
    out.append(case("37d_stream_incomplete", turns([r.incomplete("max_output_tokens"),
                                                    never.completed(1, 1)]),
                    stream_retries=1))
    # A web search, then the answer.
    r = Response(rid(24)).start()
    r.web_search("ws_68f0a1b2c3d4e5f6a7b8c9d0e1f20025",
                 {"type": "search", "query": "codex app-server protocol"})
    r.web_search("ws_68f0a1b2c3d4e5f6a7b8c9d0e1f20030",
                 {"type": "search", "queries": ["codex releases", "codex changelog"]})
    r.web_search("ws_68f0a1b2c3d4e5f6a7b8c9d0e1f20031",
                 {"type": "open_page", "url": "https://example.com/codex"})
    r.web_search("ws_68f0a1b2c3d4e5f6a7b8c9d0e1f20032",
                 {"type": "find_in_page", "url": "https://example.com/codex",
                  "pattern": "app-server"})
    r.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20026", ["Found", " it."])
    out.append(case("37e_stream_web_search", turns([r.completed(300, 20)])))
    # A command whose arguments stream in deltas, approved.
    a = Response(rid(25)).start()
    a.function_call("fc_68f0a1b2c3d4e5f6a7b8c9d0e1f20027", "call_Zz9yX8wV7uT6sR5qP4oN3mL2",
                    "exec_command", exec_args("echo streamed", why="Stream args"), pieces=5)
    a.completed(200, 30)
    b = Response(rid(26)).start()
    b.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20028", ["Done."])
    out.append(case("37f_stream_call_argument_deltas", turns([a, b.completed(230, 3)]),
                    decisions=["accept"]))
    # A failed response, retried once, then answered.
    a = Response(rid(27)).start()
    a.failed("server_error", "An error occurred while processing your request.")
    b = Response(rid(28)).start()
    b.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20029", ["Second", " try."])
    out.append(case("37g_stream_failed_then_retried", turns([a, b.completed(110, 5)]),
                    stream_retries=1))
    # A patch whose input streams in deltas (codex previews a patch as it streams).
    a = Response(rid(32)).start()
    a.custom_tool_call("ctc_68f0a1b2c3d4e5f6a7b8c9d0e1f20036", "call_Pq8rS7tU6vW5xY4zA3bC2dE1",
                       "apply_patch", "*** Begin Patch\n*** Add File: notes.txt\n+first line\n"
                       "+second line\n*** End Patch", pieces=4)
    a.completed(150, 40)
    b = Response(rid(33)).start()
    b.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20037", ["Wrote", " it."])
    out.append(case("37i_stream_patch_input_deltas", turns([a, b.completed(200, 3)])))
    # A response that says the turn is not over (`end_turn: false`): codex asks again.
    a = Response(rid(30)).start()
    a.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20034", ["First", " part."], phase="commentary")
    a.completed(100, 5, end_turn=False)
    b = Response(rid(31)).start()
    b.message("msg_68f0a1b2c3d4e5f6a7b8c9d0e1f20035", ["Second", " part."])
    out.append(case("37h_stream_end_turn_false", turns([a, b.completed(120, 5)])))
    return out


def write(dirname, cases):
    os.makedirs(dirname, exist_ok=True)
    for c in cases:
        with open(os.path.join(dirname, c["name"] + ".case.json"), "w") as f:
            json.dump(c, f, indent=1, ensure_ascii=False)
            f.write("\n")


if __name__ == "__main__":
    write("tests/corpus/streams", sessions())
    write("tests/corpus/turns", corpus())
