import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { PublicGuard } from "../policy/admission.js";

// The API's documentation, offline: GET /openapi.json (gen/openapi.json, made
// by buf generate from the contract) and GET /docs, Swagger UI from the
// swagger-ui-dist package (no CDN), pointed at it. Its "Authorize" takes an
// API key and "Try it out" calls the /v1 routes of this same server. Neither
// needs a key (they describe the API, not its data), but both count against
// the caller's address limit. GET / redirects to /docs.

const OPENAPI = new URL("../../../gen/openapi.json", import.meta.url);
const UI_DIR = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
const UI_FILES: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Collection Market Data API</title>
<link rel="icon" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="docs"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/swagger-ui-standalone-preset.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

const INIT = `window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#docs",
  deepLinking: true,
  persistAuthorization: true,
  tryItOutEnabled: false,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: "BaseLayout",
});
`;

export function registerDocs(app: FastifyInstance, guard: PublicGuard): void {
  const spec = readFileSync(OPENAPI);
  // Read once at startup: a missing file fails the start, not a request.
  const files = new Map(Object.entries(UI_FILES).map(([name, type]) => [name, { type, body: readFileSync(join(UI_DIR, name)) }]));
  files.set("init.js", { type: "text/javascript; charset=utf-8", body: Buffer.from(INIT) });
  app.get("/openapi.json", { onRequest: guard }, (_request, reply) => reply.type("application/json; charset=utf-8").header("cache-control", "no-cache").send(spec));
  app.get("/docs", { onRequest: guard }, (_request, reply) => reply.type("text/html; charset=utf-8").send(PAGE));
  // A browser opening the server's address finds the documentation, not a JSON 404.
  app.get("/", { onRequest: guard }, (_request, reply) => reply.redirect("/docs", 302));
  app.get("/docs/:file", { onRequest: guard }, (request, reply) => {
    const file = files.get((request.params as { file: string }).file);
    if (file === undefined) return reply.code(404).send({ code: "not_found", message: "no such file" });
    return reply.type(file.type).header("cache-control", "public, max-age=3600").send(file.body);
  });
}
