import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// The commands the docs show reach this machine only (issue 49, item 15: a
// pasted `webhooks create --url https://hooks.example.com/…` made the demo
// push to a public host): every URL in a shell block of the README and
// docs/ names 127.0.0.1, localhost or [::1].

const FILES = ["README.md", "packages/client/README.md", ...readdirSync("docs").filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
const LOCAL = new Set(["127.0.0.1", "localhost", "[::1]"]);

describe("the docs' shell commands", () => {
  it("name no host but a local one", () => {
    const elsewhere: string[] = [];
    for (const file of FILES) {
      const text = readFileSync(file, "utf8");
      for (const [, block] of text.matchAll(/```(?:sh|bash|shell)\n([\s\S]*?)```/g)) {
        for (const [url, host] of block!.matchAll(/\b(?:https?|postgres|postgresql|nats|redis):\/\/(?:[^@\s/"'`]*@)?(\[[^\]]+\]|[^/\s"'`:,?]+)/g)) {
          if (!LOCAL.has(host!)) elsewhere.push(`${file}: ${url}`);
        }
      }
    }
    expect(elsewhere).toEqual([]);
  });
});
