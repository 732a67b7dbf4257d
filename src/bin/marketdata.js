#!/usr/bin/env node
// The marketdata command: the CLI compiled to JavaScript in dist/ by
// `npm run build`, which `npm ci` runs (the prepare script), so no command
// compiles TypeScript when it starts.
try {
  await import("../../dist/src/cli/main.js");
} catch (err) {
  if (err?.code === "ERR_MODULE_NOT_FOUND" && String(err.message).includes("dist/src/cli/main.js")) {
    process.stderr.write("marketdata: not built: run `npm run build` (npm ci runs it)\n");
    process.exit(1);
  }
  throw err;
}
