// The conformance suite's client under test is `trapdesk mcp-stdio`: the suite starts a test
// server for a scenario and runs `node client.mjs URL` (env MCP_CONFORMANCE_SCENARIO). This
// script plays the agent on mcp-stdio's stdin/stdout, so every request the suite's server sees
// is one mcp-stdio made upstream: initialize, tools/list, and a call of each tool listed.
//
//   node client.mjs URL    (env TRAPDESK_BIN: the binary; default target/debug/trapdesk)
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import path from "node:path";

const url = process.argv[2];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.env.TRAPDESK_BIN ?? path.join(repo, "target/debug/trapdesk");

// The test servers take any token; mcp-stdio needs one to present (it never dials without).
const child = spawn(bin, ["mcp-stdio", "--connect", url], {
  env: { ...process.env, TRAPDESK_AGENT_TOKEN: "conformance-client-token-5d8e2" },
  stdio: ["pipe", "pipe", "inherit"],
});
const pending = new Map();
let nextId = 1;
createInterface({ input: child.stdout }).on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  if (msg.id !== undefined && pending.has(msg.id)) {
    pending.get(msg.id)(msg);
    pending.delete(msg.id);
  }
});
const send = (m) => child.stdin.write(JSON.stringify(m) + "\n");
const request = (method, params) =>
  new Promise((resolve) => {
    const id = nextId++;
    pending.set(id, resolve);
    send({ jsonrpc: "2.0", id, method, params });
  });

// Arguments for the tools the suite's scenarios define; any other tool is called without.
const ARGS = { add_numbers: { a: 5, b: 3 } };

async function main() {
  const init = await request("initialize", {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "trapdesk-conformance-client", version: "1.0.0" },
  });
  if (init.error) throw new Error(`initialize: ${JSON.stringify(init.error)}`);
  send({ jsonrpc: "2.0", method: "notifications/initialized" });
  const list = await request("tools/list", {});
  if (list.error) throw new Error(`tools/list: ${JSON.stringify(list.error)}`);
  for (const tool of list.result.tools ?? []) {
    const r = await request("tools/call", { name: tool.name, arguments: ARGS[tool.name] ?? {} });
    console.log(`${scenario}: ${tool.name} -> ${JSON.stringify(r.result ?? r.error)}`);
  }
}

main()
  .then(() => 0, (e) => (console.error(`client: ${e.message}`), 1))
  .then((code) => {
    child.stdin.end();
    const t = setTimeout(() => child.kill(), 3000);
    child.on("exit", () => {
      clearTimeout(t);
      process.exit(code);
    });
  });
