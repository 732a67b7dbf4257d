import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { spawnCli, waitForOutput } from "./run-cli.js";
import { restRoutes, sseRoutes } from "../../src/transport/rest/http-rules.js";
import { SERVICES } from "../../src/service/services.js";

const dir = mkdtempSync(join(tmpdir(), "marketdata-start-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const db = join(dir, "data", "marketdata.sqlite");

/** Runs the shell lines `npm start` printed, as a user pastes them, and checks what each answers. */
function runPrintedLines(output: string): void {
  const lines = output.split("\n").filter((l) => l.startsWith("  ")).map((l) => l.trim());
  const exportLine = lines.find((l) => l.startsWith("export URL="))!;
  expect(exportLine, output).toBeDefined();
  const reads = lines.filter((l) => l.startsWith("curl -s \"$URL/v1/") && !l.includes("/stream?"));
  const streams = lines.filter((l) => l.startsWith("curl -sN "));
  const ingest = lines.filter((l) => l.startsWith("export INGEST_KEY=") || l.startsWith("echo '"));
  // Every GET rule of the contract has its line.
  const paths = (ls: string[]) => ls.map((l) => /\$URL(\/v1\/[^?]+)\?/.exec(l)![1]);
  expect(paths(reads).sort()).toEqual(restRoutes(SERVICES).map((r) => r.path).sort());
  expect(paths(streams).sort()).toEqual(sseRoutes(SERVICES).map((r) => r.path).sort());
  expect(ingest).toHaveLength(2);
  const run = (script: string) => execFileSync("bash", ["-c", `set -e\n${exportLine}\n${script}`], { encoding: "utf8", timeout: 60_000 });
  for (const line of reads) {
    const body = JSON.parse(run(line)) as Record<string, unknown>;
    expect(body.successful ?? body.success, line).toBe(1);
  }
  for (const line of streams) expect(run(`timeout 2 ${line} || true`), line).toMatch(/^retry: \d+\n: position\nid: \S+/);
  const written = JSON.parse(run(ingest.join("\n"))) as Record<string, unknown>;
  expect(written).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
  // The printed sale is its token's owner selling at the next block: the token is the buyer's now.
  const sale = JSON.parse(/echo '(.*)' \|/.exec(ingest[1]!)![1]!) as { from: string; to: string; block: number };
  const token = JSON.parse(run(`curl -s "$URL/v1/asset/tokens?contractAddress=$C&assetId=1" -H "x-api-key: $KEY"`)) as { data: { owner: string }[] };
  expect([sale.block > 1, sale.from !== sale.to, token.data[0]?.owner]).toEqual([true, true, sale.to]);
}

async function startOnce(check = false): Promise<{ output: string; key: string }> {
  const child = spawnCli(["start", "--port", "0", "--demo-scale", "small"], { MARKETDATA_DB: db });
  let output = "";
  child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
  try {
    await waitForOutput(child, /(--data-binary @-|Issue an API key)[^\n]*\n/, 120_000);
    const [, key] = output.match(/Demo API key: (mdk_\S+)/) ?? [];
    expect(key, output).toBeDefined();
    if (check) runPrintedLines(output);
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    return { output, key: key! };
  } finally {
    child.kill("SIGKILL");
  }
}

describe("marketdata start (npm start)", () => {
  it("builds the demo store and a key on the first run, with progress; later runs reuse both", { timeout: 240_000 }, async () => {
    const first = await startOnce(true);
    expect(first.output).toMatch(/building the demo store/);
    expect(first.output).toMatch(/imported sales from demo generator: \d+ rows read/);
    expect(first.output).toMatch(/export URL=http:\/\/127\.0\.0\.1:\d+ KEY=mdk_\S+ C=0x[0-9a-f]{40}\n/);
    expect(existsSync(`${db}.demo-key`)).toBe(true);
    expect(statSync(`${db}.demo-key`).mode & 0o077).toBe(0);

    const second = await startOnce();
    expect(second.output).not.toMatch(/building the demo store/);
    expect(second.key).toBe(first.key);
  });
});
