// The contract's generated code, from the repository's gen/ (which
// `npm run generate` writes and CI diffs): copied into src/gen before the
// build, so the package and the server compile the same files.
import { cpSync, rmSync } from "node:fs";

const from = new URL("../../gen/", import.meta.url);
const to = new URL("./src/gen/", import.meta.url);
rmSync(to, { recursive: true, force: true });
for (const dir of ["marketdata/v1", "google/api"]) cpSync(new URL(dir, from), new URL(dir, to), { recursive: true });
