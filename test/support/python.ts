import { existsSync } from "node:fs";
import { spawnSync } from "node:child_process";

// Debian's Python with its gRPC and protobuf packages, and the code
// generators buf drives for the Python template (clients/python/buf.gen.yaml).
// Tests that need them skip with a visible message where they are absent,
// unless MARKETDATA_TEST_PYTHON makes them required (CI installs them: .ci/run).

export const PYTHON = "/usr/bin/python3";

const available =
  existsSync("/usr/bin/protoc") &&
  existsSync("/usr/bin/grpc_python_plugin") &&
  existsSync(PYTHON) &&
  spawnSync(PYTHON, ["-c", "import grpc, google.protobuf"]).status === 0;

/** True where a test needing Python must skip; warns once per test file that asks. */
export function skipPython(what: string): boolean {
  if (available || process.env.MARKETDATA_TEST_PYTHON) return false;
  console.warn(`SKIPPED: ${what}: needs protobuf-compiler, protobuf-compiler-grpc, python3-grpcio and python3-protobuf (set MARKETDATA_TEST_PYTHON to require it)`);
  return true;
}
