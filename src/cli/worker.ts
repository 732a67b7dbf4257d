import type { ServeConfig } from "../config.js";
import { runWorker, WORKER_CONFIG_ENV } from "./serve.js";

// The primary validated this config and passes it whole; a worker reads
// nothing else from its environment.
const text = process.env[WORKER_CONFIG_ENV];
if (text === undefined) {
  process.stderr.write(`marketdata worker: started without ${WORKER_CONFIG_ENV}; run "marketdata serve --workers N"\n`);
  process.exit(2);
}
try {
  await runWorker(JSON.parse(text) as ServeConfig);
} catch (err) {
  process.stderr.write(`marketdata worker: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
