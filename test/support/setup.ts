import { ENGINE } from "./engine.js";

// Run before every test file (vitest.config.ts setupFiles). Files share
// worker processes (isolate: false), and with them the modules they
// imported: a file of the PostgreSQL project must never run in a process
// whose engine module was loaded for SQLite, or it would test the wrong
// engine and pass. The project's variable and the module agree, or the
// file fails before any test.

const wanted = process.env.MARKETDATA_TEST_ENGINE === "postgres" ? "postgres" : "sqlite";
if (ENGINE !== wanted) {
  throw new Error(`this worker's engine module says ${ENGINE}, the project asks for ${wanted}: files of two projects share a process`);
}
