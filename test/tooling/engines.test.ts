import { readFileSync } from "node:fs";
import semver from "semver";
import { describe, expect, it } from "vitest";

// The Node versions package.json promises are ones every installed package
// supports (issue 49, item 19: `npm ci` warned EBADENGINE for
// @nats-io/nuid 3, which wants Node 22, under "node": ">=20"): the lowest
// version the project's range allows satisfies each package's engines.node.

describe("package.json's engines", () => {
  it("promise no Node version a locked package refuses", () => {
    const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { engines: { node: string } };
    const lock = JSON.parse(readFileSync("package-lock.json", "utf8")) as { packages: Record<string, { engines?: { node?: string } | string[] }> };
    const lowest = semver.minVersion(pkg.engines.node)!.version;
    const refusing = Object.entries(lock.packages)
      .filter(([name, p]) => name !== "" && !Array.isArray(p.engines) && p.engines?.node !== undefined && !semver.satisfies(lowest, p.engines.node))
      .map(([name, p]) => `${name}: ${(p.engines as { node: string }).node}`);
    expect(refusing).toEqual([]);
  });
});
