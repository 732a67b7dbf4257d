import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The layer rules of .dependency-cruiser.cjs (npm run lint:deps in CI) catch
// what they say they catch: a fixture tree with one deliberate violation of
// each kind fails them (the same command and config CI runs, from the
// fixture's folder), and the real tree has none.

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FIXTURE = fileURLToPath(new URL("./fixtures/layers", import.meta.url));
const DEPCRUISE = `${ROOT}node_modules/.bin/depcruise`;

function violations(cwd: string, extra: string[] = []): string[] {
  // The folders npm run lint:deps names, those the tree holds.
  const folders = ["src", "bench", "tools", "packages/client/src"].filter((f) => existsSync(`${cwd}/${f}`));
  let out: string;
  try {
    out = execFileSync(DEPCRUISE, [...folders, "--config", `${ROOT}.dependency-cruiser.cjs`, "--output-type", "json", ...extra], {
      cwd,
      encoding: "utf8",
      // The JSON lists every module of the tree: several megabytes.
      maxBuffer: 256 * 1024 * 1024,
      stdio: ["ignore", "pipe", "ignore"],
    });
  } catch (err) {
    // Exit status 1 when there are violations: the JSON is still on stdout.
    out = (err as { stdout: string }).stdout;
  }
  const result = JSON.parse(out) as { summary: { violations: { rule: { name: string; severity: string }; from: string; to: string }[] } };
  return result.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
}

describe("dependency rules", () => {
  it("fail a tree with a deliberate violation of each kind", () => {
    const found = violations(FIXTURE);
    expect(found).toEqual(
      expect.arrayContaining([
        "store-is-the-bottom: src/store/leak.ts -> src/transport/entry.ts",
        "engines-see-only-ports: src/store/sqlite/reach.ts -> src/store/postgres/pool.ts",
        expect.stringMatching(/^engines-stay-in-the-store: src\/service\/engine\.ts -> .*node_modules\/pg\//),
        expect.stringMatching(/^no-cycles: src\/service\/p[io]ng\.ts -> src\/service\/p[io]ng\.ts$/),
        "client-package-ships-alone: packages/client/src/leak.ts -> src/transport/entry.ts",
        "the-lab-is-on-top: src/service/lab.ts -> bench/harness.ts",
        "config-is-a-leaf: src/config/reach.ts -> src/service/ping.ts",
        "the-domain-is-the-floor: src/domain/kinds/reach.ts -> src/service/ping.ts",
        "transport-layers-flow-down: src/transport/policy/up.ts -> src/transport/entry.ts",
        "services-composed-on-top: src/service/webhooks/runtime.ts -> src/service/services.ts",
        "composition-roots-open-the-store: src/service/opener.ts -> src/store/open.ts",
      ]),
    );
  });

  it("pass the real tree", () => {
    expect(violations(ROOT)).toEqual([]);
  });
});
