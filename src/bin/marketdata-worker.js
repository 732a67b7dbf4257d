#!/usr/bin/env node
// A `serve --workers N` worker process, forked by the primary (cli/serve.ts).
import { register } from "tsx/esm/api";

register();
await import("../cli/worker.ts");
