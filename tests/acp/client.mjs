// An ACP client for the integration tests, built on the official TypeScript SDK
// (@agentclientprotocol/sdk, installed by tests/mcp-servers/install.sh). It starts the agent
// command given as arguments (`agentctl acp`) and is driven by the test over its own stdio,
// one JSON object per line:
//   in:  {"op":"request","id":N,"method":M,"params":P}   -> {"type":"response","id":N,"result":R}
//                                                            or {"type":"error","id":N,"error":E}
//        {"op":"abort","id":N}                               aborts request N ($/cancel_request)
//        {"op":"notify","method":M,"params":P}
//        {"op":"permission","key":K,"optionId":O}         answers open permission request K
//        {"op":"permissionFail","key":K}                  answers it with an error (cannot ask)
//        {"op":"elicitation","key":K,"answer":A}          answers open elicitation/create K with A
//        {"op":"close"}                                   closes the agent's stdin, reports its exit
//   out: {"type":"update","params":P}                     every session/update
//        {"type":"permission","key":K,"params":P}         a session/request_permission
//        {"type":"permissionAborted","key":K}             the agent withdrew it ($/cancel_request)
//        {"type":"elicitation","key":K,"params":P}        an elicitation/create (answered like one)
//        {"type":"exit","code":C,"signal":S}              the agent exited
// ACP_NODE_MODULES names the node_modules folder the SDK is installed in.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const modules = process.env.ACP_NODE_MODULES;
const require = createRequire(join(modules, "resolver.js"));
const acp = await import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);

const report = (message) => process.stdout.write(JSON.stringify(message) + "\n");

const [command, ...args] = process.argv.slice(2);
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) =>
  agent.on("exit", (code, signal) => resolve({ code, signal })),
);

const open = new Map();
const aborts = new Map();
let nextKey = 1;
const connection = acp
  .client({ name: "acp-test-client" })
  .onNotification("session/update", ({ params }) => report({ type: "update", params }))
  .onRequest("session/request_permission", ({ params, signal }) => {
    const key = nextKey++;
    return new Promise((resolve, reject) => {
      open.set(key, { resolve, reject });
      signal.addEventListener("abort", () => {
        open.delete(key);
        report({ type: "permissionAborted", key });
        resolve({ outcome: { outcome: "cancelled" } });
      });
      report({ type: "permission", key, params });
    });
  })
  .onRequest("elicitation/create", ({ params, signal }) => {
    const key = nextKey++;
    return new Promise((resolve, reject) => {
      open.set(key, { resolve, reject });
      signal.addEventListener("abort", () => {
        open.delete(key);
        report({ type: "permissionAborted", key });
        resolve({ action: "cancel" });
      });
      report({ type: "elicitation", key, params });
    });
  })
  .connect(acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout)));

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const command = JSON.parse(line);
  if (command.op === "request") {
    const controller = new AbortController();
    aborts.set(command.id, controller);
    connection.agent.request(command.method, command.params, { cancellationSignal: controller.signal }).then(
      (result) => report({ type: "response", id: command.id, result: result ?? null }),
      (error) =>
        report({
          type: "error",
          id: command.id,
          error: { code: error.code, message: error.message, data: error.data },
        }),
    );
  } else if (command.op === "abort") {
    aborts.get(command.id)?.abort();
  } else if (command.op === "notify") {
    await connection.agent.notify(command.method, command.params);
  } else if (command.op === "permission") {
    const request = open.get(command.key);
    open.delete(command.key);
    request?.resolve({ outcome: { outcome: "selected", optionId: command.optionId } });
  } else if (command.op === "elicitation") {
    const request = open.get(command.key);
    open.delete(command.key);
    request?.resolve(command.answer);
  } else if (command.op === "permissionFail") {
    const request = open.get(command.key);
    open.delete(command.key);
    request?.reject(new Error("this editor cannot show the request"));
  } else if (command.op === "close") {
    agent.stdin.end();
    const { code, signal } = await exited;
    report({ type: "exit", code, signal });
    process.exit(0);
  }
}
// The test went away: take the agent with us.
agent.kill();
