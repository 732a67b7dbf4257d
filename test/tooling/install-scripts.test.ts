import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// What installing the service runs. Every production dependency with an
// install script has a reviewed verdict in package.json's allowScripts (npm
// 11 runs no other), and none reports to a third party: swagger-ui-dist's
// @scarf/scarf, whose postinstall sends install analytics, is denied there
// and switched off by its own setting for npm versions without allowScripts.
// A new production dependency with an install script fails here until
// someone reads the script and records the verdict below.

const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  dependencies: Record<string, string>;
  allowScripts: Record<string, boolean>;
  scarfSettings?: { enabled?: boolean };
};
const lock = JSON.parse(readFileSync(new URL("../../package-lock.json", import.meta.url), "utf8")) as {
  packages: Record<string, { dev?: boolean; hasInstallScript?: boolean }>;
};

/** Read and judged: what each script does. */
const REVIEWED: Record<string, { allowed: boolean; why: string }> = {
  "better-sqlite3": { allowed: true, why: "builds its native addon: prebuild-install fetches the package's own prebuilt binary, else node-gyp compiles; no analytics" },
  esbuild: { allowed: true, why: "checks that its platform binary (an npm package) is installed; no analytics" },
  "@scarf/scarf": { allowed: false, why: "reports the install to scarf.sh" },
  // Development dependencies: npm ci warns of any script without a verdict.
  "@bufbuild/buf": {
    allowed: false,
    why: "checks that its platform binary (the optional dependency @bufbuild/buf-linux-x64...) is installed, else runs npm install itself; npm installs that package, and the bin wrapper finds it",
  },
  protobufjs: { allowed: false, why: "warns when a dependent names it with another version scheme; nothing to build" },
};

const withScripts = (dev: boolean) =>
  Object.entries(lock.packages)
    .filter(([path, p]) => path.startsWith("node_modules/") && p.hasInstallScript && (p.dev ?? false) === dev)
    .map(([path]) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length));
const productionWithScripts = withScripts(false);

describe("install scripts of dependencies", () => {
  it("each has a reviewed verdict, recorded in allowScripts, development dependencies too (npm ci warns of none)", () => {
    for (const name of [...productionWithScripts, ...withScripts(true)]) {
      expect(REVIEWED[name], `${name} has an install script nobody reviewed`).toBeDefined();
      expect(pkg.allowScripts[name], `allowScripts.${name}`).toBe(REVIEWED[name]!.allowed);
    }
  });

  it("none that reports to a third party runs: scarf is denied and switched off", () => {
    expect(productionWithScripts).toContain("@scarf/scarf");
    expect(pkg.allowScripts["@scarf/scarf"]).toBe(false);
    expect(pkg.scarfSettings?.enabled).toBe(false);
  });

  it("type packages are development dependencies only", () => {
    expect(Object.keys(pkg.dependencies).filter((d) => d.startsWith("@types/"))).toEqual([]);
  });
});
