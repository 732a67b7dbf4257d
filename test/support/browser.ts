import { existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { type Browser, chromium } from "playwright-core";

// Debian's Chromium driven by playwright-core (never a downloaded browser).
// Tests that need it skip with a visible message when it is absent (a fresh
// clone without the package); CI installs it (.ci/run) and sets
// MARKETDATA_TEST_BROWSER, which makes it required.

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const browserAvailable = existsSync(CHROMIUM);
if (!browserAvailable && !process.env.MARKETDATA_TEST_BROWSER) {
  console.warn(`SKIPPED: browser tests: no Chromium at ${CHROMIUM} (apt-get install chromium; set MARKETDATA_TEST_BROWSER to require it)`);
}
export const skipBrowser = !browserAvailable && !process.env.MARKETDATA_TEST_BROWSER;

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

/** A static site on its own loopback port (another origin than the service). */
export async function serveStatic(files: Record<string, { type: string; body: string | Buffer }>): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const file = files[new URL(req.url ?? "/", "http://x").pathname];
    if (file === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": file.type }).end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** `app` (a module's source, its imports resolved from the repository) bundled by esbuild for a browser, minified. */
export async function bundleForBrowser(app: string): Promise<string> {
  const bundle = await build({
    stdin: { contents: app, resolveDir: ROOT, loader: "js" },
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    write: false,
    logLevel: "silent",
  });
  return bundle.outputFiles[0]!.text;
}

/** A page on its own origin that runs `script` as a module. */
export function servePage(title: string, script: string): Promise<{ url: string; close(): Promise<void> }> {
  return serveStatic({
    "/": { type: "text/html", body: `<!doctype html><title>${title}</title><script type="module" src="/app.js"></script>` },
    "/app.js": { type: "text/javascript", body: script },
  });
}
