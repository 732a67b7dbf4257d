import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { spawnCli, waitForOutput } from "./run-cli.js";

const dir = mkdtempSync(join(tmpdir(), "marketdata-start-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const db = join(dir, "data", "marketdata.sqlite");

async function startOnce(): Promise<{ output: string; key: string }> {
  const child = spawnCli(["start", "--port", "0", "--demo-scale", "small"], { MARKETDATA_DB: db });
  let output = "";
  child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
  try {
    await waitForOutput(child, /(\/v1\/collection\/scores\?|Issue an API key)[^\n]*\n/, 120_000);
    const [, key] = output.match(/Demo API key: (mdk_\S+)/) ?? [];
    const [, curl] = output.match(/curl -s '(http:\/\/127\.0\.0\.1:\d+\/v1\/collection\/scores\?contractAddress=0x[0-9a-f]{40})'/) ?? [];
    expect(key, output).toBeDefined();
    const res = await fetch(curl!, { headers: { "x-api-key": key! } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(1);
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
    const first = await startOnce();
    expect(first.output).toMatch(/building the demo store/);
    expect(first.output).toMatch(/imported sales from demo generator: \d+ rows read/);
    expect(first.output).toMatch(/curl -s '.*\/v1\/asset\/appraisals\?contractAddress=0x[0-9a-f]{40}&limit=3' -H "x-api-key: mdk_/);
    expect(existsSync(`${db}.demo-key`)).toBe(true);
    expect(statSync(`${db}.demo-key`).mode & 0o077).toBe(0);

    const second = await startOnce();
    expect(second.output).not.toMatch(/building the demo store/);
    expect(second.key).toBe(first.key);
  });
});
