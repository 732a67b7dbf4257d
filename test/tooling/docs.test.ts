import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The README is the front door: short enough to read in five minutes, and
// every link from it or from docs/ leads somewhere.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const pages = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

/** Relative link targets of a markdown page (external links and pure anchors excluded). */
function relativeLinks(text: string): string[] {
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^(https?:|mailto:|#)/.test(t));
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens. */
function headingSlugs(text: string): Set<string> {
  return new Set(
    [...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, "")
        .replace(/\s/g, "-"),
    ),
  );
}

describe("documentation", () => {
  it("the README is at most 250 lines", () => {
    expect(readFileSync(join(ROOT, "README.md"), "utf8").split("\n").length).toBeLessThanOrEqual(250);
  });

  it.each(pages)("every relative link of %s resolves", (page) => {
    const links = relativeLinks(readFileSync(join(ROOT, page), "utf8"));
    const broken = links.filter((l) => !existsSync(resolve(dirname(join(ROOT, page)), l.split("#")[0]!)));
    expect(broken).toEqual([]);
  });

  it.each(pages)("every #anchor a link of %s names is a heading of its page", (page) => {
    const text = readFileSync(join(ROOT, page), "utf8");
    const links = [...text.matchAll(/\]\(([^)\s]*#[^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^(https?:|mailto:)/.test(t));
    const missing = links.filter((l) => {
      const [file, anchor] = l.split("#") as [string, string];
      const target = file === "" ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), file);
      return !headingSlugs(readFileSync(target, "utf8")).has(anchor);
    });
    expect(missing).toEqual([]);
  });

  it("the README links every page of docs/", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    for (const page of pages.filter((p) => p.startsWith("docs/"))) expect(readme, page).toContain(`](${page})`);
  });
});
