#!/usr/bin/env node
// Runs the TypeScript CLI directly: tsx compiles it on load, so there is no
// build step between `npm ci` and a working `npx marketdata`.
import { register } from "tsx/esm/api";

register();
await import("../cli/main.ts");
