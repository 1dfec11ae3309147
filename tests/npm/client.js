"use strict";
// A raw stdio JSON-RPC client of `codex app-server`: what an IDE plugin does, in a few lines (a
// real client library from the registry is driven by suite/ai-sdk.body.mjs).
const { spawn } = require("node:child_process");
const readline = require("node:readline");

function connect(bin) {
  const child = spawn(bin, ["app-server"], { stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map();
  const notifications = [];
  let onNotification = () => {};
  readline.createInterface({ input: child.stdout }).on("line", (line) => {
    const msg = JSON.parse(line);
    if (msg.id !== undefined && msg.method === undefined) {
      const resolve = waiting.get(msg.id);
      waiting.delete(msg.id);
      if (resolve) resolve(msg);
    } else {
      notifications.push(msg);
      onNotification(msg);
    }
  });
  let next = 0;
  return {
    notifications,
    request(method, params) {
      const id = next++;
      child.stdin.write(JSON.stringify({ id, method, params }) + "\n");
      return new Promise((resolve) => waiting.set(id, resolve));
    },
    notify(method, params) {
      child.stdin.write(JSON.stringify(params === undefined ? { method } : { method, params }) + "\n");
    },
    until(method) {
      if (notifications.some((n) => n.method === method)) return Promise.resolve();
      return new Promise((resolve) => {
        onNotification = (n) => n.method === method && resolve();
      });
    },
    close() {
      child.stdin.end();
      return new Promise((resolve) => (child.exitCode !== null ? resolve() : child.on("exit", resolve)));
    },
  };
}

/** One turn as a client runs it: initialize, a thread (with `threadParams`), a turn. */
async function oneTurn(bin, threadParams = {}) {
  const c = connect(bin);
  await c.request("initialize", { clientInfo: { name: "node-test", version: "1.0.0" } });
  c.notify("initialized");
  const thread = await c.request("thread/start", threadParams);
  const turn = await c.request("turn/start", {
    threadId: thread.result.thread.id,
    input: [{ type: "text", text: "Question?" }],
  });
  await c.until("turn/completed");
  await c.close();
  const answer = c.notifications
    .filter((n) => n.method === "item/completed" && n.params.item.type === "agentMessage")
    .map((n) => n.params.item.text)
    .join("");
  return { thread, turn, answer, notifications: c.notifications };
}

module.exports = { connect, oneTurn };
