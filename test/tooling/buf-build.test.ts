import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// User tooling pointed at the repository (buf build, buf curl --schema .,
// editors) reads the whole workspace: it must compile, with only the
// google/api files the contract needs from the npm package.

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BUF = fileURLToPath(new URL("../../node_modules/.bin/buf", import.meta.url));

function buf(args: string[]) {
  return spawnSync(BUF, args, { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
}

describe("buf at the repository root", () => {
  it("buf build compiles the workspace", () => {
    const r = buf(["build", "-o", "-#format=json"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const files = (JSON.parse(r.stdout) as { file: { name: string }[] }).file.map((f) => f.name);
    expect(files).toContain("marketdata/v1/collection_service.proto");
    expect(files).toContain("google/api/annotations.proto");
    expect(files.some((f) => f.includes("sample_messages_edition") || f.includes("ruby_generated_code"))).toBe(false);
  });

  it("buf curl --schema . knows every service", () => {
    const r = buf(["curl", "--schema", ".", "--list-methods"]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("marketdata.v1.CollectionService/GetCollectionStats");
    expect(r.stdout).toContain("marketdata.v1.AssetService/ListSales");
  });
});
