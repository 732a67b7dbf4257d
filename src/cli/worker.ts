import cluster from "node:cluster";
import type { ServeConfig } from "../config/serve.js";
import { errorLine } from "./errors.js";
import { runWorker, WORKER_CONFIG_ENV } from "./serve.js";

// The primary validated this config and passes it whole; a worker reads
// nothing else from its environment.
const text = process.env[WORKER_CONFIG_ENV];
if (text === undefined) {
  process.stderr.write(`marketdata worker: started without ${WORKER_CONFIG_ENV}; run "marketdata serve --workers N"\n`);
  process.exit(2);
}
// The primary gone (it stopped: another worker could not start), the channel to it fails: this process is ending too.
cluster.worker?.on("error", () => {});
try {
  await runWorker(JSON.parse(text) as ServeConfig);
} catch (err) {
  // The primary says why in its one line (a port taken: every worker fails alike); alone, this process says it.
  const { line } = await errorLine(err);
  if (process.send === undefined) process.stderr.write(`marketdata worker: ${line}\n`);
  else await new Promise((resolve) => process.send!({ type: "failed", line }, undefined, {}, resolve));
  process.exit(1);
}
